/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * D30: turning on 2FA re-authenticates. A member may re-authenticate when enrolment starts
 * (`/auth/2fa/setup`) instead of when it ends (`/auth/2fa/enable`); the pending secret then
 * remembers which session did, by the SHA-256 of its id, so only that session can finish the
 * enrolment without re-authenticating again. Null: nobody re-authenticated for it.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").addColumn("totp_pending_session_hash", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").dropColumn("totp_pending_session_hash").execute();
}
