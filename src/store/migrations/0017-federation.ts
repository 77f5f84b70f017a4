/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#federated-sign-in. `connections`: a tenant's upstream identity providers, the client
 * secret sealed under SECRETS_KEY as the webhook secret is. `federated_identities`: who a
 * `(connection, subject)` is in this tenant (one member each), with `linked_seq`, the member's
 * `security_seq` when it was linked, so "this wasn't me" can undo links made after its alert.
 * `federation_flows`: a sign-in or link started and not yet called back, keyed by the SHA-256 of
 * the `latch_fed` cookie (state, nonce and PKCE verifier are derived from the cookie, never stored);
 * a `link` flow also keeps the SHA-256 of the session that started it, which must finish it.
 * `federation_pending`: after the callback, what waits for one more step in the same browser (the
 * proof of an existing account before a link, or the second factor), keyed by its cookie's SHA-256.
 * `members.has_federated_auth`: the member has signed in through a connection (`Federated` in
 * `authentication_type`), as `has_magic_link_auth` records the first magic-link login.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("members")
    .addColumn("has_federated_auth", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable("connections")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id", "varchar(32)", (c) => c.notNull())
    .addColumn("type", "varchar(16)", (c) => c.notNull())
    .addColumn("display_name", "varchar(100)", (c) => c.notNull())
    .addColumn("issuer", "varchar(2048)")
    .addColumn("client_id", "varchar(512)", (c) => c.notNull())
    .addColumn("client_secret_enc", "text", (c) => c.notNull())
    .addColumn("scopes", "varchar(1024)", (c) => c.notNull())
    .addColumn("allow_signup", "integer", (c) => c.notNull())
    .addColumn("email_domains", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("connections_pk", ["tenant_id", "id"])
    .execute();
  await db.schema
    .createTable("federated_identities")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id", "varchar(32)", (c) => c.notNull())
    .addColumn("connection_id", "varchar(32)", (c) => c.notNull())
    .addColumn("subject", "varchar(255)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("email", "varchar(320)")
    .addColumn("linked_seq", "bigint")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("last_used_at", "bigint")
    .addPrimaryKeyConstraint("federated_identities_pk", ["tenant_id", "id"])
    .execute();
  await db.schema.createIndex("federated_identities_subject").unique().on("federated_identities").columns(["tenant_id", "connection_id", "subject"]).execute();
  await db.schema.createIndex("federated_identities_member").on("federated_identities").columns(["tenant_id", "member_id"]).execute();
  await db.schema
    .createTable("federation_flows")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("flow_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("connection_id", "varchar(32)", (c) => c.notNull())
    .addColumn("purpose", "varchar(16)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("session_hash", "varchar(64)")
    .addColumn("return_to", "varchar(2048)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("federation_flows_pk", ["tenant_id", "flow_hash"])
    .execute();
  await db.schema.createIndex("federation_flows_expires").on("federation_flows").column("expires_at").execute();
  await db.schema
    .createTable("federation_pending")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("pending_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("kind", "varchar(16)", (c) => c.notNull())
    .addColumn("connection_id", "varchar(32)", (c) => c.notNull())
    .addColumn("subject", "varchar(255)", (c) => c.notNull())
    .addColumn("email", "varchar(320)")
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("return_to", "varchar(2048)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("federation_pending_pk", ["tenant_id", "pending_hash"])
    .execute();
  await db.schema.createIndex("federation_pending_expires").on("federation_pending").column("expires_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("federation_pending").execute();
  await db.schema.dropTable("federation_flows").execute();
  await db.schema.dropTable("federated_identities").execute();
  await db.schema.dropTable("connections").execute();
  await db.schema.alterTable("members").dropColumn("has_federated_auth").execute();
}
