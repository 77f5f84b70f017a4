/**
 * D26 email codes: every magic link email carries a 6-digit code with the link's lifetime and single
 * use; POST /auth/verify-login-code logs in like the link; five wrong codes void the code; the
 * answers never tell a known email from an unknown one (the timing is in enumeration-timing.test.ts).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { DAY, HOUR, MINUTE } from "../src/core/clock.js";
import { assertError, sessionSetCookie } from "./support/assertions.js";
import { rowCounts, rowsHolding } from "./support/database.js";
import { addOtherTenant, enrolTwoFactor, lockMember, magicLinkFor, nextIp, OTHER_DOMAIN } from "./support/flows.js";
import { yieldingTransactions } from "./support/store-seam.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  type Harness,
  type PostOptions,
} from "./support/harness.js";
import { totpAt } from "./support/totp.js";

const EMAIL = "coder@example.org";
const bot = { "bot-challenge-response": "ok" };

function verifyCode(h: Harness, email: string, code: string, options: PostOptions & { twoFACode?: string } = {}) {
  const body = { email, code, ...bot, ...(options.twoFACode ? { twoFACode: options.twoFACode } : {}) };
  return post(h, "/auth/verify-login-code", body, { ip: options.ip ?? nextIp(), ...options });
}

/** A 6-digit code that is not `code`. */
function wrong(code: string, n = 1): string {
  return String((Number(code) + n) % 1_000_000).padStart(6, "0");
}

test("D26: the magic_login webhook carries a 6-digit code; the code logs in like the link and uses the link up, and the link uses the code up", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const first = await magicLinkFor(h, EMAIL);
  assert.match(first.code, /^[0-9]{6}$/);

  const res = await verifyCode(h, EMAIL, first.code);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(Object.keys(res.json()).sort(), ["message", "redirect", "success"]);
  assert.ok(sessionSetCookie(res), "the session cookie of D6");
  const me = await get(h, "/auth/session", { cookie: sessionCookieOf(res)! });
  assert.equal(me.statusCode, 200, me.body);
  assertError(await verifyCode(h, EMAIL, first.code), 400, "invalid_token");
  assertError(await post(h, `/auth/verify-magic-link/${first.recordId}/${first.token}`, bot), 400, "invalid_token");

  h.clock.advance(4 * MINUTE);
  const second = await magicLinkFor(h, EMAIL);
  assert.equal((await post(h, `/auth/verify-magic-link/${second.recordId}/${second.token}`, bot)).statusCode, 200);
  assertError(await verifyCode(h, EMAIL, second.code), 400, "invalid_token");
  assert.equal(recordId, second.recordId);
});

test("D26: a code lives as long as its link, and a newer link voids the older code", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const old = await magicLinkFor(h, EMAIL);
  h.clock.advance(4 * MINUTE);
  const fresh = await magicLinkFor(h, EMAIL);
  if (old.code !== fresh.code) assertError(await verifyCode(h, EMAIL, old.code), 400, "invalid_token");
  h.clock.advance(15 * MINUTE);
  assertError(await verifyCode(h, EMAIL, fresh.code), 400, "invalid_token");
});

test("D26: after five wrong codes the code is void for its link's lifetime (429; the link itself still works); four wrong then the right one logs in", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const link = await magicLinkFor(h, EMAIL);
  for (let i = 1; i <= 4; i++) assertError(await verifyCode(h, EMAIL, wrong(link.code, i)), 400, "invalid_token");
  assert.equal((await verifyCode(h, EMAIL, link.code)).statusCode, 200);

  h.clock.advance(DAY); // past the 10 attempts a day per email
  const next = await magicLinkFor(h, EMAIL);
  for (let i = 1; i <= 5; i++) assertError(await verifyCode(h, EMAIL, wrong(next.code, i)), 400, "invalid_token");
  const refused = await verifyCode(h, EMAIL, next.code);
  assertError(refused, 429, "rate_limited");
  assert.match(refused.json<{ message: string }>().message, /Too many codes tried/);
  // A newer link within the 15 minutes doesn't reopen the budget: its code waits too.
  h.clock.advance(4 * MINUTE);
  const newer = await magicLinkFor(h, EMAIL);
  assertError(await verifyCode(h, EMAIL, newer.code), 429, "rate_limited");
  assert.equal((await post(h, `/auth/verify-magic-link/${newer.recordId}/${newer.token}`, bot)).statusCode, 200, "the 256-bit link is no guess");
});

test("D26: the five comparisons are a security budget, kept with RATE_LIMITS=off, for unknown emails alike", async (t) => {
  const h = await createHarness({ env: { RATE_LIMITS: "off" } });
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const link = await magicLinkFor(h, EMAIL);
  for (let i = 1; i <= 5; i++) assertError(await verifyCode(h, EMAIL, wrong(link.code, i)), 400, "invalid_token");
  assertError(await verifyCode(h, EMAIL, link.code), 429, "rate_limited");
  for (let i = 1; i <= 5; i++) assertError(await verifyCode(h, "nobody@example.org", "123456"), 400, "invalid_token");
  assertError(await verifyCode(h, "nobody@example.org", "123456"), 429, "rate_limited");
});

