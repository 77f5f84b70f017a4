/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#openid-provider-storage: oidc-provider's state in Latch's store. Every id is kept
 * as its SHA-256 only (codes, refresh tokens and the provider's session cookie are bearer secrets).
 * `oauth_grants`: the Grant, bound to the Latch session it was given under; deleting that session
 * (logout, lock, "this wasn't me", password change, erasure, the expiry sweep) deletes the grant by
 * ON DELETE CASCADE (SQLite runs with `foreign_keys = ON`, dialects.ts). `oauth_artifacts`: every
 * other model (codes, refresh tokens, interactions, the provider's sessions …) keyed by tenant +
 * model + SHA-256 of the id; those of a grant cascade from it, so revoking a grant is one delete.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("oauth_grants")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("client_id", "varchar(255)", (c) => c.notNull())
    .addColumn("account_id", "varchar(255)", (c) => c.notNull())
    .addColumn("member_id", "bigint")
    .addColumn("session_id_hash", "varchar(64)")
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("payload", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("oauth_grants_pk", ["tenant_id", "id_hash"])
    .addForeignKeyConstraint("oauth_grants_session_fk", ["tenant_id", "session_id_hash"], "sessions", ["tenant_id", "id_hash"], (fk) => fk.onDelete("cascade"))
    .execute();
  await db.schema.createIndex("oauth_grants_session").on("oauth_grants").columns(["tenant_id", "session_id_hash", "client_id"]).execute();
  await db.schema.createIndex("oauth_grants_member").on("oauth_grants").columns(["tenant_id", "member_id"]).execute();
  await db.schema.createIndex("oauth_grants_expires").on("oauth_grants").column("expires_at").execute();
  await db.schema
    .createTable("oauth_artifacts")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("model", "varchar(48)", (c) => c.notNull())
    .addColumn("id_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("grant_hash", "varchar(64)")
    .addColumn("uid", "varchar(255)")
    .addColumn("user_code_hash", "varchar(64)")
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addColumn("consumed_at", "bigint")
    .addColumn("payload", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("oauth_artifacts_pk", ["tenant_id", "model", "id_hash"])
    .addForeignKeyConstraint("oauth_artifacts_grant_fk", ["tenant_id", "grant_hash"], "oauth_grants", ["tenant_id", "id_hash"], (fk) => fk.onDelete("cascade"))
    .execute();
  await db.schema.createIndex("oauth_artifacts_grant").on("oauth_artifacts").columns(["tenant_id", "grant_hash"]).execute();
  await db.schema.createIndex("oauth_artifacts_uid").on("oauth_artifacts").columns(["tenant_id", "model", "uid"]).execute();
  await db.schema.createIndex("oauth_artifacts_user_code").on("oauth_artifacts").columns(["tenant_id", "model", "user_code_hash"]).execute();
  await db.schema.createIndex("oauth_artifacts_expires").on("oauth_artifacts").column("expires_at").execute();
}
