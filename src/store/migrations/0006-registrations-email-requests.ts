/* eslint-disable @typescript-eslint/no-explicit-any -- migrations are frozen against Kysely<any> on purpose */
/**
 * contract.md#d18: each registration of a pending account is kept on its own (its password hash, name and
 * type) and its verification link is bound to it; a pending member row holds no usable password.
 * contract.md#d19: every request that may send an email is first a durable `email_requests` row, committed
 * before the answer, which a worker turns into a token and a webhook.
 *
 * Pending members of older versions keep working: their password moves into a registration
 * `legacy-<id>` and their outstanding verification links are bound to it.
 */
import { sql, type Kysely } from "kysely";

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("registrations")
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("id", "varchar(64)", (c) => c.notNull())
    .addColumn("member_id", "bigint", (c) => c.notNull())
    .addColumn("name", "varchar(100)", (c) => c.notNull())
    .addColumn("authentication_type", "varchar(16)", (c) => c.notNull())
    .addColumn("password_hash", "text")
    .addColumn("password_salt", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("registrations_pk", ["tenant_id", "id"])
    .execute();
  await db.schema.createIndex("registrations_member").on("registrations").columns(["tenant_id", "member_id", "created_at"]).execute();
  await db.schema.createIndex("registrations_expiry").on("registrations").column("expires_at").execute();

  await db.schema.alterTable("one_time_tokens").addColumn("registration_id", "varchar(64)").execute();

  await db.schema
    .createTable("email_requests")
    .addColumn("id", "varchar(64)", (c) => c.primaryKey())
    .addColumn("tenant_id", "varchar(64)", (c) => c.notNull())
    .addColumn("kind", "varchar(32)", (c) => c.notNull())
    .addColumn("email", "varchar(254)", (c) => c.notNull())
    .addColumn("record_id", "bigint")
    .addColumn("name", "varchar(100)")
    .addColumn("authentication_type", "varchar(16)")
    .addColumn("password_hash", "text")
    .addColumn("password_salt", "text")
    .addColumn("ip", "varchar(64)")
    .addColumn("user_agent", "varchar(512)")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("email_requests_created").on("email_requests").column("created_at").execute();

  // Older pending members: their password becomes their one registration, their links bound to it.
  await sql`
    insert into registrations (tenant_id, id, member_id, name, authentication_type, password_hash, password_salt, created_at, expires_at)
    select m.tenant_id, 'legacy-' || cast(m.id as varchar(24)), m.id, m.name,
           case when m.has_password_auth = 1 then 'Password' else 'Magic Link' end,
           m.password_hash, m.password_salt, m.created_at,
           coalesce((select max(t.expires_at) from one_time_tokens t
                     where t.tenant_id = m.tenant_id and t.member_id = m.id and t.kind = 'verify_email'), m.created_at)
    from members m where m.status = 'Email Verification Pending'`.execute(db);
  await sql`
    update one_time_tokens set registration_id = 'legacy-' || cast(member_id as varchar(24))
    where kind = 'verify_email' and exists (
      select 1 from members m where m.tenant_id = one_time_tokens.tenant_id and m.id = one_time_tokens.member_id
      and m.status = 'Email Verification Pending')`.execute(db);
  await sql`
    update members set password_hash = null, password_salt = null
    where status = 'Email Verification Pending'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("email_requests").execute();
  await db.schema.alterTable("one_time_tokens").dropColumn("registration_id").execute();
  await db.schema.dropTable("registrations").execute();
}
