/**
 * D20: member state changes are atomic. Each race is forced at the store seam: one request is
 * held at a store call, the other runs to the end (or is held inside its transaction), then the
 * first goes on. The same file runs on SQLite and PostgreSQL (LATCH_TEST_STORE). Each case failed
 * on the code before D20 (issue 13, findings 4 and 5).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { LightMyRequestResponse } from "fastify";
import { seededRandom, type Random } from "../src/core/random.js";
import { processEmailRequests } from "../src/flows/kernel/email-requests.js";
import { assertLoginRefused } from "./support/assertions.js";
import { lockoutRow, memberField, sessionCount } from "./support/database.js";
import { adminHeaders, changePassword, lockMember, operatorHeaders } from "./support/flows.js";
import {
  createHarness,
  login,
  OTHER_STRONG_PASSWORD,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";
import { installStoreSeam, letItQueue } from "./support/store-seam.js";

const EMAIL = "ada@example.org";

async function adminPost(h: Harness, url: string, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
  const res = await post(h, url, body, { headers: adminHeaders(h) });
  assert.equal(res.statusCode, 200, res.body);
  return res;
}

test("D20: a lock that commits after the login's password matched wins: 403 account_locked and no session, not even after an unlock", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const seam = installStoreSeam(h);
  const read = seam.pause("members.findMemberByEmail", { when: "after" });
  const loggingIn = login(h, EMAIL);
  await read.reached;
  await lockMember(h, recordId);
  read.release();
  const res = await loggingIn;
  assertLoginRefused(res, 403, "account_locked");
  assert.equal(await sessionCount(h, recordId), 0, "no session row outlives the lock");
  await adminPost(h, "/auth/lock-account", { recordId, action: "unlock" });
  assert.equal(await sessionCount(h, recordId), 0, "nothing comes back with the unlock");
});

test("D20: a login whose session is created while a lock is committing gets no session that survives the lock", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const seam = installStoreSeam(h);
  // The lock is held inside its transaction, its status written and not yet committed.
  const locking = seam.pause("members.updateStatus", { when: "after" });
  const lockDone = lockMember(h, recordId);
  await locking.reached;
  const sessionRead = seam.watch("members.findMemberById");
  const loggingIn = login(h, EMAIL);
  await letItQueue(sessionRead);
  locking.release();
  await lockDone;
  const res = await loggingIn;
  assertLoginRefused(res, 403, "account_locked");
  await adminPost(h, "/auth/lock-account", { recordId, action: "unlock" });
  assert.equal(await sessionCount(h, recordId), 0, "the login left no session to come back with the unlock");
  const cookie = sessionCookieOf(res);
  assert.equal(cookie, undefined, "no cookie was set");
});

/** A member changes their password; `meanwhile` runs after the change read the member and before it writes. */
async function changePasswordAround(h: Harness, meanwhile: (recordId: string) => Promise<unknown>): Promise<{ recordId: string; res: LightMyRequestResponse }> {
  const recordId = await registerVerifiedMember(h, EMAIL);
  const cookie = sessionCookieOf(await login(h, EMAIL))!;
  const seam = installStoreSeam(h);
  const read = seam.pause("members.findMemberById", { when: "after" });
  const changing = changePassword(h, cookie, STRONG_PASSWORD, OTHER_STRONG_PASSWORD);
  await read.reached;
  await meanwhile(recordId);
  read.release();
  return { recordId, res: await changing };
}

test("D20: change-password does not write back a stale status: a lock committed while the new password was hashed stays, and the change is refused", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, res } = await changePasswordAround(h, (id) => lockMember(h, id));
  assert.equal(res.statusCode, 401, res.body);
  assert.equal(await memberField(h, recordId, "status"), "Locked", "the admin's lock holds");
  await adminPost(h, "/auth/lock-account", { recordId, action: "unlock" });
  assert.equal((await login(h, EMAIL, OTHER_STRONG_PASSWORD)).statusCode, 401, "the refused change stored nothing");
  assert.equal((await login(h, EMAIL, STRONG_PASSWORD)).statusCode, 200);
});

test("D20: change-password does not undo a required password change that committed while it hashed", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, res } = await changePasswordAround(h, (id) => adminPost(h, "/auth/admin/require-password-change", { recordId: id }));
  assert.equal(res.statusCode, 401, "the session that asked was revoked by the admin");
  assert.equal(await memberField(h, recordId, "status"), "Password Change Pending");
});

test("D20: N concurrent correct logins of one member give N sessions, never 429", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const results = await Promise.all(Array.from({ length: 8 }, () => login(h, EMAIL)));
  assert.deepEqual(
    results.map((r) => r.statusCode),
    Array(8).fill(200),
    results.map((r) => r.body).join("\n"),
  );
  assert.equal(new Set(results.map((r) => sessionCookieOf(r))).size, 8);
  assert.equal(await sessionCount(h, recordId), 8);
});

test("D20: a fourth correct login while three checks of the member are in flight waits for a place instead of getting 429", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const seam = installStoreSeam(h);
  // Three logins are held after their reservation, before their password check.
  const { held, answers } = await seam.holdEach("members.findMemberByEmail", 3, () => login(h, EMAIL));
  const fourth = login(h, EMAIL);
  await sleep(200);
  for (const p of held) p.release();
  const results = [...(await answers), await fourth];
  assert.deepEqual(
    results.map((r) => r.statusCode),
    [200, 200, 200, 200],
    results.map((r) => r.body).join("\n"),
  );
  assert.equal(await sessionCount(h, recordId), 4);
});

