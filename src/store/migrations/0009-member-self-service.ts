/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * D24: a member sees where they are signed in and ends one session by a public id (never the
 * cookie or its hash), and changes their email through a link bound to the new address.
 * Sessions written before this get the first 32 hex characters of their id hash as public id: a
 * hash of a hash, which opens nothing, and `last_seen_at` = `created_at`.
 */
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("sessions").addColumn("public_id", "varchar(32)").execute();
  await db.schema.alterTable("sessions").addColumn("last_seen_at", "bigint").execute();
  await db.schema.alterTable("sessions").addColumn("ip", "varchar(64)").execute();
  await db.schema.alterTable("sessions").addColumn("user_agent", "varchar(512)").execute();
  await db.schema.alterTable("sessions").addColumn("country", "varchar(8)").execute();
  await db.updateTable("sessions").set({ public_id: sql`substr(id_hash, 1, 32)`, last_seen_at: sql`created_at` }).execute();
  await db.schema.alterTable("one_time_tokens").addColumn("new_email", "varchar(254)").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("one_time_tokens").dropColumn("new_email").execute();
  for (const column of ["country", "user_agent", "ip", "last_seen_at", "public_id"]) {
    await db.schema.alterTable("sessions").dropColumn(column).execute();
  }
}
