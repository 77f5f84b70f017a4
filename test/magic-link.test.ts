/**
 * Magic-link login through HTTP (spec 2.2, 3, 4.1, 4.4, 6, 7, 8.1, 8.2; DECISIONS D4, D5, D7,
 * D8, D9, D13, D14, D15): registration by email alone, requesting a link, verifying it, its
 * lifetime and cooldown, the rate limits of requesting a link, tenant isolation, the interplay with
 * the password lockout, Password Change Pending and the second factor. The registration limits,
 * which count both kinds of registration together, are in registration.test.ts. Time is the harness's ManualClock;
 * TOTP codes come from the independent implementation in test/support/totp.ts. Nothing sleeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { HOUR, MINUTE, SECOND } from "../src/core/clock.js";
import {
  assertError,
  assertMessageSuccess,
  assertRecordId,
  assertRegistered,
  assertToken,
  retryAfterOf,
  sessionSetCookie,
  assertSuccessBody,
  setCookieHeaders,
  assertVerified,
} from "./support/assertions.js";
import {
  addOtherTenant,
  adminHeaders,
  enrolTwoFactor,
  forgotPassword,
  lastWebhookFor,
  lockMember,
  magicLinkFor,
  nextIp,
  OTHER_DOMAIN,
  registerMagic,
  requestMagicLink,
  requestResetLink,
  resetPassword,
  sessionData,
  tenantIdOf,
  webhooksFor,
  WRONG_PASSWORD,
} from "./support/flows.js";
import { sessionCount } from "./support/database.js";
import { yieldingTransactions } from "./support/store-seam.js";
import {
  createHarness,
  deliverWebhooks,
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
import { totpAt } from "./support/totp.js";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** Registers by magic link, delivers, verifies the email: a ready passwordless member. */
async function registerVerifiedMagicMember(h: Harness, email: string, options: PostOptions = {}): Promise<string> {
  const res = await registerMagic(h, email, options);
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "verify_email", email, options.domain ?? h.tenant.domain).body.verificationLink!);
  const verified = await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token }, { domain: options.domain });
  assert.equal(verified.statusCode, 200, verified.body);
  return link.recordId;
}

async function verifyLink(
  h: Harness,
  recordId: string,
  token: string,
  extra: Record<string, unknown> = {},
  options: PostOptions = {},
): Promise<LightMyRequestResponse> {
  return post(h, `/auth/verify-magic-link/${recordId}/${token}`, { "bot-challenge-response": "x", ...extra }, options);
}

/** 200 exactly { success:true, message, redirect } with a session cookie; returns the cookie. */
function assertMagicLogin(res: LightMyRequestResponse, redirect = "/"): string {
  const body = assertSuccessBody(res, ["message", "redirect", "success"]);
  assert.equal(body.redirect, redirect);
  const cookie = sessionCookieOf(res);
  assert.ok(cookie, "no session cookie");
  return cookie;
}

async function authenticationTypeOf(h: Harness, recordId: string): Promise<string[]> {
  const member = await h.deps.store.members.findMemberById(await tenantIdOf(h), Number(recordId));
  assert.ok(member, `no member ${recordId}`);
  return [...member.authenticationType].sort();
}

// ---------------------------------------------------------------------------------------------
// POST /auth/register-magic-link (spec 3, 4.1, 6, D5, D8, D9)
// ---------------------------------------------------------------------------------------------

test("register-magic-link: success body, record id range, one verify_email webhook with exactly the spec 6 fields (D9)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = assertRegistered(await registerMagic(h, "grace@example.org")).recordid;

  assert.equal(await deliverWebhooks(h), 1);
  assert.equal(h.receiver.received.length, 1);
  assert.equal(h.receiver.ofType("magic_login").length, 0, "D9: registration emits verify_email, not magic_login");
  const hook = h.receiver.ofType("verify_email")[0];
  assert.ok(hook);
  assert.equal(hook.path, "/verify", "sent to emailVerificationWebhook");
  assert.deepEqual(Object.keys(hook.body).sort(), ["email", "event_type", "name", "recordid", "verificationLink"]);
  assert.equal(hook.body.event_type, "verify_email");
  assert.equal(typeof hook.body.recordid, "string");
  assert.equal(hook.body.recordid, recordId);
  assert.equal(hook.body.email, "grace@example.org");
  assert.equal(hook.body.name, "Grace Hopper");
  const match = /^https:\/\/([^/]+)\/email-verified\/([0-9]+)\/([A-Za-z0-9_-]+)$/.exec(hook.body.verificationLink!);
  assert.ok(match, `unexpected link form ${hook.body.verificationLink}`);
  assert.equal(match[1], h.tenant.domain);
  assert.equal(match[2], recordId);
  assertToken(match[3]!);
});

