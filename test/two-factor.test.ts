/**
 * The second factor through HTTP (spec 4.2 steps 6-7, 8.2 "Failed 2FA"; DECISIONS D4, D13, D14):
 * enrolment, login with a TOTP or a recovery code, the ±1-step window, replay, the 15-minute 2FA
 * lockout, recovery-code regeneration, disabling, the tenant's require2FA, storage at rest, and
 * no secret in the logs. Codes come from test/support/totp.ts, an implementation independent of
 * the service's (checked here against RFC 6238 Appendix B). Time is the ManualClock; nothing sleeps.
 */
import assert from "node:assert/strict";
import { createDecipheriv } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { assertError, assertLoginRefused, assertRecoveryCodes, retryAfterOf, setCookieHeaders } from "./support/assertions.js";
import { enrolTwoFactor, nextIp, sessionData, WRONG_PASSWORD } from "./support/flows.js";
import { yieldingTransactions } from "./support/store-seam.js";
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
import { keyId } from "../src/security/secret-box.js";
import { base32Decode, hotp, totpAt, wrongCode } from "./support/totp.js";

const EMAIL = "ada@example.org";
/** The harness's SECRETS_KEY (hex). */
const SECRETS_KEY_HEX = "11".repeat(32);

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** 200 authorized with a cookie; returns the session id. */
function assertAuthorized(res: LightMyRequestResponse, recordId?: string): string {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<Record<string, unknown>>();
  assert.equal(body.authorized, true, res.body);
  if (recordId !== undefined) assert.deepEqual(body, { authorized: true, recordid: recordId, redirectUrl: "/" });
  const cookie = sessionCookieOf(res);
  assert.ok(cookie, "no session cookie");
  return cookie;
}

/** 200 exactly { authorized:false, two_factor_required:true, message } and no session cookie. */
function assertTwoFactorRequired(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<Record<string, unknown>>();
  assert.deepEqual(Object.keys(body).sort(), ["authorized", "message", "two_factor_required"], res.body);
  assert.equal(body.authorized, false);
  assert.equal(body.two_factor_required, true);
  assert.equal(typeof body.message, "string");
  assert.ok((body.message as string).length > 0);
  assert.deepEqual(
    setCookieHeaders(res).filter((c) => c.startsWith("session_id=")),
    [],
    "no session before the second factor",
  );
}

async function loginWithCode(h: Harness, code: string | undefined, password = STRONG_PASSWORD, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/login", { email: EMAIL, password, "bot-challenge-response": "x", ...(code === undefined ? {} : { twoFACode: code }) }, options);
}

/** A verified password member with a live session. */
async function memberWithSession(h: Harness, email = EMAIL): Promise<{ recordId: string; cookie: string }> {
  const recordId = await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp());
  const cookie = assertAuthorized(await login(h, email));
  return { recordId, cookie };
}

/** D30: re-authenticated at setup, so enable needs only the code. */
async function setUp(h: Harness, cookie: string): Promise<{ secret: string; otpauthUrl: string; qrCodeDataUrl: string }> {
  const res = await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ secret: string; otpauthUrl: string; qrCodeDataUrl: string }>();
}

/** Every byte the store has written: the database file and its WAL. */
function rawDatabaseText(h: Harness): string {
  return ["latch.db", "latch.db-wal"]
    .map((name) => join(h.dataDir, name))
    .filter((file) => existsSync(file))
    .map((file) => readFileSync(file).toString("latin1"))
    .join("\n");
}

// ---------------------------------------------------------------------------------------------
// The independent TOTP itself (RFC 6238 Appendix B)
// ---------------------------------------------------------------------------------------------

test("test/support/totp.ts: RFC 6238 Appendix B SHA-1 vectors, and its base32 path agrees", () => {
  const key = Buffer.from("12345678901234567890", "ascii");
  const vectors: Array<[number, string]> = [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1111111111, "14050471"],
    [1234567890, "89005924"],
    [2000000000, "69279037"],
  ];
  for (const [seconds, expected] of vectors) {
    assert.equal(hotp(key, Math.floor(seconds / 30), 8), expected, `T=${seconds}`);
  }
  // The same key in base32, through totpAt (6 digits: the same truncation mod 10^6).
  const base32 = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
  assert.deepEqual(base32Decode(base32), key);
  for (const [seconds, expected] of vectors) {
    assert.equal(totpAt(base32, seconds * 1000), expected.slice(2), `totpAt T=${seconds}`);
    assert.equal(totpAt(base32, (seconds - 30) * 1000, 1), expected.slice(2), `totpAt T=${seconds} via +1 step`);
  }
});