test("D20: of two forgot-password requests handled at once by two workers, one reset link works", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  for (let i = 0; i < 2; i++) {
    const res = await h.app.inject({
      method: "POST",
      url: "/auth/forgot-password",
      payload: { email: EMAIL, "bot-challenge-response": "x" },
      headers: { "x-tenant-domain": h.tenant.domain },
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  const waiting = await h.deps.store.emailRequests.listWaitingIds(10);
  assert.equal(waiting.length, 2);
  const seam = installStoreSeam(h);
  // Worker A takes a request and is held with its token written, not committed.
  const claimed = seam.watch("emailRequests.claimEmailRequest");
  const issued = seam.pause("tokens.replaceToken", { when: "after" });
  const workerA = processEmailRequests(h.deps);
  const [claimedId] = await claimed;
  await issued.reached;
  // Worker B (another instance) starts with the other request.
  const other = waiting.indexOf(waiting.find((id) => id !== claimedId)!);
  const workerB = processEmailRequests({ ...h.deps, random: startingAt(other, seededRandom("worker-b")) });
  await letItQueue(seam.watch("members.findMemberByEmail"));
  issued.release();
  await Promise.all([workerA, workerB]);
  const live = await h.db
    .selectFrom("one_time_tokens")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("member_id", "=", Number(recordId))
    .where("kind", "=", "password_reset")
    .where("expires_at", ">", h.clock.now())
    .executeTakeFirstOrThrow();
  assert.equal(Number(live.n), 1, "D7: only the newest reset link works");
});

/** A worker's random whose first draw (where it starts in the batch) is `index`. */
function startingAt(index: number, rest: Random): Random {
  let first = true;
  return {
    bytes(length: number): Buffer {
      if (!first || length !== 2) return rest.bytes(length);
      first = false;
      const start = Buffer.alloc(2);
      start.writeUInt16BE(index);
      return start;
    },
  };
}

test("D21: two concurrent tenant-settings updates of different keys both land (compare and swap, no lost update)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const patch = (settings: Record<string, unknown>) =>
    h.app.inject({ method: "PATCH", url: `/operator/tenants/${h.tenant.domain}`, headers: operatorHeaders(), payload: { settings } });
  const seam = installStoreSeam(h);
  // A read the settings and is held before it writes them; B reads, writes and answers meanwhile.
  const held = seam.pause("tenants.updateTenantSettings");
  const first = patch({ sessionTier: "15m" });
  await held.reached;
  const second = await patch({ allowedOrigins: ["https://app.example.org"] });
  assert.equal(second.statusCode, 200, second.body);
  held.release();
  const firstAnswer = await first;
  assert.equal(firstAnswer.statusCode, 200, firstAnswer.body);
  const stored = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.settings;
  assert.equal(stored.sessionTier, "15m", "the first update landed");
  assert.deepEqual(stored.allowedOrigins, ["https://app.example.org"], "the second update was not overwritten");
  assert.deepEqual(firstAnswer.json().settings.allowedOrigins, ["https://app.example.org"], "the first answer shows the settings as stored");
});

test("D22: erasing a member while the email worker holds a request for them: both finish (no deadlock), nothing is sent", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const seam = installStoreSeam(h);
  // The worker claims the waiting forgot-password request and is held before it locks the member.
  const claimed = seam.pause("emailRequests.claimEmailRequest", { when: "after" });
  const asked = await h.app.inject({
    method: "POST",
    url: "/auth/forgot-password",
    payload: { email: EMAIL, "bot-challenge-response": "x" },
    headers: { "x-tenant-domain": h.tenant.domain },
  });
  assert.equal(asked.statusCode, 200, asked.body);
  const worker = processEmailRequests(h.deps);
  await claimed.reached;
  const erased = h.app.inject({
    method: "DELETE",
    url: `/auth/admin/members/${recordId}`,
    headers: { "x-tenant-domain": h.tenant.domain, ...adminHeaders(h) },
  });
  await letItQueue(seam.watch("members.deleteMember"));
  claimed.release();
  await worker;
  const answer = await erased;
  assert.equal(answer.statusCode, 200, answer.body);
  const tokens = await h.db.selectFrom("one_time_tokens").select("kind").where("member_id", "=", Number(recordId)).execute();
  assert.deepEqual(tokens, [], "no reset link outlives the erasure");
});

test("D20: correct logins that fail after taking their place (the database fails under them) give it back: no wait, and no lockout after 60 s", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const seam = installStoreSeam(h);
  seam.fail("sessions.insertSession", 3);
  for (let i = 0; i < 3; i++) {
    const failed = await login(h, EMAIL);
    assert.equal(failed.statusCode, 503, failed.body);
  }
  assert.deepEqual(await lockoutRow(h), [0, 0], "the places were given back, no failure counted");
  const next = await login(h, EMAIL);
  assert.equal(next.statusCode, 200, `not a wait for places never given back (429 busy): ${next.body}`);
  h.clock.advance(61 * 1000);
  assert.equal((await login(h, EMAIL)).statusCode, 200, "no lockout from checks that never answered");
});
