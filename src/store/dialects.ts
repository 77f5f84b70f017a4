/**
 * The one place where SQLite and PostgreSQL differ (STYLE: dialect differences behind one seam).
 * Everything above speaks Kysely; a migration asks `isPostgres` where DDL must differ.
 */
import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import SqliteDatabase from "better-sqlite3";
import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresDialect,
  SqliteAdapter,
  SqliteDriver,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type SelectQueryBuilder,
} from "kysely";
import pg from "pg";
import type { Database } from "./schema.js";
import { assertOutsideTransaction } from "./transaction-scope.js";

export type DialectName = "sqlite" | "postgres";

export interface PostgresOptions {
  poolSize: number;
  statementTimeoutMs: number;
  /** A connection that dies (server restart, network cut) is reported here, not thrown. */
  onConnectionError?: (err: Error) => void;
}

/**
 * The hottest reads' own path (the session check), never used inside a transaction: those read
 * through their own connection. Each dialect does what its profile asked for:
 * - SQLite: a second, read-only connection. In WAL mode it reads the last committed snapshot beside
 *   the writer, synchronously, without waiting for Kysely's connection mutex; profiling showed
 *   that async path costing more than the lookup itself.
 * - PostgreSQL: named prepared statements on the same pool, parsed and planned once per connection
 *   instead of at every call as Kysely's unnamed ones are: 1.6-1.7 times the session lookups per
 *   second on the bench machine, where PostgreSQL shares the cores with Latch (contract.md#issue-17).
 */
export interface HotReader {
  all<R>(sql: string, parameters: readonly unknown[]): R[] | Promise<R[]>;
  close(): void;
}

export interface OpenedDatabase {
  db: Kysely<Database>;
  dialect: DialectName;
  reader?: HotReader;
  /** Directory for files the service keeps beside its data (the generated secrets key). */
  dataDir: string;
}

const INT8_OID = 20;

/** A unique index refused the write (PostgreSQL 23505, SQLite's UNIQUE/PRIMARY KEY constraint). */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

/** A foreign key refused the write (PostgreSQL 23503, SQLite's FOREIGNKEY constraint): its parent row is gone. */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "23503" || code === "SQLITE_CONSTRAINT_FOREIGNKEY";
}

/**
 * The root handle's dialect with contract.md#issue-28's guard: every connection the root Kysely takes first
 * checks that no transaction's work is running in this async context (transaction-scope.ts). A
 * transaction takes its connection before its work starts, so only a misuse is refused.
 */
function guarded(dialect: Dialect): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => guardedDriver(dialect.createDriver()),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
}

