/**
 * SQLite shared by two processes (the server and the CLI, or a second server on the same file):
 * a transaction that read before another process committed must not fail when it writes. With a
 * deferred BEGIN, SQLite refuses that write at once (SQLITE_BUSY_SNAPSHOT, no busy wait) and the
 * request answered 503; found as a flaky CI failure of the kill -9 test, where a second instance
 * delivered webhooks beside the test's own process. Every transaction now starts with BEGIN
 * IMMEDIATE: the other process waits (busy_timeout) instead.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";
import { requestResetLink } from "./support/flows.js";
import { createHarness, OTHER_STRONG_PASSWORD, post, registerVerifiedMember, TEST_STORE } from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";

/** A write by another process, as the CLI would make it; resolves with its exit code. */
function writeFromAnotherProcess(file: string): { done: Promise<number | null>; exited: () => boolean } {
  const script = `const D = require("better-sqlite3"); const db = new D(${JSON.stringify(file)}); db.pragma("busy_timeout = 20000"); db.prepare("update tenants set updated_at = updated_at + 1").run(); db.close();`;
  const child = spawn(process.execPath, ["-e", script], { stdio: "inherit" });
  let exited = false;
  const done = new Promise<number | null>((resolve) => child.once("exit", (code) => ((exited = true), resolve(code))));
  return { done, exited: () => exited };
}

test(
  "SQLite: a transaction that read before another process committed still writes (BEGIN IMMEDIATE; the other process waits)",
  { skip: TEST_STORE === "postgres" ? "SQLite only: PostgreSQL has no snapshot upgrade" : false },
  async (t) => {
    const h = await createHarness();
    t.after(() => h.close());
    await registerVerifiedMember(h, "two.processes@example.org");
    const link = await requestResetLink(h, "two.processes@example.org");
    const seam = installStoreSeam(h);
    // The reset's transaction has read the member row and not yet written anything.
    const read = seam.pause("members.findMemberById", { when: "after" });
    const resetting = post(h, "/auth/reset-password", { recordId: link.recordId, token: link.token, newPassword: OTHER_STRONG_PASSWORD });
    await read.reached;
    const other = writeFromAnotherProcess(h.config.databaseUrl.slice("sqlite:".length));
    // Long enough for the other process to commit, were it let in.
    await sleep(1500);
    const waited = !other.exited();
    read.release();
    const res = await resetting;
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(await other.done, 0, "the other process's write went through after ours");
    assert.ok(waited, "the other process waited for the transaction that began first");
  },
);
