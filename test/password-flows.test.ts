/**
 * Password flows through HTTP (spec 2, 3, 4.1-4.3, 7, 8; DECISIONS D4-D8, D12, D15):
 * registration, email verification, login, sessions, logout, forgot/reset/change password,
 * the public resend of the verification email, registration rate limits and tenant isolation.
 * Expiry is driven by the harness's ManualClock; nothing sleeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { HOUR, MINUTE, SECOND } from "../src/core/clock.js";
import { assertError, assertMessageSuccess, assertVerified, assertRegistered, assertToken, retryAfterOf, sessionSetCookie } from "./support/assertions.js";
import {
  addOtherTenant,
  adminHeaders,
  forgotPassword,
  lastWebhookFor,
  lockMember,
  magicLinkFor,
  nextIp,
  OTHER_DOMAIN,
  requestResetLink,
  resetPassword,
  sessionStatus,
  webhooksFor,
  yieldingTransactions,
} from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
  type PostOptions,
} from "./support/harness.js";

const THIRD_STRONG_PASSWORD = "Quiet-Lantern-77-Orbit";

async function register(h: Harness, email: string, password = STRONG_PASSWORD, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/register-password", { email, name: "Ada Lovelace", password, "bot-challenge-response": "x" }, { ip: nextIp(), ...options });
}

/** Registers and delivers; returns the verification link's parts (member stays pending). */
async function registerPending(h: Harness, email: string, password = STRONG_PASSWORD, options: PostOptions = {}): Promise<{ recordId: string; token: string }> {
  const res = await register(h, email, password, options);
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "verify_email", email, options.domain ?? h.tenant.domain).body.verificationLink!);
  return { recordId: link.recordId, token: link.token };
}

async function verify(h: Harness, recordId: string, token: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/verify-email", { recordId, token }, options);
}

async function resend(h: Harness, email: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/resend-verification", { email, "bot-challenge-response": "x" }, options);
}

async function loginCookie(h: Harness, email: string, password = STRONG_PASSWORD, options: PostOptions = {}): Promise<string> {
  const res = await login(h, email, password, options);
  assert.equal(res.statusCode, 200, res.body);
  const cookie = sessionCookieOf(res);
  assert.ok(cookie, "no session cookie");
  return cookie;
}

function withoutRequestId(res: LightMyRequestResponse): Record<string, unknown> {
  const { requestId: _requestId, ...rest } = res.json() as Record<string, unknown>;
  return rest;
}

// ---------------------------------------------------------------------------------------------
// Registration and verification (spec 4.1, D5, D7, D8)
// ---------------------------------------------------------------------------------------------

test("register-password: success body, record id range, one verify_email webhook with the exact fields and link form", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = assertRegistered(await register(h, "ada@example.org")).recordid;

  assert.equal(await deliverWebhooks(h), 1);
  const hooks = h.receiver.ofType("verify_email");
  assert.equal(hooks.length, 1);
  assert.equal(h.receiver.received.length, 1);
  const hook = hooks[0]!;
  assert.deepEqual(Object.keys(hook.body).sort(), ["email", "event_type", "name", "recordid", "verificationLink"]);
  assert.equal(hook.body.event_type, "verify_email");
  assert.equal(typeof hook.body.recordid, "string");
  assert.equal(hook.body.recordid, recordId);
  assert.equal(hook.body.email, "ada@example.org");
  assert.equal(hook.body.name, "Ada Lovelace");
  const link = hook.body.verificationLink!;
  const match = /^https:\/\/([^/]+)\/email-verified\/([0-9]+)\/([A-Za-z0-9_-]+)$/.exec(link);
  assert.ok(match, `unexpected link form ${link}`);
  assert.equal(match[1], h.tenant.domain);
  assert.equal(match[2], recordId);
  assertToken(match[3]!);
});

test("register-password: before verification the right password gives 403 email_not_verified, a wrong one 401 invalid_credentials (D4)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerPending(h, "ada@example.org");
  const right = await login(h, "ada@example.org", STRONG_PASSWORD);
  const rightBody = assertError(right, 403, "email_not_verified");
  assert.equal(rightBody.authorized, false);
  assert.equal(sessionCookieOf(right), undefined);
  const wrong = await login(h, "ada@example.org", OTHER_STRONG_PASSWORD);
  const wrongBody = assertError(wrong, 401, "invalid_credentials");
  assert.equal(wrongBody.authorized, false);
});

