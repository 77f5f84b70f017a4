/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d24: a member sees where they are signed in and ends one session by a public id (never the
 * cookie or its hash), and changes their email through a link bound to the new address.
 * Sessions written before this get a random public id (never derived from the cookie or its hash)
 * and `last_seen_at` = `created_at`. `members.two_factor_enabled_at` tells "this wasn't me" whether
 * the second factor was turned on after the alert (null: before this migration, so before any alert).
 */
import { sql, type Kysely } from "kysely";
import { isPostgres } from "../dialects.js";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("sessions").addColumn("public_id", "varchar(32)").execute();
  await db.schema.alterTable("sessions").addColumn("last_seen_at", "bigint").execute();
  await db.schema.alterTable("sessions").addColumn("ip", "varchar(64)").execute();
  await db.schema.alterTable("sessions").addColumn("user_agent", "varchar(512)").execute();
  await db.schema.alterTable("sessions").addColumn("country", "varchar(8)").execute();
  const randomId = isPostgres(db) ? sql`replace(gen_random_uuid()::text, '-', '')` : sql`lower(hex(randomblob(16)))`;
  await db
    .updateTable("sessions")
    .set({ public_id: randomId, last_seen_at: sql`created_at` })
    .execute();
  await db.schema.alterTable("one_time_tokens").addColumn("new_email", "varchar(254)").execute();
  await db.schema.alterTable("members").addColumn("two_factor_enabled_at", "bigint").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").dropColumn("two_factor_enabled_at").execute();
  await db.schema.alterTable("one_time_tokens").dropColumn("new_email").execute();
  for (const column of ["country", "user_agent", "ip", "last_seen_at", "public_id"]) {
    await db.schema.alterTable("sessions").dropColumn(column).execute();
  }
}