test("register-magic-link: no password is set (login is invalid_credentials); after verification the member logs in by magic link", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const res = await registerMagic(h, "grace@example.org");
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(h.receiver.last("verify_email").body.verificationLink!);
  // Pending: a magic link is refused with the explicit error, and password login knows no password.
  assertError(await requestMagicLink(h, "grace@example.org"), 403, "email_not_verified");
  // (Each of these counts toward the password lockout: 3 in all, and the last is still a 401.)
  const attempt = await login(h, "grace@example.org", STRONG_PASSWORD);
  assert.equal(assertError(attempt, 401, "invalid_credentials").authorized, false);
  assertVerified(await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token }));
  assert.deepEqual(await authenticationTypeOf(h, link.recordId), ["Magic Link"]);
  // Verified: still no password, and the generic invalid_credentials (not email_not_verified).
  assertError(await login(h, "grace@example.org", STRONG_PASSWORD), 401, "invalid_credentials");
  assertError(await login(h, "grace@example.org", OTHER_STRONG_PASSWORD), 401, "invalid_credentials");

  h.clock.advance(3 * MINUTE);
  const magic = await magicLinkFor(h, "grace@example.org");
  assert.equal(magic.recordId, link.recordId);
  const cookie = assertMagicLogin(await verifyLink(h, magic.recordId, magic.token));
  assert.equal((await sessionData(h, cookie)).recordId, link.recordId);
});

test("register-magic-link: an existing email gets the same success shape with a decoy id; a pending one gets its verify_email again", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const verifiedId = await registerVerifiedMagicMember(h, "verified@example.org");
  const passwordId = await registerVerifiedMember(h, "password@example.org", STRONG_PASSWORD, nextIp());
  const pendingRes = await registerMagic(h, "pending@example.org");
  assert.equal(pendingRes.statusCode, 200, pendingRes.body);
  const pendingId = assertRecordId(pendingRes.json().recordid);
  await deliverWebhooks(h);
  const before = h.receiver.received.length;
  const fresh = await registerMagic(h, "someone-new@example.org");
  assert.equal(fresh.statusCode, 200, fresh.body);

  for (const [email, realId] of [
    ["verified@example.org", verifiedId],
    ["password@example.org", passwordId],
    ["pending@example.org", pendingId],
  ] as const) {
    const again = await registerMagic(h, email);
    assert.equal(again.statusCode, 200, again.body);
    const body = again.json<Record<string, unknown>>();
    assert.deepEqual(Object.keys(body).sort(), ["message", "recordid", "success"], `${email}: ${again.body}`);
    assert.equal(body.success, true);
    assert.equal(body.message, fresh.json().message, `${email}: same message as a genuine registration`);
    assert.notEqual(assertRecordId(body.recordid), realId, `${email}: a decoy, not the real id`);
  }
  await deliverWebhooks(h);
  // The new member and the still-pending one got a verify_email; the verified ones an account_exists (D18).
  assert.equal(h.receiver.received.length, before + 4, h.receiver.received.map((w) => w.body.email).join(","));
  assert.equal(webhooksFor(h, "verify_email", "verified@example.org").length, 1);
  assert.equal(webhooksFor(h, "verify_email", "password@example.org").length, 1);
  assert.deepEqual(
    h.receiver
      .ofType("account_exists")
      .map((w) => w.body.email)
      .sort(),
    ["password@example.org", "verified@example.org"],
  );
  const pendingHooks = webhooksFor(h, "verify_email", "pending@example.org");
  assert.equal(pendingHooks.length, 2);
  assert.equal(parseLink(pendingHooks[1]!.body.verificationLink!).recordId, pendingId, "resent to the real member");
  // The repeat did not give the password member a second method or remove its password.
  assert.deepEqual(await authenticationTypeOf(h, passwordId), ["Password"]);
  assert.equal((await login(h, "password@example.org")).statusCode, 200);
});

// ---------------------------------------------------------------------------------------------
// POST /auth/request-magic-link (spec 3, 4.4, 6, 7, 8.2, D5)
// ---------------------------------------------------------------------------------------------

