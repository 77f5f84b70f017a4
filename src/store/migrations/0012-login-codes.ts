/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d26: a magic link's email carries a 6-digit code too. It lives on the link's row (same lifetime,
 * used up with it): `code_hash` is a keyed hash of the code bound to the link's token hash.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("one_time_tokens").addColumn("code_hash", "text").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("one_time_tokens").dropColumn("code_hash").execute();
}
