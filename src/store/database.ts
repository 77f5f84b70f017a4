/**
 * Migrating the database. The dialect is chosen from DATABASE_URL in dialects.ts and nowhere
 * else, so the PostgreSQL twin runs the same stores and the same migrations as SQLite.
 */
import { Migrator, sql, type DatabaseIntrospector, type Kysely, type Migration, type MigrationProvider } from "kysely";
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
import * as twoFactorReauthentication from "./migrations/0014-two-factor-reauthentication.js";
import * as alertOrder from "./migrations/0015-alert-order.js";
import * as webhookSecretRotation from "./migrations/0016-webhook-secret-rotation.js";
import * as federation from "./migrations/0017-federation.js";
import * as oidcProvider from "./migrations/0018-oidc-provider.js";
import * as oidcSigningKeys from "./migrations/0019-oidc-signing-keys.js";
import * as oauthClients from "./migrations/0020-oauth-clients.js";
import * as sessionAmr from "./migrations/0021-session-amr.js";
import * as importedMembers from "./migrations/0022-imported-members.js";

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
  "0014-two-factor-reauthentication": twoFactorReauthentication,
  "0015-alert-order": alertOrder,
  "0016-webhook-secret-rotation": webhookSecretRotation,
  "0017-federation": federation,
  "0018-oidc-provider": oidcProvider,
  // After "0018-oidc-provider" (contract.md#d28, made alongside): the names order the migrations.
  "0019-oidc-signing-keys": oidcSigningKeys,
  "0020-oauth-clients": oauthClients,
  "0021-session-amr": sessionAmr,
  "0022-imported-members": importedMembers,
};

const staticMigrations: MigrationProvider = { getMigrations: async () => migrations };

/** Every migration by name, in order (for tests that start from an older schema). */
export const MIGRATIONS: Readonly<Record<string, Migration>> = migrations;

export { describeDatabase, openDatabase, sqliteFileOf, type OpenedDatabase } from "./dialects.js";

/**
 * On PostgreSQL the migrator works in the connection's current schema only. Kysely looks its
 * tables up across all schemas: a second Latch schema in one database would find the first's, and
 * its introspection (pg_get_serial_sequence over every column of every schema) fails when another
 * schema's column is renamed or dropped at that moment, as a second instance's or a test's
 * migration does ("column … does not exist"). So its table lookups are answered from this schema.
 */
export async function createMigrator(db: Kysely<Database>, provider: MigrationProvider = staticMigrations): Promise<Migrator> {
  if (!isPostgres(db)) return new Migrator({ db, provider });
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]!.schema;
  return new Migrator({ db: inSchema(db, schema), provider, migrationTableSchema: schema });
}

/** `db` whose introspection (what the migrator asks: does the schema, does a table exist) sees one schema. */
function inSchema(db: Kysely<Database>, schema: string): Kysely<Database> {
  const introspection: Pick<DatabaseIntrospector, "getSchemas" | "getTables"> = {
    getSchemas: async () => [{ name: schema }],
    getTables: async () => {
      const { rows } = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = ${schema}`.execute(db);
      return rows.map((row) => ({ name: row.name, schema, isView: false, columns: [] }));
    },
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === "introspection") return introspection;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
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