// ---------------------------------------------------------------------------------------------
// Setup and enable (D14)
// ---------------------------------------------------------------------------------------------

test("2fa endpoints need a session: 401 unauthorized without one", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assertError(await post(h, "/auth/2fa/setup", {}), 401, "unauthorized");
  assertError(await post(h, "/auth/2fa/enable", { code: "123456" }), 401, "unauthorized");
  assertError(await post(h, "/auth/2fa/disable", { password: STRONG_PASSWORD }), 401, "unauthorized");
  assertError(await post(h, "/auth/2fa/recovery-codes", { code: "123456" }), 401, "unauthorized");
  assertError(await post(h, "/auth/2fa/setup", {}, { cookie: "not-a-real-session-id-aaaaaaaaaaaaaaaaaaaaa" }), 401, "unauthorized");
});

test("2fa setup: a 160-bit base32 secret, an otpauth URL with issuer, secret, SHA1, 6 digits, 30 s, and a PNG QR code", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const res = await post(h, "/auth/2fa/setup", {}, { cookie });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<Record<string, unknown>>();
  assert.deepEqual(Object.keys(body).sort(), ["otpauthUrl", "qrCodeDataUrl", "secret", "success"]);
  assert.equal(body.success, true);

  const secret = body.secret as string;
  assert.match(secret, /^[A-Z2-7]{32}$/);
  assert.equal(base32Decode(secret).length, 20, "160 bits");

  const otpauthUrl = body.otpauthUrl as string;
  assert.ok(otpauthUrl.startsWith("otpauth://totp/"), otpauthUrl);
  const url = new URL(otpauthUrl);
  assert.equal(url.searchParams.get("issuer"), h.tenant.domain);
  assert.equal(url.searchParams.get("secret"), secret);
  assert.equal(url.searchParams.get("algorithm"), "SHA1");
  assert.equal(url.searchParams.get("digits"), "6");
  assert.equal(url.searchParams.get("period"), "30");
  const label = decodeURIComponent(otpauthUrl.slice("otpauth://totp/".length).split("?")[0]!);
  assert.ok(label.includes(EMAIL), `label ${label} names the account`);

  const qr = body.qrCodeDataUrl as string;
  const prefix = "data:image/png;base64,";
  assert.ok(qr.startsWith(prefix), qr.slice(0, 40));
  const png = Buffer.from(qr.slice(prefix.length), "base64");
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
  assert.ok(png.length > 100);

  // Setup alone enables nothing.
  assert.equal((await sessionData(h, cookie)).is2FAEnabled, false);
  assertAuthorized(await login(h, EMAIL));
});

test("2fa setup: a second setup replaces the pending secret; the first one's code no longer enables", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const first = await setUp(h, cookie);
  const second = await setUp(h, cookie);
  assert.notEqual(first.secret, second.secret);
  const firstCode = totpAt(first.secret, h.clock.now());
  if (firstCode !== totpAt(second.secret, h.clock.now())) {
    assertError(await post(h, "/auth/2fa/enable", { code: firstCode }, { cookie }), 401, "invalid_2fa_code");
  }
  assertRecoveryCodes(await post(h, "/auth/2fa/enable", { code: totpAt(second.secret, h.clock.now()) }, { cookie }));
});

