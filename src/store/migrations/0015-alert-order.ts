/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d30: "this wasn't me" links and 2FA enrolments are ordered by a per-member counter bumped under
 * the member's row lock, not by the clock: a time read before a request waited for the lock (or on
 * another instance's clock) could put a link issued after an email change before it. Each alert's
 * link gets the next `members.security_seq` (`one_time_tokens.seq`), and so does an enrolment
 * (`members.two_factor_enabled_seq`). Rows from before keep null and are ordered by time, as then.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("members")
    .addColumn("security_seq", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable("members").addColumn("two_factor_enabled_seq", "bigint").execute();
  await db.schema.alterTable("one_time_tokens").addColumn("seq", "bigint").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("one_time_tokens").dropColumn("seq").execute();
  await db.schema.alterTable("members").dropColumn("two_factor_enabled_seq").execute();
  await db.schema.alterTable("members").dropColumn("security_seq").execute();
}
