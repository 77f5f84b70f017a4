/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * Distinct members seen per key in a window (e.g. the IPs asking for one email), for the contract.md#spec-8-2
 * rows that count IPs rather than requests. Frozen in time, like every migration.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("rate_limit_sets")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("key", "varchar(400)", (c) => c.notNull())
    .addColumn("member", "varchar(64)", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("rate_limit_sets_pk", ["tenant_id", "key", "member"])
    .execute();
  await db.schema.createIndex("rate_limit_sets_expiry").on("rate_limit_sets").column("expires_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("rate_limit_sets").execute();
}
