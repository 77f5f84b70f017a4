/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/** Where each member has logged in from (contract.md#d16): countries and networks, for anomaly detection. */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("login_origins")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("kind", "varchar(16)", (c) => c.notNull())
    .addColumn("value", "varchar(64)", (c) => c.notNull())
    .addColumn("first_seen", "bigint", (c) => c.notNull())
    .addColumn("last_seen", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("login_origins_pk", ["tenant_id", "member_id", "kind", "value"])
    .execute();
  await db.schema.createIndex("login_origins_last_seen").on("login_origins").column("last_seen").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("login_origins").execute();
}
