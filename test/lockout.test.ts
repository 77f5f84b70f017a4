/**
 * Progressive password-login lockout (spec 8.2 "Failed logins", DECISIONS D13): 3 failures lock
 * for 1 h, then 4 h, 24 h, 7 d, staying at 7 d; attempts during a lockout are refused (429) and
 * do not extend it; a successful login or a password reset clears count and escalation. Keyed by
 * email per tenant, so unknown emails behave exactly like known ones. Driven by the ManualClock.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { DAY, HOUR, MINUTE, SECOND } from "../src/core/clock.js";
import { assertLoginRefused, retryAfterOf } from "./support/assertions.js";
import { addOtherTenant, lastWebhookFor, requestResetLink, resetPassword, WRONG_PASSWORD } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  login,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  registerVerifiedMember,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";

const EMAIL = "ada@example.org";

/** 401 invalid_credentials with authorized:false (D4). */
function assertInvalidCredentials(res: LightMyRequestResponse): void {
  assertLoginRefused(res, 401, "invalid_credentials");
}

/** 429 rate_limited with authorized:false and a message (spec 4.2, 7); returns Retry-After. */
function assertLockedOut(res: LightMyRequestResponse): number {
  assertLoginRefused(res, 429, "rate_limited");
  return retryAfterOf(res);
}

function assertLoggedIn(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().authorized, true, res.body);
}

/** Three consecutive wrong passwords, each answered 401 invalid_credentials. */
async function failThreeTimes(h: Harness, email = EMAIL, domain?: string): Promise<void> {
  for (let i = 1; i <= 3; i++) {
    assertInvalidCredentials(await login(h, email, WRONG_PASSWORD, { domain }));
  }
}

/** Registers and verifies a member on a tenant other than the harness's own. */
async function registerVerifiedOn(h: Harness, domain: string, email: string, password: string): Promise<string> {
  const res = await post(
    h,
    "/auth/register-password",
    { email, name: "Ada Lovelace", password, "bot-challenge-response": "x" },
    { domain, ip: "198.51.100.99" },
  );
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "verify_email", email, domain).body.verificationLink!);
  const verified = await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token }, { domain });
  assert.equal(verified.statusCode, 200, verified.body);
  return link.recordId;
}

test("lockout: 3 wrong passwords lock for 1 h; the 4th attempt, even with the right password, is 429 with Retry-After 3600", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await failThreeTimes(h);
  const fourth = await login(h, EMAIL, STRONG_PASSWORD);
  const retryAfter = assertLockedOut(fourth);
  assert.ok(retryAfter >= 3599 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
  assert.equal(
    fourth.cookies.find((c) => c.name === "session_id"),
    undefined,
    "no session during lockout",
  );
  // A wrong password during the lockout gets the same answer as the right one.
  assertLockedOut(await login(h, EMAIL, WRONG_PASSWORD));
});

test("lockout: a burst of concurrent wrong passwords gets no more than 3 checked and does not escalate the lockout", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => login(h, EMAIL, `Wrong-Guess-${i}-Pass`)));
  for (const res of burst) {
    if (res.statusCode === 401) assertInvalidCredentials(res);
    else assertLockedOut(res);
  }
  const checked = burst.filter((res) => res.statusCode === 401).length;
  assert.ok(checked <= 3, `${checked} of 10 concurrent guesses were checked against the password (at most 3 may be)`);
  // The burst is one lockout: 1 h, not escalated by the guesses that should have been refused.
  assert.equal(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)), 3600);
});

test("lockout: attempts during the lockout do not extend it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await failThreeTimes(h);
  h.clock.advance(30 * MINUTE);
  const midway = assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD));
  assert.ok(midway >= 1799 && midway <= 1800, `Retry-After ${midway} half-way through`);
  for (let i = 0; i < 5; i++) assertLockedOut(await login(h, EMAIL, WRONG_PASSWORD));
  assert.ok(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)) <= 1800);
  h.clock.advance(30 * MINUTE + SECOND);
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
});

test("lockout: the lockout is over exactly when Retry-After says, not before", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await failThreeTimes(h);
  h.clock.advance(HOUR - SECOND);
  assert.equal(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)), 1);
  h.clock.advance(SECOND);
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
});

test("lockout: escalates 1 h, 4 h, 24 h, 7 d, then stays at 7 d", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const expected = [1 * HOUR, 4 * HOUR, 24 * HOUR, 7 * DAY, 7 * DAY];
  const seen: number[] = [];
  for (const duration of expected) {
    await failThreeTimes(h);
    const retryAfter = assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD));
    seen.push(retryAfter);
    // Still locked one second before the end, free right after.
    h.clock.advance(duration - SECOND);
    assertLockedOut(await login(h, EMAIL, WRONG_PASSWORD));
    h.clock.advance(2 * SECOND);
  }
  assert.deepEqual(seen, [3600, 14400, 86400, 604800, 604800]);
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
});

