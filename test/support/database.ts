/**
 * The test's own look at the harness's database (through `h.db`, beside the API): a member's row
 * and sessions, the lockout row, a member's audit types; for tests that prove an erasure (D22,
 * D23), every table and the rows of any table that hold a value; and, on PostgreSQL, whether a
 * transaction of this test waits for a lock.
 */
import { sql, type Selectable } from "kysely";
import type { MembersTable } from "../../src/store/schema.js";
import { TEST_STORE, type Harness } from "./harness.js";

type MemberColumns = Selectable<MembersTable>;

/** These columns of the member's row, which must exist. */
export async function memberRow<C extends keyof MemberColumns>(h: Harness, recordId: string, columns: readonly C[]): Promise<Pick<MemberColumns, C>> {
  const row = await h.db
    .selectFrom("members")
    .select(columns as readonly (keyof MemberColumns)[])
    .where("id", "=", Number(recordId))
    .executeTakeFirstOrThrow();
  return row;
}

/** One column of the member's row, which must exist. */
export async function memberField<C extends keyof MemberColumns>(h: Harness, recordId: string, column: C): Promise<MemberColumns[C]> {
  return (await memberRow(h, recordId, [column]))[column];
}

/** How many session rows the member has (live or not). */
export async function sessionCount(h: Harness, recordId: string): Promise<number> {
  const row = await h.db
    .selectFrom("sessions")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("member_id", "=", Number(recordId))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The first lockout row as [in_flight, failures]; undefined when there is none. */
export async function lockoutRow(h: Harness): Promise<[number, number] | undefined> {
  const row = await h.db.selectFrom("login_lockouts").select(["in_flight", "failures"]).executeTakeFirst();
  return row && [Number(row.in_flight), Number(row.failures)];
}

/** The types of the member's audit events, oldest first. */
export async function auditTypes(h: Harness, recordId: string): Promise<string[]> {
  const rows = await h.db.selectFrom("audit_events").select("type").where("member_id", "=", Number(recordId)).orderBy("id").execute();
  return rows.map((r) => r.type);
}

/** Every table of the test database (the harness's schema on PostgreSQL), migration bookkeeping aside. */
export async function tableNames(h: Harness): Promise<string[]> {
  if (TEST_STORE === "postgres") {
    const { rows } = await sql<{
      name: string;
    }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(h.db);
    return rows.map((r) => r.name).filter((name) => !name.startsWith("kysely_"));
  }
  const { rows } = await sql<{
    name: string;
  }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like 'kysely_%'`.execute(h.db);
  return rows.map((r) => r.name);
}

/**
 * Rows of any table that hold one of the values in any column, as "table: row" lines. `exact`
 * values are compared with the whole column (record ids, tenant ids); `contained` ones are looked
 * for inside text columns, case-insensitively (emails, domains).
 */
export async function rowsHolding(h: Harness, values: { exact?: string[]; contained?: string[] }): Promise<string[]> {
  const exact = values.exact ?? [];
  const contained = (values.contained ?? []).map((v) => v.toLowerCase());
  const found: string[] = [];
  for (const table of await tableNames(h)) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(h.db);
    for (const row of rows) {
      const hit = Object.values(row).some(
        (value) => exact.includes(String(value)) || (typeof value === "string" && contained.some((c) => value.toLowerCase().includes(c))),
      );
      if (hit) found.push(`${table}: ${JSON.stringify(row)}`);
    }
  }
  return found;
}

/** How many rows each table (each of `tables`, when given) holds. */
export async function rowCounts(h: Harness, tables?: readonly string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables ?? (await tableNames(h))) {
    const { rows } = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(h.db);
    counts[table] = Number(rows[0]!.n);
  }
  return counts;
}

/**
 * PostgreSQL: resolves once a backend working in this test's schema waits for a lock another
 * transaction holds, so a test can let the holder go only after the other is queued behind it.
 * Backends of other test files (other schemas) never count.
 */
export async function blockedOnLock(h: Harness, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql<{ n: number | string }>`
      select count(*) as n from pg_locks w
      where not w.granted and exists (
        select 1 from pg_locks l join pg_class c on c.oid = l.relation join pg_namespace s on s.oid = c.relnamespace
        where l.pid = w.pid and s.nspname = current_schema())`.execute(h.db);
    if (Number(rows[0]!.n) > 0) return;
    if (Date.now() > deadline) throw new Error("no transaction of this test waited for a lock");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