test("register-password: the email is stored trimmed and lowercased", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const res = await register(h, " Ada@Example.ORG ");
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const hook = h.receiver.last("verify_email");
  assert.equal(hook.body.email, "ada@example.org");
  const link = parseLink(hook.body.verificationLink!);
  assertVerified(await verify(h, link.recordId, link.token));
  const ok = await login(h, "ada@example.org");
  assert.equal(ok.statusCode, 200, ok.body);
  // And a differently-cased login finds the same member.
  const upper = await login(h, "  ADA@example.org");
  assert.equal(upper.statusCode, 200, upper.body);
  assert.equal(upper.json().recordid, link.recordId);
});

test("register-password: an existing pending email gets a decoy id and a link of its own; each link sets its own registration's password (D5, D18)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const first = await registerPending(h, "ada@example.org");
  const decoy = assertRegistered(await register(h, "ada@example.org", OTHER_STRONG_PASSWORD)).recordid;
  assert.notEqual(decoy, first.recordId);

  assert.equal(await deliverWebhooks(h), 1);
  const hooks = webhooksFor(h, "verify_email", "ada@example.org");
  assert.equal(hooks.length, 2);
  const second = parseLink(hooks[1]!.body.verificationLink!);
  assert.equal(second.recordId, first.recordId, "the second link goes to the real member, not the decoy");
  assert.notEqual(second.token, first.token);

  // The decoy id is stored nowhere.
  const decoyLookup = await post(h, "/auth/lock-account", { recordId: decoy, action: "lock" }, { headers: adminHeaders(h) });
  assertError(decoyLookup, 404, "not_found");

  // D18: the first link stays valid (an exception to D7) and sets the FIRST registration's password;
  // using it voids the second registration's link.
  assertVerified(await verify(h, first.recordId, first.token));
  assertError(await verify(h, second.recordId, second.token), 400, "invalid_token");
  assert.equal((await login(h, "ada@example.org", STRONG_PASSWORD)).statusCode, 200);
  assertError(await login(h, "ada@example.org", OTHER_STRONG_PASSWORD), 401, "invalid_credentials");
});

test("register-password: an existing verified email gets the same success shape with a decoy id; its owner gets account_exists, no link (D18)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org");
  const before = h.receiver.received.length;
  const body = assertRegistered(await register(h, "ada@example.org", OTHER_STRONG_PASSWORD));
  const fresh = await register(h, "someone-new@example.org");
  assert.equal(body.message, fresh.json().message, "same message as a genuine registration");
  const decoy = body.recordid;
  assert.notEqual(decoy, recordId);
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "verify_email", "ada@example.org").length, 1, "no new verification link for a verified account");
  const notice = h.receiver.last("account_exists");
  assert.deepEqual(notice.body, { event_type: "account_exists", recordid: recordId, email: "ada@example.org", name: "Ada Lovelace" });
  assert.equal(notice.path, "/verify", "sent to the emailVerificationWebhook");
  assert.equal(h.receiver.received.length, before + 2, "one email each: the notice and the new member's link");
  assert.equal((await login(h, "ada@example.org", STRONG_PASSWORD)).statusCode, 200);
  assertError(await login(h, "ada@example.org", OTHER_STRONG_PASSWORD), 401, "invalid_credentials");
});

test("verify-email: success body; a second use of the same token is invalid_token", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, token } = await registerPending(h, "ada@example.org");
  assertVerified(await verify(h, recordId, token));
  assertError(await verify(h, recordId, token), 400, "invalid_token");
  assert.equal((await login(h, "ada@example.org")).statusCode, 200);
});

test("verify-email: the token lasts 24 h and is invalid_token one second after", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const early = await registerPending(h, "early@example.org");
  const late = await registerPending(h, "late@example.org");
  h.clock.advance(24 * HOUR - SECOND);
  assertVerified(await verify(h, early.recordId, early.token));
  h.clock.advance(2 * SECOND);
  assertError(await verify(h, late.recordId, late.token), 400, "invalid_token");
  assertError(await login(h, "late@example.org"), 403, "email_not_verified");
});

test("verify-email: a password reset token is not accepted as a verification token", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId } = await registerPending(h, "ada@example.org");
  const resetLink = await requestResetLink(h, "ada@example.org");
  assert.equal(resetLink.recordId, recordId);
  assertError(await verify(h, recordId, resetLink.token), 400, "invalid_token");
  assertError(await login(h, "ada@example.org"), 403, "email_not_verified");
});

test("verify-email: the right token with another member's recordId is invalid_token and does not use the token up", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const ada = await registerPending(h, "ada@example.org");
  const bob = await registerPending(h, "bob@example.org");
  assertError(await verify(h, bob.recordId, ada.token), 400, "invalid_token");
  // A made-up id in range.
  assertError(await verify(h, "123456789012345", ada.token), 400, "invalid_token");
  assertError(await login(h, "bob@example.org"), 403, "email_not_verified");
  assertVerified(await verify(h, ada.recordId, ada.token));
});

