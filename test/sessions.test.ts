/**
 * Sessions through HTTP (spec 2.2; DECISIONS D1, D6), src/flows/kernel/sessions.ts: the session check, its
 * lifetime and the tenant's sessionTier, logout, and a cookie of one tenant on another. A member's
 * own session list is in self-service.test.ts. Expiry is driven by the ManualClock; nothing sleeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { assertError, assertMessageSuccess, sessionSetCookie } from "./support/assertions.js";
import { addOtherTenant, loginCookie, OTHER_DOMAIN, sessionStatus } from "./support/flows.js";
import { createHarness, get, login, OTHER_STRONG_PASSWORD, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";

test("GET /auth/session: session data fields with exp - iat = 86400; 401 without a cookie", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org");
  const loginAt = Math.floor(h.clock.now() / 1000);
  const cookie = await loginCookie(h, "ada@example.org");
  const res = await get(h, "/auth/session", { cookie });
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), {
    recordId,
    hostname: h.tenant.domain,
    iat: loginAt,
    exp: loginAt + 86400,
    is2FAEnabled: false,
    require2FASetup: false,
    passwordChangePending: false,
    loginContext: null,
    attemptedPath: null,
  });
  assertError(await get(h, "/auth/session"), 401, "unauthorized");
  assertError(await get(h, "/auth/session", { cookie: "not-a-real-session-id-aaaaaaaaaaaaaaaaaaaaa" }), 401, "unauthorized");
});

test("GET /auth/session: the session expires after its TTL", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const cookie = await loginCookie(h, "ada@example.org");
  h.clock.advance(86400 * SECOND - SECOND);
  assert.equal(await sessionStatus(h, cookie), 200);
  h.clock.advance(2 * SECOND);
  assertError(await get(h, "/auth/session", { cookie }), 401, "unauthorized");
});

test("sessionTier 15m: Max-Age=900 and exp - iat = 900", async (t) => {
  const h = await createHarness({ settings: { sessionTier: "15m" } });
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const res = await login(h, "ada@example.org");
  assert.equal(res.statusCode, 200, res.body);
  const cookie = sessionSetCookie(res);
  assert.ok(cookie.attributes.includes("max-age=900"), cookie.attributes.join("; "));
  const session = await get(h, "/auth/session", { cookie: cookie.value });
  assert.equal(session.statusCode, 200, session.body);
  const data = session.json<{ iat: number; exp: number }>();
  assert.equal(data.exp - data.iat, 900);
  h.clock.advance(15 * MINUTE + SECOND);
  assert.equal(await sessionStatus(h, cookie.value), 401);
});

test("logout: 200 {success, message}, clears the cookie, and the session is gone", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const cookie = await loginCookie(h, "ada@example.org");
  const other = await loginCookie(h, "ada@example.org");
  const res = await post(h, "/auth/logout", {}, { cookie });
  assertMessageSuccess(res);
  const cleared = sessionSetCookie(res);
  assert.equal(cleared.value, "");
  assert.ok(
    cleared.attributes.includes("max-age=0") || cleared.attributes.some((a) => a.startsWith("expires=") && Date.parse(a.slice(8)) <= 0),
    cleared.attributes.join("; "),
  );
  assert.ok(cleared.attributes.includes("path=/"), cleared.attributes.join("; "));
  assertError(await get(h, "/auth/session", { cookie }), 401, "unauthorized");
  // Only that session ended.
  assert.equal(await sessionStatus(h, other), 200);
});

test("tenants: a session cookie of tenant A is not a session on tenant B", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await addOtherTenant(h);
  await registerVerifiedMember(h, "ada@example.org");
  const cookie = await loginCookie(h, "ada@example.org");
  assert.equal(await sessionStatus(h, cookie), 200);
  assertError(await get(h, "/auth/session", { cookie, domain: OTHER_DOMAIN }), 401, "unauthorized");
  const change = await post(
    h,
    "/auth/change-password",
    { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD },
    { cookie, domain: OTHER_DOMAIN },
  );
  assertError(change, 401, "unauthorized");
  // Logging out on B does not end A's session.
  await post(h, "/auth/logout", {}, { cookie, domain: OTHER_DOMAIN });
  assert.equal(await sessionStatus(h, cookie), 200);
});
