/**
 * Migrating the database. The dialect is chosen from DATABASE_URL in dialects.ts and nowhere
 * else, so the PostgreSQL twin runs the same stores and the same migrations as SQLite.
 */
import { Migrator, type Kysely, type Migration, type MigrationProvider } from "kysely";
import type { Database } from "./schema.js";
import * as initial from "./migrations/0001-initial.js";
import * as rateLimitSets from "./migrations/0002-rate-limit-sets.js";
import * as twoFactor from "./migrations/0003-two-factor.js";
import * as loginOrigins from "./migrations/0004-login-origins.js";

/** Listed in code, not read from a folder, so the build output and tsx behave alike. */
const migrations: Record<string, Migration> = {
  "0001-initial": initial,
  "0002-rate-limit-sets": rateLimitSets,
  "0003-two-factor": twoFactor,
  "0004-login-origins": loginOrigins,
};

const staticMigrations: MigrationProvider = { getMigrations: async () => migrations };

export { openDatabase, type OpenedDatabase } from "./dialects.js";

export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  const migrator = new Migrator({ db, provider: staticMigrations });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    throw new Error(`Migration ${failed?.migrationName ?? ""} failed`, { cause: error });
  }
}

/** True when every known migration has been applied (for readiness checks). */
export async function isMigrated(db: Kysely<Database>): Promise<boolean> {
  const migrator = new Migrator({ db, provider: staticMigrations });
  const list = await migrator.getMigrations();
  return list.every((m) => m.executedAt !== undefined);
}
