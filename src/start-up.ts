/**
 * What an operator can fix at start, said in one line instead of a stack trace (contract.md#issue-16): a
 * SQLite path whose directory does not exist (a typo would otherwise create an empty database), a
 * CLI pointed at a database that is not there, a busy port, a database or Redis out of reach.
 */
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ConfigError, StartError } from "./config.js";
import { describeDatabase, sqliteFileOf } from "./store/database.js";

export interface DatabaseLocation {
  /** For the start-up log: the SQLite file, or PostgreSQL's host, port and database (never a password). */
  description: string;
  /** SQLite only: the file does not exist yet, so opening it creates a new, empty database. */
  isNew: boolean;
}

/** The data directory a first start creates by itself (DATABASE_URL's default, and dev mode's). */
const DEFAULT_DATA_DIR = resolve("data");

/**
 * Before the database is opened. The server may create a SQLite database, but only in a directory
 * that exists or in the default ./data, so a mistyped directory never starts on an empty one. The
 * CLI passes `mayCreate: false` except for `latch migrate` and `latch tenant create` (a natural
 * first command): any other command on a file that is not there was meant for another database.
 * `besideDevDatabase: false` (the CLI) refuses to create ./data/latch.db beside an existing
 * ./data/dev.db: that is dev mode's database with DATABASE_URL forgotten, and a tenant created in
 * a new file would never show on the dev server. (The server may: production after a dev trial.)
 */
export function checkDatabaseLocation(databaseUrl: string, options: { mayCreate: boolean; besideDevDatabase?: boolean }): DatabaseLocation {
  const description = describeDatabase(databaseUrl);
  const file = sqliteFileOf(databaseUrl);
  if (file === undefined || existsSync(file)) return { description, isNew: false };
  const devDatabase = resolve("data/dev.db");
  const devHint = existsSync(devDatabase) ? ` Dev mode's database is ${devDatabase}: DATABASE_URL=sqlite:./data/dev.db npm run latch -- …` : "";
  if (!options.mayCreate || (options.besideDevDatabase === false && devHint !== "" && file === resolve("data/latch.db"))) {
    throw new ConfigError([
      `DATABASE_URL: there is no SQLite database at ${file}. The server creates it at its first start (or run \`latch migrate\`).${devHint}`,
    ]);
  }
  if (!existsSync(dirname(file)) && dirname(file) !== DEFAULT_DATA_DIR) {
    throw new ConfigError([
      `DATABASE_URL names a SQLite file in ${dirname(file)}, a directory that does not exist: check it for a typo, or create the directory first`,
    ]);
  }
  return { description, isNew: true };
}

/** Network and access failures an operator fixes outside Latch; anything else is a bug and keeps its stack. */
const OUT_OF_REACH_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ECONNRESET",
  "28P01",
  "28000",
  "3D000", // PostgreSQL: password refused, no such role, no such database
  "SQLITE_CANTOPEN",
  "SQLITE_NOTADB",
  "SQLITE_READONLY",
  "SQLITE_PERM",
  "SQLITE_AUTH",
  "EACCES",
  "EROFS",
]);

function isOutOfReach(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && OUT_OF_REACH_CODES.has(code)) return true;
    if (/timeout exceeded when trying to connect|connection timeout/i.test(e.message)) return true;
  }
  return false;
}

/** A failure to reach `what` (the database, Redis) becomes a StartError naming it; other errors pass through. */
export function asStartError(err: unknown, what: string): unknown {
  return isOutOfReach(err) ? new StartError(`cannot reach ${what}: ${(err as Error).message}`, { cause: err }) : err;
}

/** app.listen's refusal, in words; other errors pass through. */
export function listenProblem(err: unknown, host: string, port: number): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "EADDRINUSE")
    return new StartError(`port ${port} on ${host} is already in use (another Latch, or another program): stop it, or set PORT`, { cause: err });
  if (code === "EACCES")
    return new StartError(`not allowed to listen on ${host}:${port}: set PORT to 1024 or above, or give the process the right`, { cause: err });
  if (code === "EADDRNOTAVAIL" || code === "ENOTFOUND") return new StartError(`HOST=${host} is not an address of this machine`, { cause: err });
  return err;
}
