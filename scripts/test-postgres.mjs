#!/usr/bin/env node
// The second pass of `npm test`: the suites that go through the store, on PostgreSQL, when
// TEST_DATABASE_URL names one. Each harness makes a schema of its own there and drops it after.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";

// Files that test no store (providers, pure units), run both stores themselves (the store
// contract), or drive a SQLite file on purpose (the CLI and server-process tests).
const STORE_INDEPENDENT = new Set([
  "bot.test.ts", "breach.test.ts", "webhook-sender.test.ts", "mmdb-writer.test.ts", "units.test.ts",
  "store-contract.test.ts", "cli.test.ts", "operations.test.ts",
]);

if (!process.env.TEST_DATABASE_URL) {
  console.log("TEST_DATABASE_URL is not set: the PostgreSQL pass does not run (see README, Development).");
  process.exit(0);
}
/** Drops the schemas test harnesses made (latch_test_*), before and after the run. */
async function dropTestSchemas() {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await client.connect();
  const { rows } = await client.query("select nspname from pg_namespace where nspname like 'latch\\_test\\_%'");
  for (const { nspname } of rows) await client.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
  await client.end();
}

await dropTestSchemas();
const files = [
  ...readdirSync("test").filter((f) => f.endsWith(".test.ts") && !STORE_INDEPENDENT.has(f)).map((f) => `test/${f}`),
  // Tests that only make sense on PostgreSQL (several instances on one database).
  ...readdirSync("test/postgres").filter((f) => f.endsWith(".test.ts")).map((f) => `test/postgres/${f}`),
];
const result = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...files], {
  stdio: "inherit",
  env: { ...process.env, LATCH_TEST_STORE: "postgres" },
});
await dropTestSchemas();
process.exit(result.status ?? 1);
