/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d30: turning on 2FA re-authenticates. A pending enrolment belongs to the session that started it
 * (`totp_pending_session_hash`, the SHA-256 of its id): only that session sees its secret again or
 * finishes it. `totp_pending_reauthenticated` says whether that session re-authenticated when it
 * started it (`/auth/2fa/setup` with the password), so that enable needs only the code.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").addColumn("totp_pending_session_hash", "text").execute();
  await db.schema
    .alterTable("members")
    .addColumn("totp_pending_reauthenticated", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").dropColumn("totp_pending_reauthenticated").execute();
  await db.schema.alterTable("members").dropColumn("totp_pending_session_hash").execute();
}
