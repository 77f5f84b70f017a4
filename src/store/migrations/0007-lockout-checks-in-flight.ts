/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d20: a password check in progress holds a place in the lockout budget (`in_flight`) instead of
 * being written down as a failure before the hash; a correct password is then never counted as a
 * failure, whatever the concurrency. Checks a dead process never finished count as failures once
 * `in_flight_until` has passed.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("login_lockouts")
    .addColumn("in_flight", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("login_lockouts")
    .addColumn("in_flight_until", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("login_lockouts").dropColumn("in_flight_until").execute();
  await db.schema.alterTable("login_lockouts").dropColumn("in_flight").execute();
}
