/**
 * Issue 17: on PostgreSQL the session check runs as a named prepared statement (dialects.ts
 * HotReader): parsed and planned once per connection, not at every call as Kysely's unnamed
 * statements are. One connection, so the test sees the statements that connection keeps.
 * PostgreSQL only, so it lives in test/postgres/.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { sql } from "kysely";
import { keyedSubjectHasher } from "../../src/security/hashing.js";
import { migrateToLatest, openDatabase } from "../../src/store/database.js";
import { Store } from "../../src/store/index.js";
import { createTestSchema } from "../support/postgres.js";

test("the session check is a named prepared statement, prepared once and reused", async (t) => {
  const opened = openDatabase((await createTestSchema()).url, { poolSize: 1, statementTimeoutMs: 5000 });
  await migrateToLatest(opened.db);
  const store = new Store(opened.db, opened.dialect, opened.reader, keyedSubjectHasher("hot-reader-test"));
  t.after(() => store.close());
  assert.ok(opened.reader, "PostgreSQL has a hot reader");

  for (let i = 0; i < 3; i++) assert.equal(await store.sessions.findLiveSession("ten_none", `hash-${i}`, 1000), undefined);
  const prepared = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(opened.db);
  const sessionLookups = prepared.rows.filter((row) => row.statement.includes('from "sessions" as "s"'));
  assert.equal(sessionLookups.length, 1, JSON.stringify(prepared.rows));
  assert.match(sessionLookups[0]!.name, /^latch_[0-9a-f]{24}$/);
});
