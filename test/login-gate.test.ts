/**
 * D30: the password gate in front of the hash (issue 27, finding 3). Three checks of one email may
 * be in flight (D20); the others wait for a turn, woken when a check finishes, on the injected
 * clock, with no cap of 8 and no "too many failed attempts" when nothing failed. A check that
 * can't get its turn in time is 503 `unavailable` with Retry-After and counts nothing. Runs on
 * SQLite and PostgreSQL (LATCH_TEST_STORE). Each test here failed on the code before D30.
 */
import assert from "node:assert/strict";
import { availableParallelism } from "node:os";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { CHECK_TURN_DEADLINE_MS, MAX_CHECKS_WAITING_PER_EMAIL } from "../src/rules.js";
import type { LightMyRequestResponse } from "fastify";
import { assertLoginRefused, retryAfterOf } from "./support/assertions.js";
import { lockoutRow, sessionCount } from "./support/database.js";
import { createHarness, login, registerVerifiedMember, sessionCookieOf, type Harness } from "./support/harness.js";
import { installStoreSeam, until, type Pause, type StoreSeam } from "./support/store-seam.js";

const EMAIL = "ada@example.org";

/**
 * One thread spinning per core, so the logins run on a busy machine; returns what stops them. They
 * are stopped as soon as the logins are answered (and at the latest when the test ends): other
 * test files run beside this one.
 */
function keepCpuBusy(t: { after(fn: () => Promise<unknown>): void }): () => Promise<unknown> {
  const spinners = Array.from({ length: availableParallelism() }, () => new Worker("for (;;) {}", { eval: true }));
  const stop = () => Promise.all(spinners.map((w) => w.terminate()));
  t.after(stop);
  return stop;
}

/** Three correct logins held after they took their places, before the password check. */
async function holdThreeChecks(h: Harness): Promise<{ seam: StoreSeam; held: Pause[]; answers: Promise<LightMyRequestResponse[]> }> {
  const seam = installStoreSeam(h);
  return { seam, ...(await seam.holdEach("members.findMemberByEmail", 3, () => login(h, EMAIL))) };
}

test("D30: 20 concurrent correct logins of one member on a busy CPU give 20 sessions, never 429", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const stopSpinning = keepCpuBusy(t);
  const results = await Promise.all(Array.from({ length: 20 }, () => login(h, EMAIL)));
  await stopSpinning();
  assert.deepEqual(
    results.map((r) => r.statusCode),
    Array(20).fill(200),
    results
      .filter((r) => r.statusCode !== 200)
      .map((r) => r.body)
      .join("\n"),
  );
  assert.equal(new Set(results.map((r) => sessionCookieOf(r))).size, 20);
  assert.equal(await sessionCount(h, recordId), 20);
});

test("D30: a check waiting for a turn is woken when a check finishes: no polling while it waits, no clock movement needed", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const { seam, held, answers } = await holdThreeChecks(h);
  const lockoutReads = seam.count("limits.lockLockout", "limits.findLockout");
  let answered = false;
  const fourth = login(h, EMAIL).finally(() => (answered = true));
  await until(() => lockoutReads.calls > 0, "the fourth check made its first decision");
  await sleep(300);
  assert.equal(answered, false, "the fourth waits while three checks are in flight");
  // Its first decision read the row once; before D30 it polled it every 25 ms (about 12 reads).
  assert.ok(lockoutReads.calls <= 2, `the waiting check read the lockout row ${lockoutReads.calls} times in 300 ms`);
  for (const p of held) p.release();
  const results = [...(await answers), await fourth];
  assert.deepEqual(
    results.map((r) => r.statusCode),
    [200, 200, 200, 200],
    results.map((r) => r.body).join("\n"),
  );
  assert.equal(await sessionCount(h, recordId), 4);
});

test("D30: a check that gets no turn before the deadline is 503 unavailable with Retry-After and counts nothing", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const { seam, held, answers } = await holdThreeChecks(h);
  const lockoutReads = seam.count("limits.lockLockout", "limits.findLockout");
  let answered = false;
  const fourth = login(h, EMAIL).finally(() => (answered = true));
  await until(() => lockoutReads.calls > 0, "the fourth check read the lockout row");
  await sleep(50);
  h.clock.advance(CHECK_TURN_DEADLINE_MS - 1);
  await sleep(50);
  assert.equal(answered, false, "still waiting just before the deadline");
  h.clock.advance(1);
  const refused = await fourth;
  const body = assertLoginRefused(refused, 503, "unavailable");
  assert.doesNotMatch(String(body.message), /too many failed attempts/i);
  assert.ok(retryAfterOf(refused) >= 1, "Retry-After tells when to try again");
  assert.deepEqual(await lockoutRow(h), [3, 0], "only the three held checks hold places; no failure counted");
  for (const p of held) p.release();
  assert.deepEqual(
    (await answers).map((r) => r.statusCode),
    [200, 200, 200],
  );
  assert.equal(await sessionCount(h, recordId), 3);
  assert.equal(await lockoutRow(h), undefined, "the held checks' successes cleared the row");
});

test("D30: past the cap of checks waiting for one email, one more is 503 unavailable at once, never 429", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const { held, answers } = await holdThreeChecks(h);
  const answered: LightMyRequestResponse[] = [];
  const waiting = Array.from({ length: MAX_CHECKS_WAITING_PER_EMAIL + 1 }, () => login(h, EMAIL).then((res) => (answered.push(res), res)));
  await until(
    () => answered.length > 1 || (answered.length === 1 && h.clock.pendingSleeps >= MAX_CHECKS_WAITING_PER_EMAIL),
    "one answered, the others waiting",
  );
  assert.deepEqual(
    answered.map((r) => `${r.statusCode} ${r.json().code}`),
    ["503 unavailable"],
    "only the one beyond the cap is answered before the deadline",
  );
  assertLoginRefused(answered[0]!, 503, "unavailable");
  assert.ok(retryAfterOf(answered[0]!) >= 1);
  h.clock.advance(CHECK_TURN_DEADLINE_MS);
  const codes = new Set((await Promise.all(waiting)).map((r) => `${r.statusCode} ${r.json().code}`));
  assert.deepEqual([...codes], ["503 unavailable"], "the waiting ones got no turn while three were held: 503, not 429");
  assert.deepEqual(await lockoutRow(h), [3, 0], "none of them took a place or counted a failure");
  for (const p of held) p.release();
  assert.deepEqual(
    (await answers).map((r) => r.statusCode),
    [200, 200, 200],
  );
});
