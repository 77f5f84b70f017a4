/**
 * Forgot and reset password through HTTP (spec 4.3, 7, 8.2; DECISIONS D5, D7, D15, D21),
 * src/flows/password/password-reset.ts: one answer for every email, the reset webhook, sessions ended, the
 * link's lifetime and single use, the rate limits, and what a reset voids or clears. Expiry is
 * driven by the harness's ManualClock; nothing sleeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { HOUR, SECOND } from "../src/core/clock.js";
import { assertError, assertMessageSuccess, assertToken, failedRulesOf, retryAfterOf } from "./support/assertions.js";
import {
  adminHeaders,
  forgotPassword,
  lockMember,
  loginCookie,
  magicLinkFor,
  nextIp,
  registerPending,
  requestResetLink,
  resetPassword,
  sessionStatus,
  THIRD_STRONG_PASSWORD,
} from "./support/flows.js";
import { createHarness, deliverWebhooks, get, login, OTHER_STRONG_PASSWORD, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";

// ---------------------------------------------------------------------------------------------
// POST /auth/forgot-password
// ---------------------------------------------------------------------------------------------

test("forgot-password: byte-identical answers for existing, unknown and locked accounts; only the existing one gets a reset webhook", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org");
  const lockedId = await registerVerifiedMember(h, "locked@example.org");
  await lockMember(h, lockedId);
  const before = h.receiver.received.length;

  const existing = await forgotPassword(h, "ada@example.org");
  const unknown = await forgotPassword(h, "nobody@example.org");
  const locked = await forgotPassword(h, "locked@example.org");
  assertMessageSuccess(existing);
  assert.equal(unknown.statusCode, 200);
  assert.equal(locked.statusCode, 200);
  assert.equal(unknown.body, existing.body);
  assert.equal(locked.body, existing.body);
  assert.equal(unknown.headers["content-type"], existing.headers["content-type"]);
  assert.equal(locked.headers["content-type"], existing.headers["content-type"]);

  await deliverWebhooks(h);
  assert.equal(h.receiver.received.length, before + 1);
  const hooks = h.receiver.ofType("password_reset");
  assert.equal(hooks.length, 1);
  const hook = hooks[0]!;
  assert.deepEqual(Object.keys(hook.body).sort(), ["email", "event_type", "name", "recordid", "resetLink"]);
  assert.equal(hook.body.event_type, "password_reset");
  assert.equal(hook.body.recordid, recordId);
  assert.equal(typeof hook.body.recordid, "string");
  assert.equal(hook.body.email, "ada@example.org");
  assert.equal(hook.body.name, "Ada Lovelace");
  const match = /^https:\/\/([^/]+)\/reset-password\/([0-9]+)\/([A-Za-z0-9_-]+)$/.exec(hook.body.resetLink!);
  assert.ok(match, `unexpected link form ${hook.body.resetLink}`);
  assert.equal(match[1], h.tenant.domain);
  assert.equal(match[2], recordId);
  assertToken(match[3]!);
});

test("forgot-password: invalidates the member's existing sessions", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  await registerVerifiedMember(h, "bob@example.org");
  const first = await loginCookie(h, "ada@example.org");
  const second = await loginCookie(h, "ada@example.org");
  const bob = await loginCookie(h, "bob@example.org");
  assertMessageSuccess(await forgotPassword(h, "ada@example.org"));
  assert.equal(await sessionStatus(h, first), 401);
  assert.equal(await sessionStatus(h, second), 401);
  assert.equal(await sessionStatus(h, bob), 200, "another member's session is untouched");
});

test("forgot-password: the 11th request from one IP within an hour is 429 with Retry-After; after an hour it passes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const ip = "192.0.2.88";
  for (let i = 1; i <= 10; i++) {
    const res = await forgotPassword(h, `someone${i}@example.org`, { ip });
    assert.equal(res.statusCode, 200, `request ${i}: ${res.body}`);
  }
  const eleventh = await forgotPassword(h, "ada@example.org", { ip });
  assertError(eleventh, 429, "rate_limited");
  const retryAfter = retryAfterOf(eleventh);
  assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  await deliverWebhooks(h);
  assert.equal(h.receiver.ofType("password_reset").length, 0, "a refused request sends nothing");
  h.clock.advance(HOUR);
  assertMessageSuccess(await forgotPassword(h, "ada@example.org", { ip }));
});

test("forgot-password: 5 or more IPs for one email within an hour get 429, known or unknown email alike (spec 7, 8.2)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const statusesFor = async (email: string): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await forgotPassword(h, email, { ip: nextIp() })).statusCode);
    return statuses;
  };
  const known = await statusesFor("ada@example.org");
  assert.deepEqual(known.slice(0, 4), [200, 200, 200, 200], known.join(","));
  assert.equal(known[5], 429, `the 6th distinct IP must be refused: ${known.join(",")}`);
  const last = await forgotPassword(h, "ada@example.org", { ip: nextIp() });
  assertError(last, 429, "rate_limited");
  retryAfterOf(last);
  // The refusal must not reveal whether the email is registered.
  assert.deepEqual(await statusesFor("nobody@example.org"), known);
  h.clock.advance(HOUR);
  assertMessageSuccess(await forgotPassword(h, "ada@example.org", { ip: nextIp() }));
});

// ---------------------------------------------------------------------------------------------
// POST /auth/reset-password
// ---------------------------------------------------------------------------------------------

test("reset-password: success body; the new password works, the old one doesn't; sessions end; the token is single use", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const { recordId, token } = await requestResetLink(h, "ada@example.org");
  // Sessions created after the forgot request must also end on reset.
  const cookie = await loginCookie(h, "ada@example.org");
  assertMessageSuccess(await resetPassword(h, recordId, token, OTHER_STRONG_PASSWORD));
  assert.equal(await sessionStatus(h, cookie), 401);
  assertError(await login(h, "ada@example.org", STRONG_PASSWORD), 401, "invalid_credentials");
  assert.equal((await login(h, "ada@example.org", OTHER_STRONG_PASSWORD)).statusCode, 200);
  assertError(await resetPassword(h, recordId, token, THIRD_STRONG_PASSWORD), 400, "invalid_token");
  assertError(await login(h, "ada@example.org", THIRD_STRONG_PASSWORD), 401, "invalid_credentials");
});

test("reset-password: the token lasts 1 h by default and is invalid_token after", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "early@example.org");
  await registerVerifiedMember(h, "late@example.org");
  const early = await requestResetLink(h, "early@example.org");
  const late = await requestResetLink(h, "late@example.org");
  h.clock.advance(HOUR - SECOND);
  assertMessageSuccess(await resetPassword(h, early.recordId, early.token, OTHER_STRONG_PASSWORD));
  h.clock.advance(2 * SECOND);
  assertError(await resetPassword(h, late.recordId, late.token, OTHER_STRONG_PASSWORD), 400, "invalid_token");
  assert.equal((await login(h, "late@example.org", STRONG_PASSWORD)).statusCode, 200);
});

test("reset-password: a weak or breached new password is refused and leaves the token valid (D15)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const { recordId, token } = await requestResetLink(h, "ada@example.org");
  const weak = assertError(await resetPassword(h, recordId, token, "short"), 400, "weak_password");
  assert.ok(failedRulesOf(weak).includes("min_length"));
  assertError(await resetPassword(h, recordId, token, "Password123"), 400, "breached_password");
  assert.equal((await login(h, "ada@example.org", STRONG_PASSWORD)).statusCode, 200, "password unchanged");
  assertMessageSuccess(await resetPassword(h, recordId, token, OTHER_STRONG_PASSWORD));
  assert.equal((await login(h, "ada@example.org", OTHER_STRONG_PASSWORD)).statusCode, 200);
});

test("reset-password: a second forgot-password voids the first link (D7)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const first = await requestResetLink(h, "ada@example.org");
  const second = await requestResetLink(h, "ada@example.org");
  assert.notEqual(first.token, second.token);
  assertError(await resetPassword(h, first.recordId, first.token, OTHER_STRONG_PASSWORD), 400, "invalid_token");
  assertMessageSuccess(await resetPassword(h, second.recordId, second.token, OTHER_STRONG_PASSWORD));
});

test("reset-password: clears Password Change Pending to Unlocked", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org");
  const required = await post(h, "/auth/admin/require-password-change", { recordId }, { headers: adminHeaders(h) });
  assert.equal(required.statusCode, 200, required.body);
  assertError(await login(h, "ada@example.org"), 403, "password_change_required");
  const link = await requestResetLink(h, "ada@example.org");
  assertMessageSuccess(await resetPassword(h, link.recordId, link.token, OTHER_STRONG_PASSWORD));
  const cookie = await loginCookie(h, "ada@example.org", OTHER_STRONG_PASSWORD);
  const session = await get(h, "/auth/session", { cookie });
  assert.equal(session.statusCode, 200, session.body);
  assert.equal(session.json().passwordChangePending, false);
  // Status is Unlocked: the admin can require a change again (only allowed from an active account).
  const status = await post(h, "/auth/lock-account", { recordId, action: "unlock" }, { headers: adminHeaders(h) });
  assert.equal(status.statusCode, 200, status.body);
  assert.equal(status.json().authentication_status, "Unlocked");
});

test("reset-password: resetting a pending (unverified) account verifies it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerPending(h, "ada@example.org");
  assertError(await login(h, "ada@example.org"), 403, "email_not_verified");
  const link = await requestResetLink(h, "ada@example.org");
  assertMessageSuccess(await resetPassword(h, link.recordId, link.token, OTHER_STRONG_PASSWORD));
  const res = await login(h, "ada@example.org", OTHER_STRONG_PASSWORD);
  assert.equal(res.statusCode, 200, res.body);
});

test("D21: a password reset voids the member's magic links and every other reset link", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const magic = await magicLinkFor(h, "ada@example.org");
  const reset = await requestResetLink(h, "ada@example.org");
  assertMessageSuccess(await resetPassword(h, reset.recordId, reset.token, OTHER_STRONG_PASSWORD));
  assertError(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, { "bot-challenge-response": "x" }), 400, "invalid_token");
});