test("2fa enable: without setup 409; a wrong code 401 invalid_2fa_code; the independent code 200 with 10 recovery codes; again 409", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, cookie } = await memberWithSession(h);
  assertError(await post(h, "/auth/2fa/enable", { code: "123456" }, { cookie }), 409, "invalid_state");
  const { secret } = await setUp(h, cookie);
  assertError(await post(h, "/auth/2fa/enable", { code: wrongCode(secret, h.clock.now()) }, { cookie }), 401, "invalid_2fa_code");
  assertError(await post(h, "/auth/2fa/enable", { code: "not-a-code" }, { cookie }), 401, "invalid_2fa_code");
  assert.equal((await sessionData(h, cookie)).is2FAEnabled, false, "a wrong code enables nothing");

  assertRecoveryCodes(await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie }));
  h.clock.advance(30 * SECOND);

  // A new login session shows it, and login now asks for the code.
  assertTwoFactorRequired(await login(h, EMAIL));
  const fresh = assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())), recordId);
  assert.equal((await sessionData(h, fresh)).is2FAEnabled, true);

  h.clock.advance(30 * SECOND);
  assertError(await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie: fresh }), 409, "invalid_state");
  assertError(await post(h, "/auth/2fa/setup", {}, { cookie: fresh }), 409, "invalid_state");
  // Nothing changed: the same secret still works.
  h.clock.advance(30 * SECOND);
  assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())));
});

// ---------------------------------------------------------------------------------------------
// Login with the second factor (spec 4.2 steps 6-7, D14)
// ---------------------------------------------------------------------------------------------

test("2fa enable ends the member's other sessions and keeps the one that enrolled", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const other = assertAuthorized(await login(h, EMAIL));
  const { recordId: otherMember, cookie: otherMembersCookie } = await memberWithSession(h, "grace@example.org");
  assert.ok(otherMember);
  await enrolTwoFactor(h, cookie);
  assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200, "the enrolling session stays");
  assertError(await get(h, "/auth/session", { cookie: other }), 401, "unauthorized");
  assert.equal((await get(h, "/auth/session", { cookie: otherMembersCookie })).statusCode, 200, "another member's session is untouched");
});

test("2fa login: no code -> exactly {authorized:false, two_factor_required, message}, no cookie; a valid TOTP -> session; the same code again -> 401", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, cookie } = await memberWithSession(h);
  const enrolledAt = h.clock.now();
  const { secret } = await enrolTwoFactor(h, cookie);

  assertTwoFactorRequired(await loginWithCode(h, undefined));
  const code = totpAt(secret, h.clock.now());
  const session = assertAuthorized(await loginWithCode(h, code), recordId);
  assert.equal((await sessionData(h, session)).is2FAEnabled, true);
  // Replays: the same code in the same step, and the enrolment code (a step inside the window).
  assertLoginRefused(await loginWithCode(h, code), 401, "invalid_2fa_code");
  assertLoginRefused(await loginWithCode(h, totpAt(secret, enrolledAt)), 401, "invalid_2fa_code");
  // The code with spaces around it is the same code: still a replay.
  h.clock.advance(30 * SECOND);
  const next = totpAt(secret, h.clock.now());
  assertAuthorized(await loginWithCode(h, ` ${next} `));
  assertLoginRefused(await loginWithCode(h, next), 401, "invalid_2fa_code");
});

test("2fa login: codes of the previous and the next step are accepted (±1), each once; an older step than the last accepted is refused", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret } = await enrolTwoFactor(h, cookie);

  h.clock.advance(60 * SECOND);
  const previous = totpAt(secret, h.clock.now(), -1);
  assertAuthorized(await loginWithCode(h, previous));
  assertLoginRefused(await loginWithCode(h, previous), 401, "invalid_2fa_code");

  h.clock.advance(30 * SECOND);
  const next = totpAt(secret, h.clock.now(), +1);
  assertAuthorized(await loginWithCode(h, next));
  // The current step is older than the accepted +1 step: a replay of an earlier window.
  assertLoginRefused(await loginWithCode(h, totpAt(secret, h.clock.now())), 401, "invalid_2fa_code");
  h.clock.advance(30 * SECOND);
  // Now the accepted step is the current one: only the next step is still fresh.
  assertLoginRefused(await loginWithCode(h, next), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now(), +1)));
});

test("2fa login: codes two steps away (-2, +2) are refused", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret } = await enrolTwoFactor(h, cookie);
  h.clock.advance(10 * MINUTE);
  const now = h.clock.now();
  const window = new Set([-1, 0, 1].map((offset) => totpAt(secret, now, offset)));
  for (const offset of [-2, +2]) {
    const code = totpAt(secret, now, offset);
    assert.ok(!window.has(code), `the step ${offset} code happens to equal a code inside the window`);
    assertLoginRefused(await loginWithCode(h, code), 401, "invalid_2fa_code");
  }
  assertAuthorized(await loginWithCode(h, totpAt(secret, now)));
});

