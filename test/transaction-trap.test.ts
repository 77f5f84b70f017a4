/**
 * Issue 28, the transaction trap: inside `store.transaction(work)` the outer store is out of bounds.
 * Before, a read through it never returned on SQLite (the one connection waited on itself) and ran
 * outside the transaction on PostgreSQL, silently. Now it throws at once, on both stores, and the
 * transaction rolls back; work a transaction merely starts (a background task, the dispatcher's
 * wake-up) still runs on the outer store after it. Runs on SQLite and PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { OuterStoreInTransactionError } from "../src/store/transaction-scope.js";
import { tenantIdOf } from "./support/flows.js";
import { createHarness, registerVerifiedMember } from "./support/harness.js";

const EMAIL = "ada@example.org";

/** Settles `promise`, or fails after 5 s: the trap on SQLite was a promise that never settled. */
async function settledWithin<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  const timeout = sleep(5000).then(() => assert.fail("did not settle within 5 s: the one connection is waiting on itself"));
  const [result] = await Promise.race([Promise.allSettled([promise]), timeout]);
  return result;
}

function assertRefused(result: PromiseSettledResult<unknown>, what: string): void {
  assert.equal(result.status, "rejected", `${what}: the outer store answered inside the transaction`);
  assert.ok(result.reason instanceof OuterStoreInTransactionError, `${what}: ${String(result.reason)}`);
}

test("issue 28: the outer store used inside store.transaction throws at once (a read, a write, a nested transaction, the hot reader), and the transaction rolls back", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = Number(await registerVerifiedMember(h, EMAIL));
  const id = await tenantIdOf(h);
  const store = h.deps.store;
  const uses: Array<[string, () => Promise<unknown>]> = [
    ["a read", () => store.members.findMemberById(id, recordId)],
    ["a write", () => store.members.updateName(id, recordId, "Outside", h.clock.now())],
    ["a nested transaction", () => store.transaction((inner) => inner.members.findMemberById(id, recordId))],
    ["the hot reader (the session check)", () => store.sessions.findLiveSession(id, "0".repeat(64), h.clock.now())],
  ];
  for (const [what, use] of uses) {
    const result = await settledWithin(
      store.transaction(async (tx) => {
        await tx.members.updateName(id, recordId, "Inside", h.clock.now());
        await use();
      }),
    );
    assertRefused(result, what);
  }
  const row = await h.db.selectFrom("members").select("name").where("id", "=", recordId).executeTakeFirstOrThrow();
  assert.equal(row.name, "Ada Lovelace", "each transaction rolled back; nothing ran outside one");
  // The outer store works again once the transaction is over.
  assert.equal((await store.members.findMemberById(id, recordId))?.recordId, recordId);
});

test("issue 28: work a transaction starts (a background task, the dispatcher's wake-up) runs on the outer store after it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = Number(await registerVerifiedMember(h, EMAIL));
  const id = await tenantIdOf(h);
  let readAfter: string | undefined;
  await h.deps.store.transaction(async (tx) => {
    await tx.members.updateName(id, recordId, "Renamed", h.clock.now());
    h.deps.background.run("read after the transaction", async () => {
      readAfter = (await h.deps.store.members.findMemberById(id, recordId))?.name;
    });
    h.deps.webhooks.notify();
  });
  await h.deps.background.drain();
  assert.equal(readAfter, "Renamed", "the task ran after the commit, on the outer store");
  assert.ok(!h.logs.some((line) => line.includes("OuterStoreInTransactionError")), "no task failed on the guard");
});