test("D26: concurrent wrong codes can't overrun the budget: after eight at once the right code is refused", async (t) => {
  yieldingTransactions(t);
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const link = await magicLinkFor(h, EMAIL);
  const guesses = await Promise.all(Array.from({ length: 8 }, (_, i) => verifyCode(h, EMAIL, wrong(link.code, i + 1))));
  assert.deepEqual(guesses.map((r) => r.statusCode).sort(), [400, 400, 400, 400, 400, 429, 429, 429], "five compared, three refused before comparing");
  assertError(await verifyCode(h, EMAIL, link.code), 429, "rate_limited");
  assert.equal((await h.db.selectFrom("sessions").select("member_id").execute()).length, 0, "no guess opened a session");
});

test("D26: two submissions of the right code at once: one session, one refusal", async (t) => {
  yieldingTransactions(t);
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const link = await magicLinkFor(h, EMAIL);
  const both = await Promise.all([verifyCode(h, EMAIL, link.code), verifyCode(h, EMAIL, link.code)]);
  assert.deepEqual(both.map((r) => r.statusCode).sort(), [200, 400]);
  assert.equal((await h.db.selectFrom("sessions").select("member_id").execute()).length, 1);
});

test("D26: an unknown email, an email without a link and a wrong code get the same answer and the same writes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  await registerVerifiedMember(h, "no-link@example.org");
  const link = await magicLinkFor(h, EMAIL);
  const answers = [];
  const writes = [];
  for (const email of ["nobody@example.org", "no-link@example.org", EMAIL]) {
    const before = await rowCounts(h);
    const res = await verifyCode(h, email, wrong(link.code));
    answers.push({ status: res.statusCode, body: { ...res.json(), requestId: undefined } });
    writes.push(
      Object.entries(await rowCounts(h))
        .map(([table, n]) => [table, n - before[table]!])
        .filter(([, delta]) => delta !== 0),
    );
  }
  assert.deepEqual(answers[0], answers[1]);
  assert.deepEqual(answers[1], answers[2]);
  assert.equal(answers[0]!.status, 400);
  assert.deepEqual(writes[0], writes[1]);
  assert.deepEqual(writes[1], writes[2]);
});

test("D26: with 2FA the right code asks for the second factor and stays valid; a wrong second factor spends nothing", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const { secret } = await enrolTwoFactor(h, sessionCookieOf(await login(h, EMAIL))!);
  const link = await magicLinkFor(h, EMAIL);
  const asked = await verifyCode(h, EMAIL, link.code);
  assert.equal(asked.statusCode, 200, asked.body);
  assert.deepEqual(asked.json(), { success: false, requires2FA: true, message: "Enter the code from your authenticator app to finish logging in." });
  assert.equal(sessionCookieOf(asked), undefined);
  assertError(await verifyCode(h, EMAIL, link.code, { twoFACode: "000000" === totpAt(secret, h.clock.now()) ? "111111" : "000000" }), 401, "invalid_2fa_code");
  const done = await verifyCode(h, EMAIL, link.code, { twoFACode: totpAt(secret, h.clock.now()) });
  assert.equal(done.statusCode, 200, done.body);
  assert.ok(sessionSetCookie(done));
});

test("D26: a lock voids the code; another tenant's code is refused", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  await addOtherTenant(h);
  const link = await magicLinkFor(h, EMAIL);
  assertError(await verifyCode(h, EMAIL, link.code, { domain: OTHER_DOMAIN }), 400, "invalid_token");
  await lockMember(h, recordId);
  assertError(await verifyCode(h, EMAIL, link.code), 400, "invalid_token");
});

test("D26: codes are limited per email (10 a day, known or not) and per IP (10 an hour)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  for (const email of [EMAIL, "unknown@example.org"]) {
    for (let i = 0; i < 10; i++) {
      if (i === 5) h.clock.advance(16 * MINUTE); // past the 5 comparisons per 15 minutes
      assertError(await verifyCode(h, email, "123456"), 400, "invalid_token");
    }
    const refused = await verifyCode(h, email, "123456");
    assertError(refused, 429, "rate_limited");
    assert.ok(Number(refused.headers["retry-after"]) > 3600, "the day's limit, not the 15 minutes'");
  }
  h.clock.advance(DAY);
  assertError(await verifyCode(h, EMAIL, "123456"), 400, "invalid_token");
  const ip = nextIp();
  for (let i = 0; i < 10; i++) assertError(await verifyCode(h, `ip-${i}@example.org`, "123456", { ip }), 400, "invalid_token");
  assertError(await verifyCode(h, "ip-x@example.org", "123456", { ip }), 429, "rate_limited");
  h.clock.advance(HOUR);
  assertError(await verifyCode(h, "ip-y@example.org", "123456", { ip }), 400, "invalid_token");
});

test("D26: the code is stored only as a keyed hash, and a malformed code is a 400 that writes nothing", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, EMAIL);
  const link = await magicLinkFor(h, EMAIL);
  const sha = createHash("sha256").update(link.code).digest("hex");
  assert.deepEqual(await rowsHolding(h, { exact: [link.code, sha] }), [], "neither the code nor its plain hash is in any table but the undelivered outbox");
  await deliverWebhooks(h);
  const before = await rowCounts(h);
  for (const code of ["12345", "1234567", "abcdef", ""]) assertError(await verifyCode(h, EMAIL, code), 400, "validation_failed");
  assert.deepEqual(await rowCounts(h), before);
});