test("verify-email: a recordId that is not digits is refused with a 4xx (invalid_token or validation_failed)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { token } = await registerPending(h, "ada@example.org");
  for (const recordId of ["abc", "12ab34", "-1", "1e15", " 123456789012345", "99999999999999999999"]) {
    const res = await verify(h, recordId, token);
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${recordId}: ${res.statusCode} ${res.body}`);
    const code = (res.json() as { code: string }).code;
    assert.ok(code === "invalid_token" || code === "validation_failed", `${recordId}: ${res.body}`);
    assertError(res, res.statusCode, code);
  }
});

for (const parallel of [2, 10]) {
  test(`verify-email: ${parallel} concurrent uses of one token give exactly one 200 (D7)`, async (t) => {
    const h = await createHarness();
    t.after(() => h.close());
    yieldingTransactions(t);
    const { recordId, token } = await registerPending(h, "ada@example.org");
    const results = await Promise.all(Array.from({ length: parallel }, () => verify(h, recordId, token)));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, results.map((r) => `${r.statusCode} ${r.body}`).join("\n"));
    for (const r of results.filter((x) => x.statusCode !== 200)) assertError(r, 400, "invalid_token");
  });
}

// ---------------------------------------------------------------------------------------------
// Password policy (spec 5.3, D4)
// ---------------------------------------------------------------------------------------------

/** details may list rule names or objects naming the rule; either way, the set of rules. */
function failedRulesOf(body: Record<string, unknown>): string[] {
  assert.ok(Array.isArray(body.details), `details is not a list: ${JSON.stringify(body)}`);
  return (body.details as unknown[]).map((d) => (typeof d === "string" ? d : String((d as { rule?: unknown }).rule))).sort();
}

const weakPasswords: Array<[string, string[]]> = [
  ["Ab1-xyz", ["min_length"]],
  ["lowercase-only-42", ["uppercase"]],
  ["UPPERCASE-ONLY-42", ["lowercase"]],
  ["NoDigitsNorSymbols", ["number_or_special"]],
  ["abc", ["min_length", "number_or_special", "uppercase"]],
  ["ABCDEFGHIJ", ["lowercase", "number_or_special"]],
];

test("password policy: each failing rule gives 400 weak_password listing exactly the failed rules", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  let n = 0;
  for (const [password, rules] of weakPasswords) {
    n += 1;
    const res = await register(h, `weak${n}@example.org`, password);
    const body = assertError(res, 400, "weak_password");
    assert.deepEqual(failedRulesOf(body), [...rules].sort(), `${password}: ${res.body}`);
  }
  assert.equal(await deliverWebhooks(h), 0);
  assert.equal(h.receiver.received.length, 0);
});

test("password policy: a common password gives 400 breached_password", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assertError(await register(h, "ada@example.org", "Password123"), 400, "breached_password");
  assert.equal(await deliverWebhooks(h), 0);
});

test("password policy: nothing is stored when registration fails; a later good registration creates the member", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assertError(await register(h, "ada@example.org", "weak"), 400, "weak_password");
  assertError(await register(h, "ada@example.org", "Password123"), 400, "breached_password");
  assert.equal(await deliverWebhooks(h), 0);
  assertError(await login(h, "ada@example.org", "Password123"), 401, "invalid_credentials");

  const good = await register(h, "ada@example.org", STRONG_PASSWORD);
  assert.equal(good.statusCode, 200, good.body);
  assert.equal(await deliverWebhooks(h), 1);
  const hook = lastWebhookFor(h, "verify_email", "ada@example.org");
  const link = parseLink(hook.body.verificationLink!);
  assert.equal(link.recordId, good.json().recordid, "a real member, not a decoy for an existing one");
  assertVerified(await verify(h, link.recordId, link.token));
  assert.equal((await login(h, "ada@example.org")).statusCode, 200);
});

// ---------------------------------------------------------------------------------------------
// Login, sessions, logout (spec 2.2, 4.2, D4, D6)
// ---------------------------------------------------------------------------------------------

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
  const data = session.json() as { iat: number; exp: number };
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

// ---------------------------------------------------------------------------------------------
// Forgot and reset password (spec 4.3, D5, D7, D15)
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

// ---------------------------------------------------------------------------------------------
// Change password (spec 4.3)
// ---------------------------------------------------------------------------------------------

async function changePassword(h: Harness, cookie: string | undefined, currentPassword: string, newPassword: string): Promise<LightMyRequestResponse> {
  return post(h, "/auth/change-password", { currentPassword, newPassword }, cookie === undefined ? {} : { cookie });
}

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

test("D21: a password reset voids the member's magic links and every other reset link", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const magic = await magicLinkFor(h, "ada@example.org");
  const reset = await requestResetLink(h, "ada@example.org");
  assertMessageSuccess(await resetPassword(h, reset.recordId, reset.token, OTHER_STRONG_PASSWORD));
  assertError(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, { "bot-challenge-response": "x" }), 400, "invalid_token");
});

// ---------------------------------------------------------------------------------------------
// Public resend of the verification email (D15)
// ---------------------------------------------------------------------------------------------

test("resend-verification: same body for unknown, pending and verified emails; only the pending one gets a verify_email", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const pending = await registerPending(h, "pending@example.org");
  await registerVerifiedMember(h, "verified@example.org");
  const before = h.receiver.received.length;

  const unknown = await resend(h, "nobody@example.org");
  const forPending = await resend(h, "pending@example.org");
  const forVerified = await resend(h, "verified@example.org");
  assertMessageSuccess(forPending);
  assert.equal(unknown.statusCode, 200);
  assert.equal(forVerified.statusCode, 200);
  assert.equal(unknown.body, forPending.body);
  assert.equal(forVerified.body, forPending.body);

  await deliverWebhooks(h);
  assert.equal(h.receiver.received.length, before + 1);
  const hook = h.receiver.received.at(-1)!;
  assert.equal(hook.body.event_type, "verify_email");
  assert.equal(hook.body.email, "pending@example.org");
  assert.deepEqual(Object.keys(hook.body).sort(), ["email", "event_type", "name", "recordid", "verificationLink"]);
  const link = parseLink(hook.body.verificationLink!);
  assert.equal(link.recordId, pending.recordId);
  // D18: the registration's own link stays valid beside the resend; the resend carries no password.
  const verified = await verify(h, link.recordId, link.token);
  assert.equal(verified.statusCode, 200, verified.body);
  assert.equal(verified.json().passwordSet, false);
  assertError(await verify(h, pending.recordId, pending.token), 400, "invalid_token"); // using one link voids the others
});

test("resend-verification: one request per email per 5 minutes (429 with Retry-After), then allowed again", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerPending(h, "ada@example.org");
  assertMessageSuccess(await resend(h, "ada@example.org"));
  const limited = await resend(h, "ada@example.org", { ip: nextIp() });
  assertError(limited, 429, "rate_limited");
  const retryAfter = retryAfterOf(limited);
  assert.ok(retryAfter >= 1 && retryAfter <= 300, `Retry-After ${retryAfter}`);
  // The limit is per email: also when the email is written differently.
  assertError(await resend(h, " ADA@example.org"), 429, "rate_limited");
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "verify_email", "ada@example.org").length, 2, "registration + first resend only");

  h.clock.advance(5 * MINUTE);
  assertMessageSuccess(await resend(h, "ada@example.org"));
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "verify_email", "ada@example.org").length, 3);
});

// ---------------------------------------------------------------------------------------------
// Registration rate limits (spec 8.2)
// ---------------------------------------------------------------------------------------------

test("rate limit: the 6th registration from one IP within an hour is 429 with Retry-After; after an hour it passes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const ip = "192.0.2.77";
  for (let i = 1; i <= 5; i++) {
    const res = await register(h, `user${i}@example.org`, STRONG_PASSWORD, { ip });
    assert.equal(res.statusCode, 200, `registration ${i}: ${res.body}`);
  }
  const sixth = await register(h, "user6@example.org", STRONG_PASSWORD, { ip });
  assertError(sixth, 429, "rate_limited");
  const retryAfter = retryAfterOf(sixth);
  assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "verify_email", "user6@example.org").length, 0);
  // Another IP is not affected.
  assert.equal((await register(h, "user7@example.org")).statusCode, 200);

  h.clock.advance(HOUR);
  const later = await register(h, "user6@example.org", STRONG_PASSWORD, { ip });
  assert.equal(later.statusCode, 200, later.body);
});

test("rate limit: the 4th registration attempt of one email within an hour is 429, also from other IPs; after an hour it passes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  for (let i = 1; i <= 3; i++) {
    const res = await register(h, "ada@example.org");
    assert.equal(res.statusCode, 200, `attempt ${i}: ${res.body}`);
  }
  const fourth = await register(h, "Ada@Example.org");
  assertError(fourth, 429, "rate_limited");
  const retryAfter = retryAfterOf(fourth);
  assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  // Another email is not affected.
  assert.equal((await register(h, "bob@example.org")).statusCode, 200);

  h.clock.advance(HOUR);
  const later = await register(h, "ada@example.org");
  assert.equal(later.statusCode, 200, later.body);
});

// ---------------------------------------------------------------------------------------------
// Tenant isolation (D1, D6)
// ---------------------------------------------------------------------------------------------

test("tenants: a session cookie of tenant A is not a session on tenant B", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await addOtherTenant(h);
  await registerVerifiedMember(h, "ada@example.org");
  const cookie = await loginCookie(h, "ada@example.org");
  assert.equal(await sessionStatus(h, cookie), 200);
  assertError(await get(h, "/auth/session", { cookie, domain: OTHER_DOMAIN }), 401, "unauthorized");
  const change = await post(h, "/auth/change-password", { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }, { cookie, domain: OTHER_DOMAIN });
  assertError(change, 401, "unauthorized");
  // Logging out on B does not end A's session.
  await post(h, "/auth/logout", {}, { cookie, domain: OTHER_DOMAIN });
  assert.equal(await sessionStatus(h, cookie), 200);
});

test("tenants: a verification token of tenant A fails on tenant B", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await addOtherTenant(h);
  const { recordId, token } = await registerPending(h, "ada@example.org");
  assertError(await verify(h, recordId, token, { domain: OTHER_DOMAIN }), 400, "invalid_token");
  assertVerified(await verify(h, recordId, token));
});

test("tenants: the same email registered in two tenants gives two independent members", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await addOtherTenant(h);
  const onA = await register(h, "ada@example.org", STRONG_PASSWORD);
  const onB = await register(h, "ada@example.org", OTHER_STRONG_PASSWORD, { domain: OTHER_DOMAIN });
  assert.equal(onA.statusCode, 200, onA.body);
  assert.equal(onB.statusCode, 200, onB.body);
  await deliverWebhooks(h);
  const hookA = lastWebhookFor(h, "verify_email", "ada@example.org", h.tenant.domain);
  const hookB = lastWebhookFor(h, "verify_email", "ada@example.org", OTHER_DOMAIN);
  const linkA = parseLink(hookA.body.verificationLink!);
  const linkB = parseLink(hookB.body.verificationLink!);
  assert.equal(linkA.recordId, onA.json().recordid);
  assert.equal(linkB.recordId, onB.json().recordid, "B's registration created a member, not a decoy");
  assert.notEqual(linkA.recordId, linkB.recordId);

  assertVerified(await verify(h, linkB.recordId, linkB.token, { domain: OTHER_DOMAIN }));
  // Verifying on B did not verify A.
  assertError(await login(h, "ada@example.org", STRONG_PASSWORD), 403, "email_not_verified");
  assertVerified(await verify(h, linkA.recordId, linkA.token));

  const a = await login(h, "ada@example.org", STRONG_PASSWORD);
  assert.equal(a.statusCode, 200, a.body);
  assert.equal(a.json().recordid, linkA.recordId);
  assertError(await login(h, "ada@example.org", OTHER_STRONG_PASSWORD), 401, "invalid_credentials");
  const b = await login(h, "ada@example.org", OTHER_STRONG_PASSWORD, { domain: OTHER_DOMAIN });
  assert.equal(b.statusCode, 200, b.body);
  assert.equal(b.json().recordid, linkB.recordId);
  assertError(await login(h, "ada@example.org", STRONG_PASSWORD, { domain: OTHER_DOMAIN }), 401, "invalid_credentials");

  // A password reset on A leaves B alone.
  const resetA = await requestResetLink(h, "ada@example.org");
  assert.equal(resetA.recordId, linkA.recordId);
  assertMessageSuccess(await resetPassword(h, resetA.recordId, resetA.token, THIRD_STRONG_PASSWORD));
  assert.equal((await login(h, "ada@example.org", OTHER_STRONG_PASSWORD, { domain: OTHER_DOMAIN })).statusCode, 200);
});

test("resend-verification: the 11th request from one IP within an hour is 429 with Retry-After (D15)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const ip = "192.0.2.89";
  for (let i = 1; i <= 10; i++) assertMessageSuccess(await resend(h, `pending${i}@example.org`, { ip }));
  const eleventh = await resend(h, "pending11@example.org", { ip });
  assertError(eleventh, 429, "rate_limited");
  assert.ok(retryAfterOf(eleventh) <= 3600);
  h.clock.advance(HOUR);
  assertMessageSuccess(await resend(h, "pending11@example.org", { ip }));
});
