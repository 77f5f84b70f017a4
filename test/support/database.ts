/**
 * Reading the whole test database, for tests that prove an erasure (D22, D23): every table of the
 * harness's database, and the rows of any table that hold a value.
 */
import { sql } from "kysely";
import { TEST_STORE, type Harness } from "./harness.js";

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

/** How many rows each table holds. */
export async function rowCounts(h: Harness): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of await tableNames(h)) {
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
