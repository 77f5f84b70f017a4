/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d22: the tenant admin lists members newest first (cursor on created_at, id), sees when each
 * last logged in, and erases one with everything keyed to it, deliveries still waiting included
 * (`webhook_deliveries.member_id`; null for rows written before, which are wiped within a day).
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").addColumn("last_login_at", "bigint").execute();
  await db.schema.createIndex("members_tenant_created").on("members").columns(["tenant_id", "created_at", "id"]).execute();
  await db.schema.alterTable("webhook_deliveries").addColumn("member_id", "bigint").execute();
  await db.schema.createIndex("webhook_deliveries_member").on("webhook_deliveries").columns(["tenant_id", "member_id"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex("webhook_deliveries_member").execute();
  await db.schema.alterTable("webhook_deliveries").dropColumn("member_id").execute();
  await db.schema.dropIndex("members_tenant_created").execute();
  await db.schema.alterTable("members").dropColumn("last_login_at").execute();
}