test("request-magic-link: unknown, locked and verified get byte-identical answers; only the verified member gets a magic_login webhook", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const lockedId = await registerVerifiedMagicMember(h, "locked@example.org");
  await lockMember(h, lockedId);
  await deliverWebhooks(h);
  const before = h.receiver.received.length;

  const verified = await requestMagicLink(h, "grace@example.org");
  const unknown = await requestMagicLink(h, "nobody@example.org");
  const locked = await requestMagicLink(h, "locked@example.org");
  assertMessageSuccess(verified);
  assert.equal(unknown.statusCode, 200);
  assert.equal(locked.statusCode, 200);
  assert.equal(unknown.body, verified.body);
  assert.equal(locked.body, verified.body);
  assert.equal(unknown.headers["content-type"], verified.headers["content-type"]);
  assert.equal(locked.headers["content-type"], verified.headers["content-type"]);

  assert.equal(await deliverWebhooks(h), 1);
  assert.equal(h.receiver.received.length, before + 1);
  const hooks = h.receiver.ofType("magic_login");
  assert.equal(hooks.length, 1);
  const hook = hooks[0]!;
  assert.equal(hook.path, "/magic", "sent to magicLoginWebhook");
  assert.deepEqual(Object.keys(hook.body).sort(), ["code", "email", "event_type", "magicLoginLink", "name", "recordid"]);
  assert.equal(hook.body.event_type, "magic_login");
  assert.equal(typeof hook.body.recordid, "string");
  assert.equal(hook.body.recordid, recordId);
  assert.equal(hook.body.email, "grace@example.org");
  assert.equal(hook.body.name, "Grace Hopper");
  const match = /^https:\/\/([^/]+)\/verify-magic-link\/([0-9]+)\/([A-Za-z0-9_-]+)$/.exec(hook.body.magicLoginLink!);
  assert.ok(match, `unexpected link form ${hook.body.magicLoginLink}`);
  assert.equal(match[1], h.tenant.domain);
  assert.equal(match[2], recordId);
  assertToken(match[3]!);
});

test("request-magic-link: an unverified email gets 403 email_not_verified and nothing is sent", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const res = await registerMagic(h, "pending@example.org");
  assert.equal(res.statusCode, 200, res.body);
  await post(
    h,
    "/auth/register-password",
    { email: "pending-pw@example.org", name: "Ada", password: STRONG_PASSWORD, "bot-challenge-response": "x" },
    { ip: nextIp() },
  );
  await deliverWebhooks(h);
  assertError(await requestMagicLink(h, "pending@example.org"), 403, "email_not_verified");
  assertError(await requestMagicLink(h, "pending-pw@example.org"), 403, "email_not_verified");
  await deliverWebhooks(h);
  assert.equal(h.receiver.ofType("magic_login").length, 0);
});

test("request-magic-link: one per email per 3 minutes (429 + Retry-After), for an unknown email too; allowed again after", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMagicMember(h, "grace@example.org");
  assertMessageSuccess(await requestMagicLink(h, "grace@example.org"));
  assertMessageSuccess(await requestMagicLink(h, "nobody@example.org"));

  const known = await requestMagicLink(h, "grace@example.org", { ip: nextIp() });
  const unknown = await requestMagicLink(h, "nobody@example.org", { ip: nextIp() });
  assertError(known, 429, "rate_limited");
  assertError(unknown, 429, "rate_limited");
  const knownRetry = retryAfterOf(known);
  assert.ok(knownRetry >= 1 && knownRetry <= 180, `Retry-After ${knownRetry}`);
  // The cooldown reveals nothing: same status, code, message and Retry-After for the unknown email.
  assert.equal(retryAfterOf(unknown), knownRetry);
  assert.equal(unknown.json().message, known.json().message);
  // Per email, however it is written.
  assertError(await requestMagicLink(h, "  GRACE@example.org"), 429, "rate_limited");

  h.clock.advance(MINUTE);
  const later = await requestMagicLink(h, "grace@example.org");
  assertError(later, 429, "rate_limited");
  assert.ok(retryAfterOf(later) <= 120, `Retry-After ${retryAfterOf(later)} after a minute`);
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "magic_login", "grace@example.org").length, 1, "refused requests send nothing");

  h.clock.advance(2 * MINUTE);
  assertMessageSuccess(await requestMagicLink(h, "grace@example.org"));
  assertMessageSuccess(await requestMagicLink(h, "nobody@example.org"));
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "magic_login", "grace@example.org").length, 2);
});

