/**
 * Which database a CLI command works on, said on stderr by every command (docs/operations.md#which-database-the-cli-uses):
 * the server and the CLI each default to a file of their own (`npm start` ./data/latch.db, `npm run dev` ./data/dev.db),
 * so a command that names nothing may be on another database than the server the operator is looking at.
 */
import { sqliteFileOf } from "../store/database.js";

/**
 * PostgreSQL URL query parameters shown with their value. Any other (`password`, `sslpassword`,
 * `sslkey`, whatever a driver adds next) is shown by name only: an allow-list, so a new secret
 * parameter is hidden without anyone thinking of it.
 */
const SHOWN_PARAMETERS = new Set(["options", "sslmode", "application_name", "connect_timeout", "host", "port", "dbname", "user", "search_path"]);

/**
 * DATABASE_URL as the CLI names it: a SQLite file as `sqlite:<absolute path>` (usable as DATABASE_URL
 * from any directory), a PostgreSQL URL without its password. Never a password, never the URL as
 * typed when it does not parse (it may hold one where the parser did not find it).
 */
export function databaseNameOf(databaseUrl: string): string {
  const file = sqliteFileOf(databaseUrl);
  if (file !== undefined) return `sqlite:${file}`;
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return "PostgreSQL (DATABASE_URL does not parse as a URL)";
  }
  const hidden = url.password !== "";
  url.password = "";
  const query = url.search
    .slice(1)
    .split("&")
    .filter(Boolean)
    .map((pair) => {
      const name = pair.split("=")[0]!;
      return SHOWN_PARAMETERS.has(name) ? pair : `${name}=…`;
    });
  url.search = "";
  return `${url.toString()}${query.length > 0 ? `?${query.join("&")}` : ""}${hidden ? " (password not shown)" : ""}`;
}

/**
 * The line every command prints on stderr before it opens the database. When DATABASE_URL is unset
 * the default is in use: the line says so, and names the other default (dev mode's file, the one a
 * reader who started `npm run dev` is looking at; or `npm start`'s with DEV_MODE=true).
 */
export function databaseLine(databaseUrl: string, options: { fromEnvironment: boolean; devMode: boolean }): string {
  const line = `latch: database ${databaseNameOf(databaseUrl)}`;
  if (options.fromEnvironment) return line;
  return options.devMode
    ? `${line} (DATABASE_URL is unset: dev mode's default, as \`npm run dev\` uses; \`npm start\` uses sqlite:./data/latch.db)`
    : `${line} (DATABASE_URL is unset: the default, as \`npm start\` uses; \`npm run dev\` uses DATABASE_URL=sqlite:./data/dev.db)`;
}
