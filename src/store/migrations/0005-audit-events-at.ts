/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/** Audit events are swept by age (AUDIT_RETENTION_DAYS): an index on `at` keeps that a range delete. */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex("audit_events_at").on("audit_events").column("at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("audit_events_at").execute();
}