test("2fa login: a recovery code works once, in any case and with or without the dash", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, cookie } = await memberWithSession(h);
  const { recoveryCodes: codes } = await enrolTwoFactor(h, cookie);

  assertAuthorized(await loginWithCode(h, codes[0]), recordId);
  assertLoginRefused(await loginWithCode(h, codes[0]), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, codes[1]!.toUpperCase()));
  assertLoginRefused(await loginWithCode(h, codes[1]), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, codes[2]!.replace("-", "")));
  assertLoginRefused(await loginWithCode(h, codes[2]!.toUpperCase()), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, codes[3]!.toUpperCase().replace("-", "")));
  // A code that looks right but is not in the set.
  const unknown = "abcde-fghjk";
  if (!codes.includes(unknown)) assertLoginRefused(await loginWithCode(h, unknown), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, codes[4]));
});

test("2fa login: a wrong password is 401 invalid_credentials with no 2FA hint, and a code sent with it is not used up", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret, recoveryCodes } = await enrolTwoFactor(h, cookie);
  const code = totpAt(secret, h.clock.now());

  const noCode = assertLoginRefused(await loginWithCode(h, undefined, WRONG_PASSWORD), 401, "invalid_credentials");
  assert.deepEqual(Object.keys(noCode).sort(), ["authorized", "code", "message", "requestId", "success"]);
  assertLoginRefused(await loginWithCode(h, code, WRONG_PASSWORD), 401, "invalid_credentials");
  // The right password with that same code: it was not used up. (Also clears the password counter.)
  assertAuthorized(await loginWithCode(h, code));
  assertLoginRefused(await loginWithCode(h, recoveryCodes[0], OTHER_STRONG_PASSWORD), 401, "invalid_credentials");
  assertAuthorized(await loginWithCode(h, recoveryCodes[0]));
});

// ---------------------------------------------------------------------------------------------
// The 2FA lockout (spec 4.2 step 7, 8.2 "Failed 2FA", D13, D14)
// ---------------------------------------------------------------------------------------------

test("2fa lockout: 3 wrong codes -> the 4th attempt, even the right code or a recovery code, is 429 with Retry-After 900; after 15 min codes work", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret, recoveryCodes } = await enrolTwoFactor(h, cookie);
  for (let i = 1; i <= 3; i++) {
    assertLoginRefused(await loginWithCode(h, wrongCode(secret, h.clock.now())), 401, "invalid_2fa_code");
  }
  const locked = await loginWithCode(h, totpAt(secret, h.clock.now()));
  const body = assertLoginRefused(locked, 429, "rate_limited");
  assert.equal(body.authorized, false);
  assert.equal(retryAfterOf(locked), 900);
  assertLoginRefused(await loginWithCode(h, recoveryCodes[0]), 429, "rate_limited");
  // Attempts during the lockout do not extend it.
  h.clock.advance(10 * MINUTE);
  const later = await loginWithCode(h, totpAt(secret, h.clock.now()));
  assertLoginRefused(later, 429, "rate_limited");
  assert.equal(retryAfterOf(later), 300);
  h.clock.advance(5 * MINUTE - SECOND);
  const last = await loginWithCode(h, totpAt(secret, h.clock.now()));
  assertLoginRefused(last, 429, "rate_limited");
  assert.equal(retryAfterOf(last), 1);

  h.clock.advance(SECOND);
  assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())));
  // The recovery code tried during the lockout was not checked, so not used up.
  assertAuthorized(await loginWithCode(h, recoveryCodes[0]));
});

