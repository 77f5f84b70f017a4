/**
 * Migrating the database. The dialect is chosen from DATABASE_URL in dialects.ts and nowhere
 * else, so the PostgreSQL twin runs the same stores and the same migrations as SQLite.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from "kysely";
import { isPostgres } from "./dialects.js";
import type { Database } from "./schema.js";
import * as initial from "./migrations/0001-initial.js";
import * as rateLimitSets from "./migrations/0002-rate-limit-sets.js";
import * as twoFactor from "./migrations/0003-two-factor.js";
import * as loginOrigins from "./migrations/0004-login-origins.js";
import * as auditEventsAt from "./migrations/0005-audit-events-at.js";
import * as registrationsEmailRequests from "./migrations/0006-registrations-email-requests.js";
import * as lockoutChecksInFlight from "./migrations/0007-lockout-checks-in-flight.js";
import * as memberAdministration from "./migrations/0008-member-administration.js";
import * as memberSelfService from "./migrations/0009-member-self-service.js";
import * as pendingRetention from "./migrations/0010-pending-retention.js";
import * as lockoutSubject from "./migrations/0011-lockout-subject.js";
import * as loginCodes from "./migrations/0012-login-codes.js";
import * as passkeys from "./migrations/0013-passkeys.js";

/** Listed in code, not read from a folder, so the build output and tsx behave alike. */
const migrations: Record<string, Migration> = {
  "0001-initial": initial,
  "0002-rate-limit-sets": rateLimitSets,
  "0003-two-factor": twoFactor,
  "0004-login-origins": loginOrigins,
  "0005-audit-events-at": auditEventsAt,
  "0006-registrations-email-requests": registrationsEmailRequests,
  "0007-lockout-checks-in-flight": lockoutChecksInFlight,
  "0008-member-administration": memberAdministration,
  "0009-member-self-service": memberSelfService,
  "0010-pending-retention": pendingRetention,
  "0011-lockout-subject": lockoutSubject,
  "0012-login-codes": loginCodes,
  "0013-passkeys": passkeys,
};

const staticMigrations: MigrationProvider = { getMigrations: async () => migrations };

/** Every migration by name, in order (for tests that start from an older schema). */
export const MIGRATIONS: Readonly<Record<string, Migration>> = migrations;

export { openDatabase, type OpenedDatabase } from "./dialects.js";

/**
 * On PostgreSQL the migration tables are pinned to the connection's current schema: Kysely looks
 * them up across all schemas, so a second Latch schema in one database would find the first's.
 */
async function createMigrator(db: Kysely<Database>): Promise<Migrator> {
  if (!isPostgres(db)) return new Migrator({ db, provider: staticMigrations });
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return new Migrator({ db, provider: staticMigrations, migrationTableSchema: rows[0]!.schema });
}

export async function migrateToLatest(db: Kysely<Database>): Promise<void> {
  const migrator = await createMigrator(db);
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`Migration ${failed?.migrationName ?? "(lock)"} failed: ${reason}`, { cause: error });
  }
}

/** True when every known migration has been applied (for readiness checks). */
export async function isMigrated(db: Kysely<Database>): Promise<boolean> {
  const migrator = await createMigrator(db);
  const list = await migrator.getMigrations();
  return list.every((m) => m.executedAt !== undefined);
}
