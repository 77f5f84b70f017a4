#!/usr/bin/env node
// The later passes of `npm test`: the suites that go through the store again on PostgreSQL when
// TEST_DATABASE_URL names one, then once more with the limit counters in Redis when TEST_REDIS_URL
// names one (on PostgreSQL when it is there, else SQLite). Each harness makes a schema and a Redis
// key prefix of its own (latch_test_*); this script removes them before and after.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

// Files that test no store (providers, pure units), run every backend themselves (the contract
// suites), or drive a SQLite file on purpose (the CLI and server-process tests).
const STORE_INDEPENDENT = new Set([
  "bot.test.ts",
  "breach.test.ts",
  "webhook-sender.test.ts",
  "mmdb-writer.test.ts",
  "units.test.ts",
  "store-contract.test.ts",
  "counters-contract.test.ts",
  "cli.test.ts",
  "operations.test.ts",
  "secret-box.test.ts",
  "client-types.test.ts",
  "webauthn-authenticator.test.ts",
  "package-imports.test.ts",
  "citations.test.ts",
  "outbound-fetch.test.ts",
  "upstream-idp.test.ts",
  "upstream-discovery.test.ts",
]);

const { TEST_DATABASE_URL, TEST_REDIS_URL } = process.env;
const testFiles = (dir, filter = () => true) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts") && filter(f))
    .map((f) => `${dir}/${f}`);
const storeBacked = testFiles("test", (f) => !STORE_INDEPENDENT.has(f));

// The Redis pass swaps one seam, the limit counters (hit windows, distinct-member sets, claim-once
// marks), and the counters contract already proves both twins answer alike. It runs the files whose
// tests reach a limit's outcome (a 429, a Retry-After, a lockout, a velocity hold, a replayed
// challenge), picked by what they assert, so a new limit test joins without a list to keep; the rest
// go through the counters only on their way and would run the PostgreSQL pass a second time
// (docs/testing.md#redis-pass). The cut keeps .ci/run under its hour with the Node LTS pass.
const LIMIT_OUTCOME = /rate_limited|Retry-After|retryAfter|velocity|lockout|account_locked|replay/;
const limitBacked = storeBacked.filter((file) => LIMIT_OUTCOME.test(readFileSync(file, "utf8")));

/** Drops the schemas test harnesses made. */
async function dropTestSchemas() {
  if (!TEST_DATABASE_URL) return;
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  const { rows } = await client.query("select nspname from pg_namespace where nspname like 'latch\\_test\\_%'");
  for (const { nspname } of rows) await client.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
  await client.end();
}

/** Deletes the Redis keys test harnesses made. */
async function dropTestKeys() {
  if (!TEST_REDIS_URL) return;
  const { Redis } = await import("ioredis");
  const redis = new Redis(TEST_REDIS_URL);
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", "latch_test_*", "COUNT", 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== "0");
  await redis.quit();
}

function runPass(label, files, env) {
  console.log(`\n# ${label}`);
  const result = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-concurrency=2", ...files], {
    stdio: "inherit",
    env: { ...process.env, ...env },
  });
  return result.status ?? 1;
}

await dropTestSchemas();
await dropTestKeys();
let status = 0;
if (TEST_DATABASE_URL) {
  // test/postgres/ holds what only makes sense on PostgreSQL (several instances, outages).
  status = runPass("PostgreSQL pass", [...storeBacked, ...testFiles("test/postgres")], { LATCH_TEST_STORE: "postgres" });
} else {
  console.log("TEST_DATABASE_URL is not set: the PostgreSQL pass does not run (see README, Development).");
}
if (TEST_REDIS_URL) {
  const store = TEST_DATABASE_URL ? "postgres" : "sqlite";
  const redisStatus = runPass(`Redis pass (counters in Redis, store ${store})`, [...limitBacked, ...testFiles("test/redis")], {
    LATCH_TEST_STORE: store,
    LATCH_TEST_REDIS: "1",
  });
  status ||= redisStatus;
} else {
  console.log("TEST_REDIS_URL is not set: the Redis pass does not run (see README, Development).");
}
await dropTestSchemas();
await dropTestKeys();
process.exit(status);
