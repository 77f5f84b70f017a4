/**
 * Opening the database and migrating it. The dialect is chosen from DATABASE_URL here and nowhere
 * else, so the PostgreSQL twin slots in beside SQLite without touching the stores.
 */
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, Migrator, SqliteDialect, type Migration, type MigrationProvider } from "kysely";
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

export interface OpenedDatabase {
  db: Kysely<Database>;
  /** Directory for files the service keeps beside its data (the generated secrets key). */
  dataDir: string;
}

export function openDatabase(databaseUrl: string): OpenedDatabase {
  if (!databaseUrl.startsWith("sqlite:")) {
    throw new Error(`Unsupported DATABASE_URL scheme: only sqlite: is available in this build`);
  }
  const file = resolve(databaseUrl.slice("sqlite:".length));
  mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SqliteDatabase(file);
  // WAL lets readers run beside the writer; synchronous=FULL makes every commit durable, which
  // the outbox and single-use tokens depend on. busy_timeout covers a second process (the CLI).
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = FULL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { db, dataDir: dirname(file) };
}

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
