/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#webhook-secret-rotation: a rotated webhook secret is kept, sealed like the current one, until
 * `webhook_previous_secret_expires_at` (Unix ms), and deliveries are signed with both until then. One
 * previous secret at most; both null when there is none (every tenant before this migration).
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("tenants").addColumn("webhook_previous_secret_enc", "text").execute();
  await db.schema.alterTable("tenants").addColumn("webhook_previous_secret_expires_at", "bigint").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("tenants").dropColumn("webhook_previous_secret_expires_at").execute();
  await db.schema.alterTable("tenants").dropColumn("webhook_previous_secret_enc").execute();
}
