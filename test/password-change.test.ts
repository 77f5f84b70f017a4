/**
 * Change password through HTTP (spec 4.3; DECISIONS D21), src/flows/password/password-change.ts: the checks,
 * the sessions it ends and keeps, and the links it voids. Races with a lock or a required change
 * are in state-races.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError, assertMessageSuccess, failedRulesOf } from "./support/assertions.js";
import { changePassword, loginCookie, magicLinkFor, requestResetLink, resetPassword, sessionStatus, THIRD_STRONG_PASSWORD } from "./support/flows.js";
import { createHarness, login, OTHER_STRONG_PASSWORD, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";

test("change-password: needs a session; a wrong current password is 401 invalid_credentials; a weak new one is weak_password", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  assertError(await changePassword(h, undefined, STRONG_PASSWORD, OTHER_STRONG_PASSWORD), 401, "unauthorized");
  const cookie = await loginCookie(h, "ada@example.org");
  assertError(await changePassword(h, cookie, THIRD_STRONG_PASSWORD, OTHER_STRONG_PASSWORD), 401, "invalid_credentials");
  const weak = assertError(await changePassword(h, cookie, STRONG_PASSWORD, "alllowercase1"), 400, "weak_password");
  assert.deepEqual(failedRulesOf(weak), ["uppercase"]);
  assertError(await changePassword(h, cookie, STRONG_PASSWORD, "Password123"), 400, "breached_password");
  // Nothing changed.
  assert.equal(await sessionStatus(h, cookie), 200);
  assert.equal((await login(h, "ada@example.org", STRONG_PASSWORD)).statusCode, 200);
});

test("change-password: success keeps this session, ends the member's other sessions; the new password works", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  await registerVerifiedMember(h, "bob@example.org");
  const current = await loginCookie(h, "ada@example.org");
  const other = await loginCookie(h, "ada@example.org");
  const bob = await loginCookie(h, "bob@example.org");
  assertMessageSuccess(await changePassword(h, current, STRONG_PASSWORD, OTHER_STRONG_PASSWORD));
  assert.equal(await sessionStatus(h, current), 200);
  assert.equal(await sessionStatus(h, other), 401);
  assert.equal(await sessionStatus(h, bob), 200);
  assert.equal((await login(h, "ada@example.org", OTHER_STRONG_PASSWORD)).statusCode, 200);
  assertError(await login(h, "ada@example.org", STRONG_PASSWORD), 401, "invalid_credentials");
});

test("D21: a password change voids every outstanding reset and magic link of the member", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  // Asked first: forgot-password ends the member's sessions (spec 4.3).
  const reset = await requestResetLink(h, "ada@example.org");
  const magic = await magicLinkFor(h, "ada@example.org");
  const cookie = await loginCookie(h, "ada@example.org");
  assertMessageSuccess(await changePassword(h, cookie, STRONG_PASSWORD, OTHER_STRONG_PASSWORD));
  assertError(await resetPassword(h, reset.recordId, reset.token, THIRD_STRONG_PASSWORD), 400, "invalid_token");
  assertError(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, { "bot-challenge-response": "x" }), 400, "invalid_token");
  assert.equal((await login(h, "ada@example.org", OTHER_STRONG_PASSWORD)).statusCode, 200, "the changed password stands");
});