test("2fa lockout: the counters are separate: during a 2FA lockout the password step still answers, and wrong passwords get 401", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret } = await enrolTwoFactor(h, cookie);
  for (let i = 1; i <= 3; i++) assertLoginRefused(await loginWithCode(h, wrongCode(secret, h.clock.now())), 401, "invalid_2fa_code");
  assertLoginRefused(await loginWithCode(h, totpAt(secret, h.clock.now())), 429, "rate_limited");
  // The password is checked first and is not locked: without a code the answer is "code needed".
  assertTwoFactorRequired(await loginWithCode(h, undefined));
  // A wrong password is just a wrong password (its own counter, 1 of 3).
  assertLoginRefused(await loginWithCode(h, undefined, WRONG_PASSWORD), 401, "invalid_credentials");
  assertLoginRefused(await loginWithCode(h, totpAt(secret, h.clock.now()), WRONG_PASSWORD), 401, "invalid_credentials");
  assertLoginRefused(await loginWithCode(h, totpAt(secret, h.clock.now())), 429, "rate_limited");
  h.clock.advance(15 * MINUTE);
  assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())));
});

test("2fa lockout: 2 wrong passwords and 2 wrong codes, in either order, lock nothing", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret } = await enrolTwoFactor(h, cookie);
  // Interleaved.
  assertLoginRefused(await loginWithCode(h, undefined, WRONG_PASSWORD), 401, "invalid_credentials");
  assertLoginRefused(await loginWithCode(h, wrongCode(secret, h.clock.now())), 401, "invalid_2fa_code");
  assertLoginRefused(await loginWithCode(h, undefined, WRONG_PASSWORD), 401, "invalid_credentials");
  assertLoginRefused(await loginWithCode(h, wrongCode(secret, h.clock.now())), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())));
  // Passwords first, then codes.
  h.clock.advance(30 * SECOND);
  assertLoginRefused(await loginWithCode(h, undefined, WRONG_PASSWORD), 401, "invalid_credentials");
  assertLoginRefused(await loginWithCode(h, undefined, WRONG_PASSWORD), 401, "invalid_credentials");
  assertLoginRefused(await loginWithCode(h, wrongCode(secret, h.clock.now())), 401, "invalid_2fa_code");
  assertLoginRefused(await loginWithCode(h, wrongCode(secret, h.clock.now())), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())));
});

test("2fa: concurrent uses of one TOTP code or one recovery code: exactly one is accepted", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret, recoveryCodes } = await enrolTwoFactor(h, cookie);
  yieldingTransactions(t);
  const code = totpAt(secret, h.clock.now());
  const totpResults = await Promise.all(Array.from({ length: 10 }, () => post(h, "/auth/2fa/recovery-codes", { code }, { cookie })));
  assert.equal(totpResults.filter((r) => r.statusCode === 200).length, 1, totpResults.map((r) => `${r.statusCode} ${r.body}`).join("\n"));
  for (const r of totpResults.filter((x) => x.statusCode !== 200)) {
    assert.ok(r.statusCode === 401 || r.statusCode === 429, `${r.statusCode} ${r.body}`);
  }
  const newCodes = assertRecoveryCodes(totpResults.find((r) => r.statusCode === 200)!);
  assert.ok(!newCodes.includes(recoveryCodes[0]!));

  h.clock.advance(15 * MINUTE); // past the lockout the losers caused
  const recoveryResults = await Promise.all(Array.from({ length: 10 }, () => post(h, "/auth/2fa/recovery-codes", { code: newCodes[0] }, { cookie })));
  assert.equal(recoveryResults.filter((r) => r.statusCode === 200).length, 1, recoveryResults.map((r) => `${r.statusCode} ${r.body}`).join("\n"));
});

// ---------------------------------------------------------------------------------------------
// Recovery codes and disabling (D14)
// ---------------------------------------------------------------------------------------------

test("2fa recovery-codes: needs 2FA and a valid code; returns 10 new codes; the old set stops working, the new one works", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  assertError(await post(h, "/auth/2fa/recovery-codes", { code: "123456" }, { cookie }), 409, "invalid_state");
  const { secret, recoveryCodes: oldCodes } = await enrolTwoFactor(h, cookie);

  assertError(await post(h, "/auth/2fa/recovery-codes", { code: wrongCode(secret, h.clock.now()) }, { cookie }), 401, "invalid_2fa_code");
  const newCodes = assertRecoveryCodes(await post(h, "/auth/2fa/recovery-codes", { code: totpAt(secret, h.clock.now()) }, { cookie }));
  assert.deepEqual(
    newCodes.filter((c) => oldCodes.includes(c)),
    [],
    "a wholly new set",
  );

  for (const old of oldCodes.slice(0, 2)) assertLoginRefused(await loginWithCode(h, old), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, newCodes[0]));
  assertLoginRefused(await loginWithCode(h, oldCodes[2]), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, newCodes[1]));
});

