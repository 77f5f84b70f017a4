/**
 * Registration through HTTP (spec 4.1, 8.2; DECISIONS D5, D8, D15, D18), src/flows/registration/registration.ts:
 * register-password, the public resend of the verification email, the registration rate limits
 * (one count for both kinds of registration) and one email in two tenants. register-magic-link's
 * own tests are in magic-link.test.ts, the password policy in passwords.test.ts, using a link in
 * verification.test.ts. Expiry is driven by the harness's ManualClock; nothing sleeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { HOUR, MINUTE } from "../src/core/clock.js";
import { assertError, assertMessageSuccess, assertVerified, assertRegistered, assertToken, retryAfterOf } from "./support/assertions.js";
import {
  addOtherTenant,
  adminHeaders,
  lastWebhookFor,
  nextIp,
  OTHER_DOMAIN,
  register,
  registerMagic,
  registerPending,
  requestResetLink,
  resetPassword,
  THIRD_STRONG_PASSWORD,
  verify,
  webhooksFor,
} from "./support/flows.js";
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

async function resend(h: Harness, email: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/resend-verification", { email, "bot-challenge-response": "x" }, options);
}

// ---------------------------------------------------------------------------------------------
// POST /auth/register-password (spec 4.1, D5, D8, D18)
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

// ---------------------------------------------------------------------------------------------
// Registration rate limits (spec 8.2): register-password and register-magic-link count together
// ---------------------------------------------------------------------------------------------

test("rate limit: the 6th registration from one IP within an hour, of either kind, is 429 with Retry-After; after an hour it passes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const ip = "192.0.2.77";
  // Spec 8.2: 5 registrations of both kinds together per IP.
  for (let i = 1; i <= 3; i++) {
    const res = await register(h, `user${i}@example.org`, STRONG_PASSWORD, { ip });
    assert.equal(res.statusCode, 200, `registration ${i}: ${res.body}`);
  }
  for (let i = 4; i <= 5; i++) {
    const res = await registerMagic(h, `user${i}@example.org`, { ip });
    assert.equal(res.statusCode, 200, `registration ${i}: ${res.body}`);
  }
  const sixthByPassword = await register(h, "user6@example.org", STRONG_PASSWORD, { ip });
  const sixthByMagicLink = await registerMagic(h, "magic6@example.org", { ip });
  for (const sixth of [sixthByPassword, sixthByMagicLink]) {
    assertError(sixth, 429, "rate_limited");
    const retryAfter = retryAfterOf(sixth);
    assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  }
  await deliverWebhooks(h);
  assert.equal(webhooksFor(h, "verify_email", "user6@example.org").length, 0, "a refused registration sends nothing");
  assert.equal(webhooksFor(h, "verify_email", "magic6@example.org").length, 0, "a refused registration sends nothing");
  // Another IP is not affected.
  assert.equal((await register(h, "user7@example.org")).statusCode, 200);
  assert.equal((await registerMagic(h, "magic6@example.org")).statusCode, 200, "another IP is not affected");

  h.clock.advance(HOUR);
  const later = await register(h, "user6@example.org", STRONG_PASSWORD, { ip });
  assert.equal(later.statusCode, 200, later.body);
  assert.equal((await registerMagic(h, "magic8@example.org", { ip })).statusCode, 200);
});

test("rate limit: the 4th registration attempt of one email within an hour, of either kind, is 429, also from other IPs; after an hour it passes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  // Spec 8.2: 3 attempts per email per hour, both kinds together, each from its own IP.
  for (let i = 1; i <= 2; i++) {
    const res = await register(h, "ada@example.org");
    assert.equal(res.statusCode, 200, `attempt ${i}: ${res.body}`);
  }
  const third = await registerMagic(h, "ada@example.org");
  assert.equal(third.statusCode, 200, `attempt 3: ${third.body}`);
  const fourth = await register(h, "Ada@Example.org");
  assertError(fourth, 429, "rate_limited");
  const retryAfter = retryAfterOf(fourth);
  assert.ok(retryAfter >= 1 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  const fourthByMagicLink = await registerMagic(h, "Ada@Example.org");
  assertError(fourthByMagicLink, 429, "rate_limited");
  retryAfterOf(fourthByMagicLink);
  // Another email is not affected.
  assert.equal((await register(h, "bob@example.org")).statusCode, 200);

  h.clock.advance(HOUR);
  const later = await register(h, "ada@example.org");
  assert.equal(later.statusCode, 200, later.body);
  assert.equal((await registerMagic(h, "ada@example.org")).statusCode, 200);
});
