/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d26 passkeys. `passkeys` holds each member's WebAuthn credentials: the credential id the
 * authenticator names it by (unique per tenant, which is the RP ID), the COSE public key, the sign
 * counter and backup flags, and the member's own name for it; `id` is ours, random, for the API.
 * `passkey_challenges` holds the one-use challenges (SHA-256 only) of the ceremonies in flight:
 * a registration's is bound to its member, a login's to no one (member_id 0) until it is answered.
 * `sessions.by_passkey` marks a session a passkey opened: it satisfies the tenant's require2FA.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("passkeys")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id", "varchar(32)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("credential_id", "varchar(1400)", (c) => c.notNull())
    .addColumn("public_key", "text", (c) => c.notNull())
    .addColumn("counter", "bigint", (c) => c.notNull())
    .addColumn("backup_eligible", "integer", (c) => c.notNull())
    .addColumn("backed_up", "integer", (c) => c.notNull())
    .addColumn("transports", "varchar(200)", (c) => c.notNull())
    .addColumn("name", "varchar(100)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .addPrimaryKeyConstraint("passkeys_pk", ["tenant_id", "id"])
    .execute();
  await db.schema.createIndex("passkeys_credential").unique().on("passkeys").columns(["tenant_id", "credential_id"]).execute();
  await db.schema.createIndex("passkeys_member").on("passkeys").columns(["tenant_id", "member_id"]).execute();
  await db.schema
    .createTable("passkey_challenges")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("challenge_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("purpose", "varchar(16)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("passkey_challenges_pk", ["tenant_id", "challenge_hash"])
    .execute();
  await db.schema.createIndex("passkey_challenges_expires").on("passkey_challenges").column("expires_at").execute();
  await db.schema
    .alterTable("sessions")
    .addColumn("by_passkey", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("sessions").dropColumn("by_passkey").execute();
  await db.schema.dropTable("passkey_challenges").execute();
  await db.schema.dropTable("passkeys").execute();
}