function guardedDriver(driver: Driver): Driver {
  return new Proxy(driver, {
    get(target, property) {
      if (property === "acquireConnection") {
        return () => {
          assertOutsideTransaction();
          return target.acquireConnection();
        };
      }
      // Bound to the driver itself: Kysely's drivers keep private fields (#connectionMutex).
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** The hot reader is the root store's too: refused inside a transaction's work like any root query. */
function guardedReader(reader: HotReader): HotReader {
  return {
    all: <R>(sql: string, parameters: readonly unknown[]) => {
      assertOutsideTransaction();
      return reader.all<R>(sql, parameters);
    },
    close: () => reader.close(),
  };
}

function openSqlite(databaseUrl: string): OpenedDatabase {
  const file = sqliteFileOf(databaseUrl)!;
  mkdirSync(dirname(file), { recursive: true });
  const sqlite = new SqliteDatabase(file);
  // WAL lets readers run beside the writer; synchronous=FULL makes every commit durable, which
  // the outbox and single-use tokens depend on. busy_timeout covers a second process (the CLI).
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = FULL");
  sqlite.pragma("foreign_keys = ON");
  sqlite.pragma("busy_timeout = 5000");
  const readerConnection = new SqliteDatabase(file, { readonly: true });
  readerConnection.pragma("busy_timeout = 5000");
  const cachedReader = withStatementCache(readerConnection);
  const reader: HotReader = {
    all: <R>(sql: string, parameters: readonly unknown[]) => cachedReader.prepare(sql).all(...parameters) as R[],
    close: () => cachedReader.close(),
  };
  return {
    db: new Kysely<Database>({ dialect: guarded(immediateSqliteDialect(withStatementCache(sqlite))) }),
    dialect: "sqlite",
    reader: guardedReader(reader),
    dataDir: dirname(file),
  };
}

/**
 * Kysely's SQLite driver begins transactions with a deferred BEGIN. In WAL mode a deferred
 * transaction that read, and then writes after another process (the CLI, a second server) has
 * committed, is refused at once with SQLITE_BUSY_SNAPSHOT: busy_timeout never applies, and the
 * request answered 503. BEGIN IMMEDIATE takes the write lock first, so the other process waits
 * instead. Within this process it changes nothing: its transactions already run one at a time on
 * the one connection (test/sqlite-processes.test.ts).
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

function immediateSqliteDialect(database: ReturnType<typeof withStatementCache>): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new ImmediateSqliteDriver({ database }),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  };
}

/** Prepared statements kept per SQL text; more distinct texts than this evict the oldest. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely's SQLite driver prepares every query anew, and preparing cost as much as running a
 * session check's two lookups (measured, docs/performance.md). Statements are reusable, and
 * Kysely runs one query at a time per connection (we never stream), so a cache by SQL text is safe.
 */
function withStatementCache(sqlite: SqliteDatabase.Database): { close(): void; prepare(sql: string): SqliteDatabase.Statement } {
  const statements = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => sqlite.close(),
    prepare(sql) {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = sqlite.prepare(sql);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

function openPostgres(databaseUrl: string, options: PostgresOptions): OpenedDatabase {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize,
    statement_timeout: options.statementTimeoutMs,
    connectionTimeoutMillis: options.statementTimeoutMs,
    // Every bigint column holds a millisecond time or a record id below 2^53: read them as numbers.
    types: { getTypeParser: (oid: number, format?: string) => (oid === INT8_OID ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as "text")) },
  });
  // A connection that dies emits 'error' on its client, idle (pool 'error') or checked out (the
  // client itself; Kysely adds no listener). Unheard, either would end the process; the query in
  // flight still fails and answers 503.
  pool.on("error", (err) => options.onConnectionError?.(err));
  pool.on("connect", (client) => client.on("error", (err) => options.onConnectionError?.(err)));
  // A statement's name is its text's hash: the same text is the same statement on every connection.
  const names = new Map<string, string>();
  const nameOf = (sql: string): string => {
    let name = names.get(sql);
    if (name === undefined) names.set(sql, (name = `latch_${createHash("sha256").update(sql).digest("hex").slice(0, 24)}`));
    return name;
  };
  const reader: HotReader = {
    all: async <R>(sql: string, parameters: readonly unknown[]) => (await pool.query({ name: nameOf(sql), text: sql, values: [...parameters] })).rows as R[],
    close: () => undefined, // the pool is Kysely's, ended by db.destroy()
  };
  return {
    db: new Kysely<Database>({ dialect: guarded(new PostgresDialect({ pool })) }),
    dialect: "postgres",
    reader: guardedReader(reader),
    dataDir: resolve("data"),
  };
}

/** The absolute path of a `sqlite:` DATABASE_URL's file; undefined for PostgreSQL. */
export function sqliteFileOf(databaseUrl: string): string | undefined {
  return databaseUrl.startsWith("sqlite:") ? resolve(databaseUrl.slice("sqlite:".length)) : undefined;
}

/** What a log or an error may say about DATABASE_URL: the SQLite file, or PostgreSQL's host, port and database. Never the password. */
export function describeDatabase(databaseUrl: string): string {
  const file = sqliteFileOf(databaseUrl);
  if (file !== undefined) return `SQLite ${file}`;
  try {
    const url = new URL(databaseUrl);
    return `PostgreSQL ${url.hostname || "localhost"}:${url.port || "5432"}${url.pathname || "/"}${url.username ? ` as ${decodeURIComponent(url.username)}` : ""}`;
  } catch {
    return "PostgreSQL (DATABASE_URL does not parse as a URL)";
  }
}

export function openDatabase(databaseUrl: string, postgres: PostgresOptions = { poolSize: 10, statementTimeoutMs: 5000 }): OpenedDatabase {
  if (databaseUrl.startsWith("sqlite:")) return openSqlite(databaseUrl);
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) return openPostgres(databaseUrl, postgres);
  throw new Error("DATABASE_URL must start with sqlite: or postgres://");
}

/**
 * A read whose rows stay locked until the transaction commits, so two transactions that decide on
 * the same row run one after the other. PostgreSQL locks the rows (`FOR UPDATE`); SQLite has one
 * writer, which a writing transaction holds to its end, so the query is left as it is.
 */
export function lockingRead<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, dialect: DialectName): SelectQueryBuilder<DB, TB, O> {
  return dialect === "postgres" ? query.forUpdate() : query;
}

/**
 * A read of rows this instance is about to claim: on PostgreSQL rows another instance has locked
 * are skipped rather than waited for (`FOR UPDATE SKIP LOCKED`); SQLite has one writer.
 */
export function claimingRead<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>, dialect: DialectName): SelectQueryBuilder<DB, TB, O> {
  return dialect === "postgres" ? query.forUpdate().skipLocked() : query;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- migrations run on Kysely<any>
export function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