test("request-magic-link: the 11th request from one IP within an hour is 429 with Retry-After; another IP and a later hour pass", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMagicMember(h, "grace@example.org");
  const ip = "192.0.2.90";
  for (let i = 1; i <= 10; i++) {
    const res = await requestMagicLink(h, `someone${i}@example.org`, { ip });
    assert.equal(res.statusCode, 200, `request ${i}: ${res.body}`);
  }
  const eleventh = await requestMagicLink(h, "grace@example.org", { ip });
  assertError(eleventh, 429, "rate_limited");
  const retryAfter = retryAfterOf(eleventh);
  assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  await deliverWebhooks(h);
  assert.equal(h.receiver.ofType("magic_login").length, 0, "a refused request sends nothing");
  assertMessageSuccess(await requestMagicLink(h, "someone-else@example.org", { ip: nextIp() }));

  h.clock.advance(HOUR);
  assertMessageSuccess(await requestMagicLink(h, "grace@example.org", { ip }));
  await deliverWebhooks(h);
  assert.equal(h.receiver.ofType("magic_login").length, 1);
});

test("request-magic-link: 5 or more IPs for one email within an hour get 429, known and unknown email alike (spec 7, 8.2)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMagicMember(h, "grace@example.org");
  const statusesFor = async (email: string): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await requestMagicLink(h, email, { ip: nextIp() })).statusCode);
      h.clock.advance(3 * MINUTE); // past the per-email cooldown, so only the IP count can refuse
    }
    return statuses;
  };
  const known = await statusesFor("grace@example.org");
  assert.deepEqual(known, [200, 200, 200, 200, 429, 429], "the 5th distinct IP is refused");
  const last = await requestMagicLink(h, "grace@example.org", { ip: nextIp() });
  assertError(last, 429, "rate_limited");
  retryAfterOf(last);
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "magic_login", "grace@example.org").length, 4);
  // The refusal does not reveal whether the email is registered.
  assert.deepEqual(await statusesFor("nobody@example.org"), known);

  h.clock.advance(HOUR);
  assertMessageSuccess(await requestMagicLink(h, "grace@example.org", { ip: nextIp() }));
});

// ---------------------------------------------------------------------------------------------
// POST /auth/verify-magic-link/{recordId}/{token} (spec 2.2, 2.3, 4.4, 8.1, D6, D7, D15)
// ---------------------------------------------------------------------------------------------

test("verify-magic-link: 200 exactly {success, message, redirect}, the spec 2.2 cookie, a working session; the link is single use", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const { token } = await magicLinkFor(h, "grace@example.org");
  const loginAt = Math.floor(h.clock.now() / 1000);
  const res = await verifyLink(h, recordId, token);
  assertMagicLogin(res, "/");
  const cookie = sessionSetCookie(res);
  assertToken(cookie.value);
  for (const attribute of ["httponly", "secure", "samesite=lax", "path=/", "max-age=86400"]) {
    assert.ok(cookie.attributes.includes(attribute), `${attribute} missing: ${cookie.attributes.join("; ")}`);
  }
  assert.ok(!cookie.attributes.some((a) => a.startsWith("domain")), cookie.attributes.join("; "));

  assert.deepEqual(await sessionData(h, cookie.value), {
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

  const again = await verifyLink(h, recordId, token);
  assertError(again, 400, "invalid_token");
  assert.equal(sessionCookieOf(again), undefined);
});

test("verify-magic-link: redirect comes from the tenant's loginSuccessRedirect", async (t) => {
  const h = await createHarness({ settings: { loginSuccessRedirect: "/dashboard" } });
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const { token } = await magicLinkFor(h, "grace@example.org");
  const cookie = assertMagicLogin(await verifyLink(h, recordId, token), "/dashboard");
  assert.equal((await sessionData(h, cookie)).recordId, recordId);
});

test("verify-magic-link: the link lasts 15 minutes: works at 15 min - 1 s, invalid_token at 15 min + 1 s", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const earlyId = await registerVerifiedMagicMember(h, "early@example.org");
  const lateId = await registerVerifiedMagicMember(h, "late@example.org");
  const early = await magicLinkFor(h, "early@example.org");
  const late = await magicLinkFor(h, "late@example.org");
  h.clock.advance(15 * MINUTE - SECOND);
  assertMagicLogin(await verifyLink(h, earlyId, early.token));
  h.clock.advance(2 * SECOND);
  const expired = await verifyLink(h, lateId, late.token);
  assertError(expired, 400, "invalid_token");
  assert.equal(sessionCookieOf(expired), undefined);
});