test("2fa disable: 409 when not enabled; 400 with neither password nor code; 401 with a wrong password; 200 with the right one", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, cookie } = await memberWithSession(h);
  assertError(await post(h, "/auth/2fa/disable", { password: STRONG_PASSWORD }, { cookie }), 409, "invalid_state");
  const { secret, recoveryCodes } = await enrolTwoFactor(h, cookie);

  assertError(await post(h, "/auth/2fa/disable", {}, { cookie }), 400, "validation_failed");
  assertError(await post(h, "/auth/2fa/disable", { password: WRONG_PASSWORD }, { cookie }), 401, "invalid_credentials");
  assertTwoFactorRequired(await login(h, EMAIL));

  const disabled = await post(h, "/auth/2fa/disable", { password: STRONG_PASSWORD }, { cookie });
  assert.equal(disabled.statusCode, 200, disabled.body);
  assert.deepEqual(Object.keys(disabled.json<object>()).sort(), ["message", "success"]);
  assert.equal(disabled.json().success, true);

  const fresh = assertAuthorized(await login(h, EMAIL), recordId);
  assert.equal((await sessionData(h, fresh)).is2FAEnabled, false);
  assertError(await post(h, "/auth/2fa/disable", { password: STRONG_PASSWORD }, { cookie }), 409, "invalid_state");

  // Enrolling again gives a new secret; the old recovery codes are gone for good.
  h.clock.advance(30 * SECOND);
  const again = await enrolTwoFactor(h, cookie);
  assert.notEqual(again.secret, secret);
  assertLoginRefused(await loginWithCode(h, recoveryCodes[0]), 401, "invalid_2fa_code");
  assertAuthorized(await loginWithCode(h, again.recoveryCodes[0]));
});

test("2fa disable: with a valid TOTP code -> 200; with a wrong code -> 401 invalid_2fa_code", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const { secret } = await enrolTwoFactor(h, cookie);
  assertError(await post(h, "/auth/2fa/disable", { code: wrongCode(secret, h.clock.now()) }, { cookie }), 401, "invalid_2fa_code");
  assertTwoFactorRequired(await login(h, EMAIL));
  const disabled = await post(h, "/auth/2fa/disable", { code: totpAt(secret, h.clock.now()) }, { cookie });
  assert.equal(disabled.statusCode, 200, disabled.body);
  assert.equal((await sessionData(h, cookie)).is2FAEnabled, false);
  assertAuthorized(await login(h, EMAIL));
});

// ---------------------------------------------------------------------------------------------
// Tenant require2FA (D1, D14)
// ---------------------------------------------------------------------------------------------

test("tenant require2FA: a session of a member without 2FA has require2FASetup true; after enrolment a new session has false", async (t) => {
  const h = await createHarness({ settings: { require2FA: true } });
  t.after(() => h.close());
  const { cookie } = await memberWithSession(h);
  const before = await sessionData(h, cookie);
  assert.equal(before.require2FASetup, true);
  assert.equal(before.is2FAEnabled, false);
  const { secret } = await enrolTwoFactor(h, cookie);
  const fresh = assertAuthorized(await loginWithCode(h, totpAt(secret, h.clock.now())));
  const after = await sessionData(h, fresh);
  assert.equal(after.require2FASetup, false);
  assert.equal(after.is2FAEnabled, true);

  // On a tenant without the setting the flag is false.
  const plain = await createHarness();
  t.after(() => plain.close());
  const other = await registerVerifiedMember(plain, EMAIL);
  const plainCookie = assertAuthorized(await login(plain, EMAIL), other);
  assert.equal((await sessionData(plain, plainCookie)).require2FASetup, false);
});

// ---------------------------------------------------------------------------------------------
// At rest (D1, D14)
// ---------------------------------------------------------------------------------------------

