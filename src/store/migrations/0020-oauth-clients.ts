/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#openid-provider-clients. `oauth_clients`: the applications a tenant lets sign its
 * members in through its OpenID Provider. `client_id` is random and public; a confidential client's
 * secret is kept only as its SHA-256 (`secret_hash`, a 256-bit random value needs no slow hash),
 * null for a public client. Redirect URIs are JSON arrays, matched exactly.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("oauth_clients")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("client_id", "varchar(64)", (c) => c.notNull())
    .addColumn("name", "varchar(100)", (c) => c.notNull())
    .addColumn("type", "varchar(16)", (c) => c.notNull())
    .addColumn("first_party", "integer", (c) => c.notNull())
    .addColumn("redirect_uris", "text", (c) => c.notNull())
    .addColumn("post_logout_redirect_uris", "text", (c) => c.notNull())
    .addColumn("secret_hash", "varchar(64)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("oauth_clients_pk", ["tenant_id", "client_id"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("oauth_clients").execute();
}