test("verify-magic-link: a newer request voids the older link (D7)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const first = await magicLinkFor(h, "grace@example.org");
  h.clock.advance(3 * MINUTE);
  const second = await magicLinkFor(h, "grace@example.org");
  assert.notEqual(first.token, second.token);
  assertError(await verifyLink(h, recordId, first.token), 400, "invalid_token");
  assertMagicLogin(await verifyLink(h, recordId, second.token));
});

test("verify-magic-link: a valid token under another recordId is invalid_token and is not used up", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const graceId = await registerVerifiedMagicMember(h, "grace@example.org");
  const bobId = await registerVerifiedMagicMember(h, "bob@example.org");
  const { token } = await magicLinkFor(h, "grace@example.org");
  assertError(await verifyLink(h, bobId, token), 400, "invalid_token");
  assertError(await verifyLink(h, "123456789012345", token), 400, "invalid_token");
  assertMagicLogin(await verifyLink(h, graceId, token));
});

test("verify-magic-link: password reset and email verification tokens are not magic login tokens", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org", STRONG_PASSWORD, nextIp());
  const reset = await requestResetLink(h, "ada@example.org");
  assert.equal(reset.recordId, recordId);
  assertError(await verifyLink(h, recordId, reset.token), 400, "invalid_token");
  // The reset link is still good for what it is.
  assertMessageSuccess(await resetPassword(h, recordId, reset.token, OTHER_STRONG_PASSWORD));

  const pending = await registerMagic(h, "pending@example.org");
  assert.equal(pending.statusCode, 200, pending.body);
  await deliverWebhooks(h);
  const verification = parseLink(lastWebhookFor(h, "verify_email", "pending@example.org").body.verificationLink!);
  assertError(await verifyLink(h, verification.recordId, verification.token), 400, "invalid_token");
  assertVerified(await post(h, "/auth/verify-email", { recordId: verification.recordId, token: verification.token }));
});

test("verify-magic-link: a link of tenant A is invalid_token on tenant B, and still works on A", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await addOtherTenant(h);
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  // The same email on B is an unrelated member with its own links.
  const otherId = await registerVerifiedMagicMember(h, "grace@example.org", { domain: OTHER_DOMAIN });
  assert.notEqual(otherId, recordId);
  const onA = await magicLinkFor(h, "grace@example.org");
  assert.equal(parseLink(onA.link).domain, h.tenant.domain);
  const onB = await magicLinkFor(h, "grace@example.org", { domain: OTHER_DOMAIN });
  assert.equal(parseLink(onB.link).domain, OTHER_DOMAIN);
  assert.equal(onB.recordId, otherId);

  assertError(await verifyLink(h, recordId, onA.token, {}, { domain: OTHER_DOMAIN }), 400, "invalid_token");
  assertError(await verifyLink(h, otherId, onA.token, {}, { domain: OTHER_DOMAIN }), 400, "invalid_token");
  assertError(await verifyLink(h, otherId, onB.token), 400, "invalid_token");
  const cookieA = assertMagicLogin(await verifyLink(h, recordId, onA.token));
  assert.equal((await sessionData(h, cookieA)).hostname, h.tenant.domain);
  const cookieB = assertMagicLogin(await verifyLink(h, otherId, onB.token, {}, { domain: OTHER_DOMAIN }));
  assert.equal((await sessionData(h, cookieB, { domain: OTHER_DOMAIN })).recordId, otherId);
});

test("verify-magic-link: locking the account after the link was sent voids it (D15), also after an unlock", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const { token } = await magicLinkFor(h, "grace@example.org");
  await lockMember(h, recordId);
  const refused = await verifyLink(h, recordId, token);
  assertError(refused, 400, "invalid_token");
  assert.equal(sessionCookieOf(refused), undefined);
  const unlocked = await post(h, "/auth/lock-account", { recordId, action: "unlock" }, { headers: adminHeaders(h) });
  assert.equal(unlocked.statusCode, 200, unlocked.body);
  assertError(await verifyLink(h, recordId, token), 400, "invalid_token");
  // A new link after the unlock works.
  h.clock.advance(3 * MINUTE);
  const fresh = await magicLinkFor(h, "grace@example.org");
  assertMagicLogin(await verifyLink(h, recordId, fresh.token));
});

