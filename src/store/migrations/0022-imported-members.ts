/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#importing-members. `imported_hash_params`: a Firebase project's scrypt parameters that
 * imported `firebase-scrypt` hashes need at login; the signer key is a secret, so the whole JSON is
 * sealed under SECRETS_KEY (`params_sealed`). The id is a keyed fingerprint of the parameters, so
 * importing one project twice keeps one row. `members.external_id`: the member's id in the system
 * it was imported from, for the tenant's own mapping (null for members Latch made).
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("imported_hash_params")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id", "varchar(64)", (c) => c.notNull())
    .addColumn("params_sealed", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("imported_hash_params_pk", ["tenant_id", "id"])
    .execute();
  await db.schema.alterTable("members").addColumn("external_id", "varchar(255)").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").dropColumn("external_id").execute();
  await db.schema.dropTable("imported_hash_params").execute();
}
