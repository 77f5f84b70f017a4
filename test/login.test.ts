/**
 * Password login through HTTP (spec 4.2; DECISIONS D4, D6), src/flows/login/login.ts: the success body and
 * the session cookie, and one answer for an unknown email and a wrong password. The lockout is in
 * lockout.test.ts, the distinct-IP velocity in velocity.test.ts, the second factor in
 * two-factor.test.ts, login codes in login-code.test.ts, the session afterwards in sessions.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { assertError, assertToken, sessionSetCookie } from "./support/assertions.js";
import { loginCookie } from "./support/flows.js";
import { createHarness, login, OTHER_STRONG_PASSWORD, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD } from "./support/harness.js";

function withoutRequestId(res: LightMyRequestResponse): Record<string, unknown> {
  const { requestId: _requestId, ...rest } = res.json<Record<string, unknown>>();
  return rest;
}

test("login: success body, session cookie attributes and session id form", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org");
  const res = await login(h, "ada@example.org");
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), { authorized: true, recordid: recordId, redirectUrl: "/" });
  const cookie = sessionSetCookie(res);
  assertToken(cookie.value);
  assert.ok(cookie.attributes.includes("httponly"), cookie.attributes.join("; "));
  assert.ok(cookie.attributes.includes("secure"), cookie.attributes.join("; "));
  assert.ok(cookie.attributes.includes("samesite=lax"), cookie.attributes.join("; "));
  assert.ok(cookie.attributes.includes("path=/"), cookie.attributes.join("; "));
  assert.ok(cookie.attributes.includes("max-age=86400"), cookie.attributes.join("; "));
  assert.ok(!cookie.attributes.some((a) => a.startsWith("domain")), cookie.attributes.join("; "));
  // Two logins get two different random ids.
  const other = await loginCookie(h, "ada@example.org");
  assert.notEqual(other, cookie.value);
});

test("login: unknown email and wrong password give identical answers except requestId", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const unknown = await login(h, "nobody@example.org", STRONG_PASSWORD);
  const wrong = await login(h, "ada@example.org", OTHER_STRONG_PASSWORD);
  const unknownBody = assertError(unknown, 401, "invalid_credentials");
  const wrongBody = assertError(wrong, 401, "invalid_credentials");
  assert.equal(unknownBody.authorized, false);
  assert.equal(wrongBody.authorized, false);
  assert.equal(unknown.statusCode, wrong.statusCode);
  assert.deepEqual(withoutRequestId(unknown), withoutRequestId(wrong));
  assert.deepEqual(Object.keys(unknownBody).sort(), ["authorized", "code", "message", "requestId", "success"]);
  assert.equal(sessionCookieOf(unknown), undefined);
  assert.equal(sessionCookieOf(wrong), undefined);
});