test("verify-magic-link: a member in Password Change Pending logs in by magic link; the session says so; password login stays refused (D15)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org", STRONG_PASSWORD, nextIp());
  const required = await post(h, "/auth/admin/require-password-change", { recordId }, { headers: adminHeaders(h) });
  assert.equal(required.statusCode, 200, required.body);
  assertError(await login(h, "ada@example.org"), 403, "password_change_required");

  const { token } = await magicLinkFor(h, "ada@example.org");
  const cookie = assertMagicLogin(await verifyLink(h, recordId, token));
  const session = await sessionData(h, cookie);
  assert.equal(session.recordId, recordId);
  assert.equal(session.passwordChangePending, true);
  const stillRefused = assertError(await login(h, "ada@example.org"), 403, "password_change_required");
  assert.equal(stillRefused.authorized, false);
});

test("verify-magic-link: a password member gains Magic Link in authentication_type on the first magic login (D8)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org", STRONG_PASSWORD, nextIp());
  assert.deepEqual(await authenticationTypeOf(h, recordId), ["Password"]);
  const { token } = await magicLinkFor(h, "ada@example.org");
  // Requesting alone does not add the method; the login does.
  assert.deepEqual(await authenticationTypeOf(h, recordId), ["Password"]);
  assertMagicLogin(await verifyLink(h, recordId, token));
  assert.deepEqual(await authenticationTypeOf(h, recordId), ["Magic Link", "Password"]);
  // The password still works.
  assert.equal((await login(h, "ada@example.org")).statusCode, 200);
});

test("forgot/reset-password: a magic-link member gains Password (D8) and can then log in with it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  assert.deepEqual(await authenticationTypeOf(h, recordId), ["Magic Link"]);
  assertMessageSuccess(await forgotPassword(h, "grace@example.org"));
  await deliverWebhooks(h);
  const reset = parseLink(lastWebhookFor(h, "password_reset", "grace@example.org").body.resetLink!);
  assert.equal(reset.recordId, recordId);
  assertMessageSuccess(await resetPassword(h, recordId, reset.token, STRONG_PASSWORD));
  assert.deepEqual(await authenticationTypeOf(h, recordId), ["Magic Link", "Password"]);
  const res = await login(h, "grace@example.org", STRONG_PASSWORD);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), { authorized: true, recordid: recordId, redirectUrl: "/" });
  assertError(await login(h, "grace@example.org", OTHER_STRONG_PASSWORD), 401, "invalid_credentials");
  // The magic link keeps working too.
  const magic = await magicLinkFor(h, "grace@example.org");
  assertMagicLogin(await verifyLink(h, recordId, magic.token));
});

test("verify-magic-link: the password lockout does not stop a magic link, and the magic login clears it (D13)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org", STRONG_PASSWORD, nextIp());
  for (let i = 1; i <= 3; i++) assertError(await login(h, "ada@example.org", WRONG_PASSWORD), 401, "invalid_credentials");
  const locked = await login(h, "ada@example.org", STRONG_PASSWORD);
  assertError(locked, 429, "rate_limited");
  assert.equal(retryAfterOf(locked), 3600);

  const { token } = await magicLinkFor(h, "ada@example.org");
  const cookie = assertMagicLogin(await verifyLink(h, recordId, token));
  assert.equal((await sessionData(h, cookie)).recordId, recordId);
  // Right after, with no time passing, password login works again.
  const res = await login(h, "ada@example.org", STRONG_PASSWORD);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().authorized, true);
});

for (const parallel of [20]) {
  test(`verify-magic-link: ${parallel} concurrent uses of one link give exactly one 200 and one session (D7)`, async (t) => {
    const h = await createHarness();
    t.after(() => h.close());
    const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
    const { token } = await magicLinkFor(h, "grace@example.org");
    yieldingTransactions(t);
    const results = await Promise.all(Array.from({ length: parallel }, () => verifyLink(h, recordId, token)));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, results.map((r) => `${r.statusCode} ${r.body}`).join("\n"));
    assertMagicLogin(ok[0]!);
    for (const r of results.filter((x) => x.statusCode !== 200)) {
      assertError(r, 400, "invalid_token");
      assert.equal(sessionCookieOf(r), undefined);
    }
    assert.equal(await sessionCount(h, recordId), 1);
  });
}

