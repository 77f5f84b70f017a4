/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * Second factor (contract.md#d14): the TOTP secret (sealed), a pending one during enrolment, the last accepted
 * time step (replay), the second factor's own failure counter, and hashed recovery codes.
 * One ADD COLUMN per statement: SQLite accepts no more.
 */
import type { Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("members").addColumn("totp_secret_enc", "text").execute();
  await db.schema.alterTable("members").addColumn("totp_pending_secret_enc", "text").execute();
  await db.schema
    .alterTable("members")
    .addColumn("totp_last_step", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("members")
    .addColumn("two_factor_failures", "integer", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("members")
    .addColumn("two_factor_locked_until", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable("recovery_codes")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("code_hash", "varchar(64)", (c) => c.notNull())
    .addPrimaryKeyConstraint("recovery_codes_pk", ["tenant_id", "member_id", "code_hash"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("recovery_codes").execute();
  for (const column of ["two_factor_locked_until", "two_factor_failures", "totp_last_step", "totp_pending_secret_enc", "totp_secret_enc"]) {
    await db.schema.alterTable("members").dropColumn(column).execute();
  }
}
