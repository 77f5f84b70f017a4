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
const files = readdirSync("test").filter((f) => f.endsWith(".test.ts") && !STORE_INDEPENDENT.has(f)).map((f) => `test/${f}`);
const result = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...files], {
  stdio: "inherit",
  env: { ...process.env, LATCH_TEST_STORE: "postgres" },
});
process.exit(result.status ?? 1);
