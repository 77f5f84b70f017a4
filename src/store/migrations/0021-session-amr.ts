/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * decisions.md#authentication-methods. `sessions.amr`: how the member proved who they are when the
 * session was opened, as a JSON array of RFC 8176 values (`pwd`, `otp`, `hwk`, `mfa`, `fed`…), for
 * the `amr` claim of ID tokens and session tokens. Sessions opened before this migration are known
 * only when a passkey opened them (`by_passkey`: `["hwk", "mfa"]`); the others get an empty list, never a guess.
 */
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("sessions")
    .addColumn("amr", "varchar(128)", (c) => c.notNull().defaultTo("[]"))
    .execute();
  await sql`update sessions set amr = '["hwk","mfa"]' where by_passkey = 1`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("sessions").dropColumn("amr").execute();
}
