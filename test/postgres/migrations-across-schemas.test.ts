/**
 * Several Latch schemas in one PostgreSQL database (the test suite's, or deployments sharing a
 * server): migrating one must not depend on the others. Kysely's migrator asked its introspector
 * whether its tables exist, which runs pg_get_serial_sequence over every column of every schema;
 * a column renamed in another schema between the scan's snapshot and that call failed the
 * migration with "column … does not exist" (seen in CI, where another file's migration ran 0011).
 * PostgreSQL only, so it lives in test/postgres/.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import pg from "pg";
import { migrateToLatest, openDatabase } from "../../src/store/database.js";
import { createTestSchema } from "../support/postgres.js";

const MIGRATIONS_WHILE_RENAMING = 12;

test("schemas migrate while another schema's column is renamed over and over: each migrator looks at its own schema only", { timeout: 120_000 }, async () => {
  const other = await createTestSchema();
  const altering = new pg.Client({ connectionString: other.url });
  await altering.connect();
  await altering.query("create table renamed_often (a integer)");
  let renaming = true;
  const names = ["a", "b"];
  const renames = (async () => {
    for (let i = 0; renaming; i++) await altering.query(`alter table renamed_often rename column ${names[i % 2]} to ${names[(i + 1) % 2]}`);
  })();
  const failures: string[] = [];
  try {
    for (let i = 0; i < MIGRATIONS_WHILE_RENAMING; i++) {
      const opened = openDatabase((await createTestSchema()).url, { poolSize: 2, statementTimeoutMs: 5000 });
      try {
        await migrateToLatest(opened.db);
      } catch (error) {
        failures.push((error as Error).message);
      } finally {
        await opened.db.destroy();
      }
    }
  } finally {
    renaming = false;
    await renames;
    await altering.end();
  }
  assert.deepEqual(failures, [], "another schema's changes must not touch a migration");
});
