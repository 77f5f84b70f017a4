/**
 * PostgreSQL for tests: when TEST_DATABASE_URL is set, each caller gets a schema of its own, so
 * runs and parallel test files never collide. Schemas are dropped by scripts/test-backends.mjs,
 * before and after the run, never by a test: a DROP SCHEMA beside another file's migration breaks
 * Kysely's migrator, which looks across schemas.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

export interface TestSchema {
  /** DATABASE_URL that puts every connection in the fresh schema. */
  url: string;
}

export async function createTestSchema(): Promise<TestSchema> {
  if (!TEST_DATABASE_URL) throw new Error("TEST_DATABASE_URL is not set");
  const schema = `latch_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set("options", `-c search_path=${schema}`);
  return { url: url.toString() };
}
