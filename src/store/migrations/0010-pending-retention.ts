/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d25: a pending account is erased once every link it was sent has been expired for
 * PENDING_RETENTION_DAYS. `pending_until` is the latest expiry of a verification link issued to it
 * (links are swept as soon as they expire, so they can't be asked afterwards); accounts pending
 * before this migration count from their creation.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").addColumn("pending_until", "bigint").execute();
  await db.schema.createIndex("members_status_pending_until").on("members").columns(["status", "pending_until"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("members_status_pending_until").execute();
  await db.schema.alterTable("members").dropColumn("pending_until").execute();
}