test("lockout: fewer than 3 consecutive failures followed by a success reset the count", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  for (let round = 0; round < 3; round++) {
    assertInvalidCredentials(await login(h, EMAIL, WRONG_PASSWORD));
    assertInvalidCredentials(await login(h, EMAIL, WRONG_PASSWORD));
    assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
  }
  // Two more failures still don't lock: the count restarted at the last success.
  assertInvalidCredentials(await login(h, EMAIL, WRONG_PASSWORD));
  assertInvalidCredentials(await login(h, EMAIL, WRONG_PASSWORD));
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
});

test("lockout: a successful login resets the escalation (3 failures after it lock for 1 h again)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await failThreeTimes(h);
  assert.equal(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)), 3600);
  h.clock.advance(HOUR + SECOND);
  await failThreeTimes(h);
  assert.equal(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)), 14400, "second lockout escalates");
  h.clock.advance(4 * HOUR + SECOND);
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
  await failThreeTimes(h);
  assert.equal(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)), 3600, "escalation restarted after the success");
});

test("lockout: a password reset clears the lockout and its escalation", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await failThreeTimes(h);
  h.clock.advance(HOUR + SECOND);
  await failThreeTimes(h);
  assert.equal(assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD)), 14400);

  const link = await requestResetLink(h, EMAIL);
  const reset = await resetPassword(h, link.recordId, link.token, OTHER_STRONG_PASSWORD);
  assert.equal(reset.statusCode, 200, reset.body);

  // No clock movement: the lockout is gone at once.
  assertLoggedIn(await login(h, EMAIL, OTHER_STRONG_PASSWORD));
  // And the escalation too: the next lockout is 1 h again, not 24 h.
  await failThreeTimes(h);
  assert.equal(assertLockedOut(await login(h, EMAIL, OTHER_STRONG_PASSWORD)), 3600);
});

test("lockout: an unknown email locks out exactly like a known one", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const sequence = async (email: string, rightPassword: string): Promise<Array<[number, Record<string, unknown>, string | undefined]>> => {
    const answers: LightMyRequestResponse[] = [];
    for (let i = 0; i < 3; i++) answers.push(await login(h, email, WRONG_PASSWORD));
    answers.push(await login(h, email, rightPassword));
    answers.push(await login(h, email, WRONG_PASSWORD));
    return answers.map((res) => {
      const { requestId: _requestId, ...rest } = res.json<Record<string, unknown>>();
      const retry = res.headers["retry-after"];
      return [res.statusCode, rest, retry === undefined ? undefined : String(retry)];
    });
  };
  const known = await sequence(EMAIL, STRONG_PASSWORD);
  const unknown = await sequence("nobody@example.org", STRONG_PASSWORD);
  assert.deepEqual(
    known.map(([status]) => status),
    [401, 401, 401, 429, 429],
  );
  assert.deepEqual(unknown, known);
  // Both end together too.
  h.clock.advance(HOUR + SECOND);
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
  assertInvalidCredentials(await login(h, "nobody@example.org", STRONG_PASSWORD));
});

test("lockout: keyed by the normalised email, so case and spaces don't dodge it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  assertInvalidCredentials(await login(h, EMAIL, WRONG_PASSWORD));
  assertInvalidCredentials(await login(h, "ADA@example.org", WRONG_PASSWORD));
  assertInvalidCredentials(await login(h, " Ada@Example.ORG ", WRONG_PASSWORD));
  assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD));
  assertLockedOut(await login(h, "ADA@EXAMPLE.ORG", STRONG_PASSWORD));
});

test("lockout: another member's login is unaffected", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await registerVerifiedMember(h, "bob@example.org");
  await failThreeTimes(h);
  assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD));
  assertLoggedIn(await login(h, "bob@example.org", STRONG_PASSWORD));
});

test("lockout: per tenant — the same email on another tenant is unaffected", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const otherDomain = "other.example.com";
  await addOtherTenant(h, otherDomain);
  await registerVerifiedMember(h, EMAIL);
  await registerVerifiedOn(h, otherDomain, EMAIL, STRONG_PASSWORD);

  await failThreeTimes(h);
  assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD));
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD, { domain: otherDomain }));

  // And the other way round: a lockout on the other tenant leaves the first alone.
  h.clock.advance(HOUR + SECOND);
  await failThreeTimes(h, EMAIL, otherDomain);
  assertLockedOut(await login(h, EMAIL, STRONG_PASSWORD, { domain: otherDomain }));
  assertLoggedIn(await login(h, EMAIL, STRONG_PASSWORD));
});