// ---------------------------------------------------------------------------------------------
// Magic link with the second factor (spec 4.4, D14, D15)
// ---------------------------------------------------------------------------------------------

test("verify-magic-link with 2FA: no code -> requires2FA and no cookie; a wrong code -> 401; the right code -> session; the link is then used up", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const first = await magicLinkFor(h, "grace@example.org");
  const enrolCookie = assertMagicLogin(await verifyLink(h, recordId, first.token));
  const { secret } = await enrolTwoFactor(h, enrolCookie);

  h.clock.advance(3 * MINUTE);
  const { token } = await magicLinkFor(h, "grace@example.org");
  const noCode = await verifyLink(h, recordId, token);
  assert.equal(noCode.statusCode, 200, noCode.body);
  const noCodeBody = noCode.json<Record<string, unknown>>();
  assert.deepEqual(Object.keys(noCodeBody).sort(), ["message", "requires2FA", "success"]);
  assert.equal(noCodeBody.success, false);
  assert.equal(noCodeBody.requires2FA, true);
  assert.equal(typeof noCodeBody.message, "string");
  assert.ok((noCodeBody.message as string).length > 0);
  assert.deepEqual(setCookieHeaders(noCode), [], "no cookie before the second factor");

  const right = totpAt(secret, h.clock.now());
  const wrong = right === "000000" ? "111111" : "000000";
  const wrongRes = await verifyLink(h, recordId, token, { twoFACode: wrong });
  assertError(wrongRes, 401, "invalid_2fa_code");
  assert.deepEqual(setCookieHeaders(wrongRes), []);

  const cookie = assertMagicLogin(await verifyLink(h, recordId, token, { twoFACode: right }));
  const session = await sessionData(h, cookie);
  assert.equal(session.recordId, recordId);
  assert.equal(session.is2FAEnabled, true);
  // Used up: even with a fresh code on the next step.
  h.clock.advance(30 * SECOND);
  assertError(await verifyLink(h, recordId, token, { twoFACode: totpAt(secret, h.clock.now()) }), 400, "invalid_token");
});

test("verify-magic-link with 2FA: a recovery code works once; 3 wrong codes lock the factor for 15 minutes without using up the link", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org", STRONG_PASSWORD, nextIp());
  const loginRes = await login(h, "ada@example.org");
  const cookie = sessionCookieOf(loginRes);
  assert.ok(cookie);
  const setup = await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie });
  const secret = setup.json<{ secret: string }>().secret;
  const enabled = await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie });
  assert.equal(enabled.statusCode, 200, enabled.body);
  const recoveryCodes = enabled.json<{ recoveryCodes: string[] }>().recoveryCodes;
  h.clock.advance(30 * SECOND);

  const link1 = await magicLinkFor(h, "ada@example.org");
  assertMagicLogin(await verifyLink(h, recordId, link1.token, { twoFACode: recoveryCodes[0] }));
  h.clock.advance(3 * MINUTE);
  const link2 = await magicLinkFor(h, "ada@example.org");
  assertError(await verifyLink(h, recordId, link2.token, { twoFACode: recoveryCodes[0] }), 401, "invalid_2fa_code");
  assertError(await verifyLink(h, recordId, link2.token, { twoFACode: "000000-bad" }), 401, "invalid_2fa_code");
  assertError(await verifyLink(h, recordId, link2.token, { twoFACode: "zzzzz-zzzzz" }), 401, "invalid_2fa_code");
  const locked = await verifyLink(h, recordId, link2.token, { twoFACode: totpAt(secret, h.clock.now()) });
  assertError(locked, 429, "rate_limited");
  assert.equal(retryAfterOf(locked), 900);
  h.clock.advance(10 * MINUTE);
  assertError(await verifyLink(h, recordId, link2.token, { twoFACode: totpAt(secret, h.clock.now()) }), 429, "rate_limited");
  // Past the link's 15 minutes the link is gone; the factor is usable again on a new link.
  h.clock.advance(5 * MINUTE);
  const link3 = await magicLinkFor(h, "ada@example.org");
  assertMagicLogin(await verifyLink(h, recordId, link3.token, { twoFACode: totpAt(secret, h.clock.now()) }));
});