test("at rest: the TOTP secret is stored AES-256-GCM encrypted, never in the clear; recovery codes only as hashes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, cookie } = await memberWithSession(h);
  const { secret } = await setUp(h, cookie);
  const secretBytes = base32Decode(secret);
  const recoveryCodes = assertRecoveryCodes(await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie }));

  const row = await h.db
    .selectFrom("members")
    .select(["totp_secret_enc", "totp_pending_secret_enc"])
    .where("id", "=", Number(recordId))
    .executeTakeFirstOrThrow();
  const sealed = row.totp_secret_enc;
  assert.ok(sealed, "a stored secret");
  assert.equal(row.totp_pending_secret_enc, null, "the pending secret is gone after enabling");
  for (const form of [secret, secret.toLowerCase(), secretBytes.toString("hex"), secretBytes.toString("base64"), secretBytes.toString("base64url")]) {
    assert.ok(!sealed.includes(form), "the stored value does not contain the secret");
  }
  // D14: AES-256-GCM under SECRETS_KEY (format v2.<key id>.<iv>.<ciphertext>.<tag>, base64url parts).
  const [version, kid, iv, data, tag] = sealed.split(".");
  assert.equal(version, "v2", sealed.slice(0, 8));
  assert.equal(kid, keyId(Buffer.from(SECRETS_KEY_HEX, "hex")));
  const decipher = createDecipheriv("aes-256-gcm", Buffer.from(SECRETS_KEY_HEX, "hex"), Buffer.from(iv!, "base64url"));
  decipher.setAuthTag(Buffer.from(tag!, "base64url"));
  assert.equal(Buffer.concat([decipher.update(Buffer.from(data!, "base64url")), decipher.final()]).toString("utf8"), secret);

  const sample = await h.db.selectFrom("recovery_codes").selectAll().where("member_id", "=", Number(recordId)).execute();
  assert.deepEqual(Object.keys(sample[0]!).sort(), ["code_hash", "member_id", "tenant_id"]);
  const stored = sample.map((r) => r.code_hash);
  assert.equal(stored.length, 10);
  for (const hash of stored) assert.match(hash, /^[0-9a-f]{64}$/);
  for (const code of recoveryCodes) {
    for (const form of [code, code.replaceAll("-", ""), code.toUpperCase()]) {
      assert.ok(!stored.some((hash) => hash.includes(form)), "no stored value holds a code");
    }
  }

  // Nowhere in the database files, in any form (SQLite: the files are the store; PostgreSQL's
  // files are the server's, so the row checks above are the check there).
  if (h.storeKind !== "sqlite") return;
  const raw = rawDatabaseText(h);
  for (const form of [secret, secret.toLowerCase(), secretBytes.toString("hex"), secretBytes.toString("base64url"), secretBytes.toString("latin1")]) {
    assert.ok(!raw.includes(form), "the TOTP secret is not in the database files");
  }
  for (const code of recoveryCodes) {
    assert.ok(!raw.includes(code) && !raw.includes(code.replaceAll("-", "")), "a recovery code is not in the database files");
  }
});

// ---------------------------------------------------------------------------------------------
// No secret in the logs (spec 2.3, D1, D9, D14)
// ---------------------------------------------------------------------------------------------

