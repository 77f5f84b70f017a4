/**
 * Every query's SQL text is fixed; the values travel as parameters. SQLite keeps prepared
 * statements by their text (store/dialects.ts), so a text that carries a value (a time, an email)
 * is compiled again on every request and pushes the useful statements out of the cache. Kysely
 * inlines some values as literals (a `case ... then <value>`), so this is checked, not assumed:
 * a second round of the public flows, later, for other emails and from other IPs, must run no SQL
 * text the first round did not.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import SqliteDatabase from "better-sqlite3";
import { MINUTE } from "../src/core/clock.js";
import { forgotPassword, nextIp, requestMagicLink, WRONG_PASSWORD } from "./support/flows.js";
import { createHarness, get, login, post, registerVerifiedMember, sessionCookieOf, type Harness } from "./support/harness.js";

/** The public flows a member and an attacker use most, each once, for `email` from `ip`. */
async function round(h: Harness, email: string, ip: string): Promise<void> {
  await registerVerifiedMember(h, email, undefined, ip);
  const cookie = sessionCookieOf(await login(h, email, undefined, { ip }));
  assert.ok(cookie, "logged in");
  assert.equal((await get(h, "/auth/session", { cookie, ip })).statusCode, 200);
  assert.equal((await login(h, email, WRONG_PASSWORD, { ip })).statusCode, 401);
  assert.equal((await forgotPassword(h, email, { ip })).statusCode, 200);
  assert.equal((await forgotPassword(h, `nobody-${email}`, { ip })).statusCode, 200);
  assert.equal((await requestMagicLink(h, email, { ip })).statusCode, 200);
  assert.equal((await post(h, "/auth/resend-verification", { email, "bot-challenge-response": "x" }, { ip })).statusCode, 200);
  assert.equal((await post(h, "/auth/logout", undefined, { cookie, ip })).statusCode, 200);
}

test("SQLite: a later round of the public flows, for other emails and IPs, runs no new SQL text", async (t) => {
  const prepared: string[] = [];
  const prepare = SqliteDatabase.prototype.prepare;
  // Observes what the store's real connections compile; the statements run as always.
  SqliteDatabase.prototype.prepare = function (this: SqliteDatabase.Database, source: string) {
    prepared.push(source);
    return prepare.call(this, source);
  } as typeof prepare;
  t.after(() => (SqliteDatabase.prototype.prepare = prepare));
  // SQLite whatever store this pass tests: the statement cache is SQLite's.
  const dataDir = mkdtempSync(join(tmpdir(), "latch-texts-"));
  const h = await createHarness({ dataDir, env: { DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}` } });
  t.after(async () => {
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  await round(h, "first@example.org", nextIp());
  const seen = new Set(prepared);
  prepared.length = 0;
  h.clock.advance(7 * MINUTE + 123);
  await round(h, "second@example.org", nextIp());
  const added = [...new Set(prepared)].filter((sql) => !seen.has(sql));
  assert.deepEqual(added, [], "every SQL text of the second round was compiled in the first");
});
