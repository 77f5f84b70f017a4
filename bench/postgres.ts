/**
 * `npm run bench -- --store postgres`: a PostgreSQL database and a Redis key prefix of the bench's
 * own, removed again by the cleanups. A whole database rather than a schema: the test suites make
 * and drop `latch_test_*` schemas in their database while they run, and Kysely's migrator looks
 * across schemas (test/support/postgres.ts), so a bench beside a test run could break either.
 *
 * BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres) is where the database is
 * created; BENCH_REDIS_URL (default redis://127.0.0.1:6379) holds the counters.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { cleanups, log, type LatchStore } from "./servers.js";

const ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const REDIS_URL = process.env.BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

async function withAdmin(run: (client: pg.Client) => Promise<unknown>): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await run(client);
  } finally {
    await client.end();
  }
}

/** Deletes every key under the prefix. */
async function deleteKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    await redis.quit();
  }
}

/** An empty database `latch_bench_<random>` and a Redis prefix of the same name, both removed at the end. */
export async function createBenchStore(): Promise<LatchStore> {
  const name = `latch_bench_${randomBytes(6).toString("hex")}`;
  await withAdmin((client) => client.query(`CREATE DATABASE ${name}`));
  cleanups.push(() => withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
  const keyPrefix = `${name}:`;
  await deleteKeys(REDIS_URL, keyPrefix); // also proves Redis answers before anything is seeded
  cleanups.push(() => deleteKeys(REDIS_URL, keyPrefix));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  log(`PostgreSQL database ${name} on ${url.host}, Redis ${REDIS_URL} under ${keyPrefix}`);
  return { databaseUrl: url.toString(), redis: { url: REDIS_URL, keyPrefix } };
}
