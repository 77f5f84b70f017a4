/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#openid-provider-signing-keys. `oidc_signing_keys`: each tenant's keys for signing ID
 * and access tokens, ES256 and RS256. The private JWK is sealed under SECRETS_KEY as the webhook
 * secret is; the public JWK is stored as JSON for the JWKS. A key is current while `retired_at` is
 * null; a rotation retires it and sets `expires_at`, the time the last token it signed has expired,
 * after which it leaves the JWKS and the sweeper deletes it.
 */
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("oidc_signing_keys")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("kid", "varchar(64)", (c) => c.notNull())
    .addColumn("alg", "varchar(8)", (c) => c.notNull())
    .addColumn("private_jwk_enc", "text", (c) => c.notNull())
    .addColumn("public_jwk", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("retired_at", "bigint")
    .addColumn("expires_at", "bigint")
    .addPrimaryKeyConstraint("oidc_signing_keys_pk", ["tenant_id", "kid"])
    .execute();
  // One current key per tenant and algorithm, whatever number of instances make one at once: the
  // loser's conditional insert does nothing and it reads the winner's key (same syntax on both databases).
  await sql`create unique index oidc_signing_keys_current on oidc_signing_keys (tenant_id, alg) where retired_at is null`.execute(db);
  await db.schema.createIndex("oidc_signing_keys_expires").on("oidc_signing_keys").column("expires_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("oidc_signing_keys").execute();
}
