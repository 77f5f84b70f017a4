/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * Frozen in time: written against Kysely<any> so later schema changes never alter it.
 * Integer columns that hold milliseconds or record ids are 'bigint' (64-bit on both dialects).
 */
import type { Kysely } from "kysely";
import { isPostgres } from "../dialects.js";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("applications")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("api_key_hash", "varchar(64)", (c) => c.notNull().unique())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("tenants")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("domain", "varchar(253)", (c) => c.notNull().unique())
    .addColumn("application_id", "varchar(64)", (c) => c.notNull().references("applications.id"))
    .addColumn("settings", "text", (c) => c.notNull())
    .addColumn("webhook_secret_enc", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("members")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull().references("tenants.id"))
    .addColumn("id", "bigint", (c) => c.notNull())
    .addColumn("email", "varchar(254)", (c) => c.notNull())
    .addColumn("name", "varchar(100)", (c) => c.notNull())
    .addColumn("status", "varchar(32)", (c) => c.notNull())
    .addColumn("has_password_auth", "integer", (c) => c.notNull())
    .addColumn("has_magic_link_auth", "integer", (c) => c.notNull())
    .addColumn("password_hash", "text")
    .addColumn("password_salt", "text")
    .addColumn("email_verified", "integer", (c) => c.notNull())
    .addColumn("two_factor_status", "varchar(16)", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("members_pk", ["tenant_id", "id"])
    .addUniqueConstraint("members_tenant_email_unique", ["tenant_id", "email"])
    .execute();

  await db.schema
    .createTable("sessions")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("sessions_pk", ["tenant_id", "id_hash"])
    .execute();
  await db.schema.createIndex("sessions_member").on("sessions").columns(["tenant_id", "member_id"]).execute();
  await db.schema.createIndex("sessions_expiry").on("sessions").column("expires_at").execute();

  await db.schema
    .createTable("one_time_tokens")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("token_hash", "varchar(64)", (c) => c.notNull())
    .addColumn("kind", "varchar(32)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("one_time_tokens_pk", ["tenant_id", "token_hash"])
    .execute();
  await db.schema.createIndex("one_time_tokens_member").on("one_time_tokens").columns(["tenant_id", "member_id", "kind"]).execute();
  await db.schema.createIndex("one_time_tokens_expiry").on("one_time_tokens").column("expires_at").execute();

  await db.schema
    .createTable("login_lockouts")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("email", "varchar(254)", (c) => c.notNull())
    .addColumn("failures", "integer", (c) => c.notNull())
    .addColumn("level", "integer", (c) => c.notNull())
    .addColumn("locked_until", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("login_lockouts_pk", ["tenant_id", "email"])
    .execute();

  await db.schema
    .createTable("rate_limit_counters")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("key", "varchar(400)", (c) => c.notNull())
    .addColumn("window_start", "bigint", (c) => c.notNull())
    .addColumn("count", "integer", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("rate_limit_counters_pk", ["tenant_id", "key"])
    .execute();
  await db.schema.createIndex("rate_limit_counters_expiry").on("rate_limit_counters").column("expires_at").execute();

  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("event_type", "varchar(32)", (c) => c.notNull())
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("payload_enc", "text")
    .addColumn("status", "varchar(16)", (c) => c.notNull())
    .addColumn("attempts", "integer", (c) => c.notNull())
    .addColumn("next_attempt_at", "bigint", (c) => c.notNull())
    .addColumn("claimed_until", "bigint", (c) => c.notNull())
    .addColumn("last_error", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("webhook_deliveries_due").on("webhook_deliveries").columns(["status", "next_attempt_at"]).execute();
  await db.schema.createIndex("webhook_deliveries_tenant").on("webhook_deliveries").columns(["tenant_id", "created_at"]).execute();

  await db.schema
    .createTable("audit_events")
    .addColumn("id", isPostgres(db) ? "bigserial" : "integer", (c) => (isPostgres(db) ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("member_id", "bigint")
    .addColumn("type", "varchar(64)", (c) => c.notNull())
    .addColumn("at", "bigint", (c) => c.notNull())
    .addColumn("ip", "varchar(64)")
    .addColumn("user_agent", "varchar(512)")
    .addColumn("details", "text")
    .execute();
  await db.schema.createIndex("audit_events_member").on("audit_events").columns(["tenant_id", "member_id", "id"]).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    "audit_events",
    "webhook_deliveries",
    "rate_limit_counters",
    "login_lockouts",
    "one_time_tokens",
    "sessions",
    "members",
    "tenants",
    "applications",
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
