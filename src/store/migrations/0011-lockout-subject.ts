/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d25: lockout rows key an email by a keyed hash, never in clear. The column says so. Rows written
 * before hold the email itself; the server re-keys them at its next start (LimitStore.rekeyClearLockouts, from server.ts), since
 * the key comes from SECRETS_KEY, which migrations don't have.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("login_lockouts").renameColumn("email", "subject").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("login_lockouts").renameColumn("subject", "email").execute();
}
