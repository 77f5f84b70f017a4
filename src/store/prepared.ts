/**
 * A hot query built and compiled by Kysely once, then run with new values: on the session check,
 * building and compiling cost more than SQLite's lookup itself (docs/performance.md). The query is
 * built once with a unique placeholder per named value; where each placeholder lands among the
 * compiled parameters says where each value goes. Used only where the profile showed the cost.
 */
import { CompiledQuery, type Compilable, type Kysely } from "kysely";
import type { HotReader } from "./dialects.js";

export class PreparedQuery<P extends Record<string, string | number>, R> {
  private compiled: { sql: string; order: Array<keyof P> } | undefined;

  constructor(
    private readonly names: ReadonlyArray<keyof P>,
    private readonly build: (values: P) => Compilable<R>,
  ) {}

  /**
   * Runs on the store's hot reader when given (outside transactions, dialects.ts), else through Kysely.
   * SQLite's reader answers synchronously, and then so does this: no promise on the session check's
   * path (docs/performance.md#the-session-check). A reader that throws (the transaction guard) throws here.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any schema: the SQL is fixed
  execute(db: Kysely<any>, values: P, reader?: HotReader): R[] | Promise<R[]> {
    this.compiled ??= this.compile();
    const { sql, order } = this.compiled;
    const parameters = order.map((name) => values[name]);
    if (reader) return reader.all<R>(sql, parameters);
    return db.executeQuery<R>(CompiledQuery.raw(sql, parameters)).then((result) => result.rows);
  }

  private compile(): { sql: string; order: Array<keyof P> } {
    const placeholders = Object.fromEntries(this.names.map((name) => [name, `\u0000${String(name)}\u0000`])) as unknown as P;
    const query = this.build(placeholders).compile();
    const order = query.parameters.map((value) => {
      const name = this.names.find((n) => placeholders[n] === value);
      if (name === undefined) throw new Error(`PreparedQuery: a parameter is not one of the named values (${String(value)})`);
      return name;
    });
    return { sql: query.sql, order };
  }
}