test("verify-magic-link with 2FA: a submission refused by the 2FA lockout leaves the link valid; it works when the lockout ends (D15)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMagicMember(h, "grace@example.org");
  const first = await magicLinkFor(h, "grace@example.org");
  const cookie = assertMagicLogin(await verifyLink(h, recordId, first.token));
  const { secret } = await enrolTwoFactor(h, cookie);
  const wrongCode = () => (totpAt(secret, h.clock.now()) === "999999" ? "888888" : "999999");
  // Lock the factor through another code-checking endpoint: the counter is the member's, not the endpoint's.
  for (let i = 0; i < 3; i++) assertError(await post(h, "/auth/2fa/recovery-codes", { code: wrongCode() }, { cookie }), 401, "invalid_2fa_code");
  h.clock.advance(10 * MINUTE);
  const link = await magicLinkFor(h, "grace@example.org");
  const locked = await verifyLink(h, recordId, link.token, { twoFACode: totpAt(secret, h.clock.now()) });
  assertError(locked, 429, "rate_limited");
  const retryAfter = retryAfterOf(locked);
  assert.ok(retryAfter >= 299 && retryAfter <= 300, `Retry-After ${retryAfter} with 5 minutes of lockout left`);
  assert.deepEqual(setCookieHeaders(locked), []);
  h.clock.advance(5 * MINUTE);
  assertMagicLogin(await verifyLink(h, recordId, link.token, { twoFACode: totpAt(secret, h.clock.now()) }));
});

// ---------------------------------------------------------------------------------------------
// No secret in the logs (spec 2.3, D9)
// ---------------------------------------------------------------------------------------------

test("logs: the magic-link flows log no token, link, session id or password; the verify URL is logged masked", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  h.deps.log.level = "trace";
  const secrets = new Map<string, string>();
  const keep = (label: string, value: string | undefined): string => {
    assert.ok(value && value.length >= 8, `${label} is present`);
    secrets.set(label, value);
    return value;
  };
  keep("password", STRONG_PASSWORD);
  keep("wrong password", WRONG_PASSWORD);

  const res = await registerMagic(h, "grace@example.org");
  assert.equal(res.statusCode, 200);
  await deliverWebhooks(h);
  const verification = keep("verification link", h.receiver.last("verify_email").body.verificationLink);
  const vParts = parseLink(verification);
  keep("verification token", vParts.token);
  assertVerified(await post(h, "/auth/verify-email", { recordId: vParts.recordId, token: vParts.token }));
  const recordId = vParts.recordId;

  const link1 = await magicLinkFor(h, "grace@example.org");
  keep("magic link 1", link1.link);
  keep("magic token 1", link1.token);
  keep("session 1", assertMagicLogin(await verifyLink(h, recordId, link1.token)));
  assertError(await verifyLink(h, recordId, link1.token), 400, "invalid_token");
  assertError(await verifyLink(h, recordId, "A".repeat(43)), 400, "invalid_token");
  assertError(await requestMagicLink(h, "grace@example.org"), 429, "rate_limited");

  // A password member: lockout, then magic link.
  await registerVerifiedMember(h, "ada@example.org", STRONG_PASSWORD, nextIp());
  keep("ada verification link", h.receiver.last("verify_email").body.verificationLink);
  assertError(await login(h, "ada@example.org", WRONG_PASSWORD), 401, "invalid_credentials");
  const link2 = await magicLinkFor(h, "ada@example.org");
  keep("magic link 2", link2.link);
  keep("magic token 2", link2.token);
  keep("session 2", assertMagicLogin(await verifyLink(h, link2.recordId, link2.token)));
  keep("session 3", sessionCookieOf(await login(h, "ada@example.org")));

  const logText = h.logs.join("\n");
  const leaks = [...secrets].filter(([, secret]) => logText.includes(secret)).map(([label]) => label);
  assert.deepEqual(leaks, [], `secrets in the logs: ${leaks.join(", ")}`);
  assert.ok(!/verify-magic-link\/\d+\/[A-Za-z0-9_-]{20,}/.test(logText), "no token-bearing magic link path in the logs");
  // The request line is there, with the token masked.
  const urls = h.logs
    .flatMap((chunk) => chunk.split("\n").filter(Boolean))
    .map((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url)
    .filter((u): u is string => typeof u === "string");
  assert.ok(
    urls.includes(`/auth/verify-magic-link/${recordId}/[redacted]`),
    `masked verify URL not logged: ${urls.filter((u) => u.includes("magic")).join(", ")}`,
  );
  assert.ok(urls.includes("/auth/request-magic-link"));
});