test("logs: magic-link and 2FA flows log no token, link, TOTP secret, otpauth URL, recovery code, session id, code or password", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  h.deps.log.level = "trace";
  const secrets = new Map<string, string>();
  const keep = (label: string, value: string | undefined): string => {
    assert.ok(value && value.length >= 8, `${label} is present`);
    secrets.set(label, value);
    return value;
  };
  const codes = new Set<string>();
  const useCode = (code: string): string => {
    codes.add(code);
    return code;
  };
  keep("password", STRONG_PASSWORD);
  keep("wrong password", WRONG_PASSWORD);

  // A password member enrols, logs in with codes, regenerates, disables.
  const { recordId, cookie } = await memberWithSession(h);
  keep("verification link", h.receiver.last("verify_email").body.verificationLink);
  keep("verification token", parseLink(h.receiver.last("verify_email").body.verificationLink!).token);
  keep("session 1", cookie);
  const setup = await setUp(h, cookie);
  const secret = keep("totp secret", setup.secret);
  keep("otpauth url", setup.otpauthUrl);
  keep("otpauth url (encoded secret param)", `secret=${secret}`);
  keep("qr code", setup.qrCodeDataUrl.slice("data:image/png;base64,".length, 200));
  assertError(await post(h, "/auth/2fa/enable", { code: useCode(wrongCode(secret, h.clock.now())) }, { cookie }), 401, "invalid_2fa_code");
  const recoveryCodes = assertRecoveryCodes(await post(h, "/auth/2fa/enable", { code: useCode(totpAt(secret, h.clock.now())) }, { cookie }));
  recoveryCodes.forEach((c, i) => {
    keep(`recovery code ${i}`, c);
    keep(`recovery code ${i} compact`, c.replace("-", ""));
  });
  h.clock.advance(30 * SECOND);
  assertTwoFactorRequired(await loginWithCode(h, undefined));
  assertLoginRefused(await loginWithCode(h, useCode(wrongCode(secret, h.clock.now()))), 401, "invalid_2fa_code");
  keep("session 2", assertAuthorized(await loginWithCode(h, useCode(totpAt(secret, h.clock.now())))));
  keep("session 3", assertAuthorized(await loginWithCode(h, recoveryCodes[0])));
  assertLoginRefused(await loginWithCode(h, recoveryCodes[0]), 401, "invalid_2fa_code");
  h.clock.advance(30 * SECOND);
  const newCodes = assertRecoveryCodes(await post(h, "/auth/2fa/recovery-codes", { code: useCode(totpAt(secret, h.clock.now())) }, { cookie }));
  newCodes.forEach((c, i) => keep(`new recovery code ${i}`, c));

  // Magic link with the second factor.
  assert.equal((await post(h, "/auth/request-magic-link", { email: EMAIL, "bot-challenge-response": "x" })).statusCode, 200);
  await deliverWebhooks(h);
  const magicLink = keep("magic link", h.receiver.last("magic_login").body.magicLoginLink);
  const magic = parseLink(magicLink);
  keep("magic token", magic.token);
  const verifyUrl = `/auth/verify-magic-link/${magic.recordId}/${magic.token}`;
  const needsCode = await post(h, verifyUrl, { "bot-challenge-response": "x" });
  assert.equal(needsCode.json().requires2FA, true, needsCode.body);
  h.clock.advance(30 * SECOND);
  assertError(await post(h, verifyUrl, { "bot-challenge-response": "x", twoFACode: useCode(wrongCode(secret, h.clock.now())) }), 401, "invalid_2fa_code");
  const magicSession = await post(h, verifyUrl, { "bot-challenge-response": "x", twoFACode: newCodes[0] });
  assert.equal(magicSession.statusCode, 200, magicSession.body);
  keep("session 4", sessionCookieOf(magicSession));

  // Disable: a wrong password, then the right one.
  assertError(await post(h, "/auth/2fa/disable", { password: WRONG_PASSWORD }, { cookie }), 401, "invalid_credentials");
  assert.equal((await post(h, "/auth/2fa/disable", { password: STRONG_PASSWORD }, { cookie })).statusCode, 200);

  const logText = h.logs.join("\n");
  assert.ok(h.logs.length > 20, `only ${h.logs.length} log lines`);
  const leaks = [...secrets].filter(([, value]) => logText.includes(value)).map(([label]) => label);
  for (const code of codes) if (logText.includes(`"${code}"`)) leaks.push(`TOTP code ${code}`);
  assert.deepEqual(leaks, [], `secrets in the logs: ${leaks.join(", ")}`);
  assert.ok(!/verify-magic-link\/\d+\/[A-Za-z0-9_-]{20,}/.test(logText), "no token-bearing magic link path in the logs");
  assert.ok(!/otpauth:/.test(logText), "no otpauth URL in the logs");
  const urls = h.logs
    .flatMap((chunk) => chunk.split("\n").filter(Boolean))
    .map((line) => (JSON.parse(line) as { req?: { url?: string } }).req?.url)
    .filter((u): u is string => typeof u === "string");
  assert.ok(
    urls.includes(`/auth/verify-magic-link/${recordId}/[redacted]`),
    `masked verify URL not logged: ${urls.filter((u) => u.includes("magic")).join(", ")}`,
  );
  for (const path of ["/auth/2fa/setup", "/auth/2fa/enable", "/auth/2fa/recovery-codes", "/auth/2fa/disable"]) {
    assert.ok(urls.includes(path), `${path} request is logged`);
  }
});
