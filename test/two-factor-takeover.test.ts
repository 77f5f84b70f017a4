/**
 * D30: a stolen session must not take the second factor (issue 27, finding 2). Before D30 a
 * session alone turned 2FA on with the intruder's authenticator and took the recovery codes; every
 * way in then asked for the intruder's factor, no admin call turned it off, and a newer alert's
 * "this wasn't me" link voided the `two_factor_enabled` one. Each step has its test here. Runs on
 * SQLite and PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { alerts, call, EMAIL, member, secureLinkOf, signIn } from "./support/account.js";
import { assertError, ok } from "./support/assertions.js";
import { memberField } from "./support/database.js";
import { adminGet, adminPost, nextIp, registerMagic, sessionStatus, WRONG_PASSWORD } from "./support/flows.js";
import { deliverWebhooks, login, parseLink, post, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { totpAt, wrongCode } from "./support/totp.js";
import { postForm } from "./support/ui-forms.js";

function setUp(h: Harness, cookie: string, body: Record<string, unknown> = {}): Promise<LightMyRequestResponse> {
  return call(h, "POST", "/auth/2fa/setup", cookie, body);
}

function enable(h: Harness, cookie: string, secret: string, extra: Record<string, unknown> = {}): Promise<LightMyRequestResponse> {
  return call(h, "POST", "/auth/2fa/enable", cookie, { code: totpAt(secret, h.clock.now()), ...extra });
}

test("D30: a session alone can't turn on 2FA: enable asks for the password (wrong: 401, counted), unless this session gave it at setup", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const { secret } = ok<{ secret: string }>(await setUp(h, cookie));
  assertError(await enable(h, cookie, secret), 400, "validation_failed");
  assertError(await enable(h, cookie, secret, { password: WRONG_PASSWORD }), 401, "invalid_credentials");
  assertError(await setUp(h, cookie, { password: WRONG_PASSWORD }), 401, "invalid_credentials");
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Disabled");
  const lockout = await h.db.selectFrom("login_lockouts").select("failures").executeTakeFirstOrThrow();
  assert.equal(Number(lockout.failures), 2, "wrong passwords count towards the login lockout");

  // The password at enable, or at setup for this session: either turns it on.
  assert.equal(ok<{ recoveryCodes: string[] }>(await enable(h, cookie, secret, { password: STRONG_PASSWORD })).recoveryCodes.length, 10);
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Enabled");
});

test("D30: an enrolment belongs to the session that started it: another can neither read its secret (API or hosted page) nor finish it", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const stolen = await signIn(h, EMAIL);
  const { secret } = ok<{ secret: string }>(await setUp(h, cookie, { password: STRONG_PASSWORD }));
  // The hosted enable form, posted empty from the other session, shows its error page: without the owner's secret.
  const page = await postForm(h, "/ui/two-factor/enable", { code: "" }, { cookie: stolen });
  assert.ok(!page.body.includes(secret), "the owner's pending secret is not on another session's page");
  assertError(await enable(h, stolen, secret, { password: STRONG_PASSWORD }), 409, "invalid_state");
  // A setup from the other session (without the password) replaces the pending one: the owner's is gone.
  const theirs = ok<{ secret: string }>(await setUp(h, stolen));
  assertError(await enable(h, cookie, secret), 409, "invalid_state");
  assertError(await enable(h, stolen, theirs.secret), 400, "validation_failed");
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Disabled");
  const again = ok<{ secret: string }>(await setUp(h, cookie, { password: STRONG_PASSWORD }));
  h.clock.advance(30 * SECOND);
  ok(await enable(h, cookie, again.secret));
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Enabled");
});

test("D30: a member without a password turns 2FA on with a session under 10 minutes old; an older one is sent to sign in again", async (t) => {
  const { h } = await member(t);
  ok(await registerMagic(h, "grace@example.org"));
  await deliverWebhooks(h);
  const link = parseLink(h.receiver.last("verify_email").body.verificationLink!);
  ok(await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token }));
  ok(await post(h, "/auth/request-magic-link", { email: "grace@example.org", "bot-challenge-response": "x" }, { ip: nextIp() }));
  await deliverWebhooks(h);
  const magic = parseLink(h.receiver.last("magic_login").body.magicLoginLink!);
  const cookie = sessionCookieOf(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, {}))!;

  h.clock.advance(11 * MINUTE);
  const stale = ok<{ secret: string }>(await setUp(h, cookie));
  assertError(await enable(h, cookie, stale.secret), 401, "unauthorized");
  assert.equal(await memberField(h, magic.recordId, "two_factor_status"), "Disabled");

  const fresh = sessionCookieOf(
    await post(h, "/auth/verify-login-code", { email: "grace@example.org", code: await newCode(h), "bot-challenge-response": "x" }),
  )!;
  const { secret } = ok<{ secret: string }>(await setUp(h, fresh));
  ok(await enable(h, fresh, secret));
  assert.equal(await memberField(h, magic.recordId, "two_factor_status"), "Enabled");
});

async function newCode(h: Harness): Promise<string> {
  h.clock.advance(4 * MINUTE);
  ok(await post(h, "/auth/request-magic-link", { email: "grace@example.org", "bot-challenge-response": "x" }, { ip: nextIp() }));
  await deliverWebhooks(h);
  return h.receiver.last("magic_login").body.code!;
}

test("D30: in Password Change Pending the flagged password can't turn 2FA on", async (t) => {
  const { h, recordId, cookie } = await member(t);
  ok(await adminPost(h, "/auth/admin/require-password-change", { recordId }));
  // The requirement ended the session; a magic link opens one (D15), which can't use the flagged password.
  assert.equal(await sessionStatus(h, cookie), 401);
  ok(await post(h, "/auth/request-magic-link", { email: EMAIL, "bot-challenge-response": "x" }, { ip: nextIp() }));
  await deliverWebhooks(h);
  const magic = parseLink(h.receiver.last("magic_login").body.magicLoginLink!);
  const session = sessionCookieOf(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, {}))!;
  assertError(await setUp(h, session, { password: STRONG_PASSWORD }), 403, "password_change_required");
  const { secret } = ok<{ secret: string }>(await setUp(h, session));
  assertError(await enable(h, session, secret, { password: STRONG_PASSWORD }), 403, "password_change_required");
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Disabled");
});

test("D30 admin reset-2fa: 2FA off, every session ends, the member is alerted and audited; 409 when off, 404 for another tenant's member, 401 without a key", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const { secret } = ok<{ secret: string }>(await setUp(h, cookie, { password: STRONG_PASSWORD }));
  ok(await enable(h, cookie, secret));
  const other = await signIn(h, EMAIL, STRONG_PASSWORD);
  assert.equal(await sessionStatus(h, other), 401, "(the second factor is asked: no session without it)");

  assertError(await adminPost(h, `/auth/admin/members/${recordId}/reset-2fa`, {}, { key: null }), 401, "unauthorized");
  assertError(await adminPost(h, "/auth/admin/members/123456789012345/reset-2fa", {}), 404, "not_found");
  const reset = await adminPost(h, `/auth/admin/members/${recordId}/reset-2fa`, {});
  assert.deepEqual(ok(reset), { success: true, recordid: recordId, _2fa_status: "Disabled" });
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Disabled");
  assert.equal(await sessionStatus(h, cookie), 401);
  const alert = (await alerts(h)).filter((a) => a.alert === "two_factor_disabled").at(-1);
  assert.ok(alert?.secureAccountLink, "the member is told, with a way back");
  const audit = ok<{ events: { type: string; details: Record<string, unknown> }[] }>(await adminGet(h, `/auth/admin/audit-log?recordId=${recordId}`));
  assert.deepEqual(audit.events[0], { ...audit.events[0], type: "two_factor_disabled", details: { by: "admin" } });
  assertError(await adminPost(h, `/auth/admin/members/${recordId}/reset-2fa`, {}), 409, "invalid_state");
  // The password alone signs in again.
  assert.equal((await login(h, EMAIL, STRONG_PASSWORD, { ip: nextIp() })).json<{ authorized: boolean }>().authorized, true);
});

test("D30: three wrong codes that lock 2FA tell the member (two_factor_locked), at login and through re-authentication alike", async (t) => {
  const { h, cookie } = await member(t);
  const { secret } = ok<{ secret: string }>(await setUp(h, cookie, { password: STRONG_PASSWORD }));
  ok(await enable(h, cookie, secret));
  h.clock.advance(30 * SECOND);
  const locked = () => alerts(h).then((all) => all.filter((a) => a.alert === "two_factor_locked"));

  // Someone with the password, at login.
  for (let i = 0; i < 3; i++) {
    await post(h, "/auth/login", { email: EMAIL, password: STRONG_PASSWORD, twoFACode: wrongCode(secret, h.clock.now()), "bot-challenge-response": "x" });
  }
  assert.equal((await locked()).length, 1);
  assert.ok((await locked())[0]!.secureAccountLink);

  // Someone with a session, through re-authentication (here an email change), once the lock is over.
  h.clock.advance(16 * MINUTE);
  for (let i = 0; i < 3; i++) {
    await call(h, "POST", "/auth/change-email", cookie, { newEmail: "x@example.net", password: STRONG_PASSWORD, twoFACode: wrongCode(secret, h.clock.now()) });
  }
  assert.equal((await locked()).length, 2);
});

test("D30: the two_factor_enabled alert's link still turns the intruder's factor off after a newer alert's link was used", async (t) => {
  const { h, recordId } = await member(t);
  // The intruder has the password and a session: they enrol their authenticator and use a recovery code.
  const intruder = await signIn(h, EMAIL);
  const { secret } = ok<{ secret: string }>(await setUp(h, intruder, { password: STRONG_PASSWORD }));
  const { recoveryCodes } = ok<{ recoveryCodes: string[] }>(await enable(h, intruder, secret));
  const enabledLink = await secureLinkOf(h, "two_factor_enabled", EMAIL);
  h.clock.advance(MINUTE);
  const viaRecovery = await post(
    h,
    "/auth/login",
    { email: EMAIL, password: STRONG_PASSWORD, twoFACode: recoveryCodes[0], "bot-challenge-response": "x" },
    { ip: nextIp() },
  );
  assert.equal(viaRecovery.statusCode, 200, viaRecovery.body);
  const recoveryLink = await secureLinkOf(h, "recovery_code_used", EMAIL);

  // The newer link locks down but leaves a factor that predates its alert (mailbox access alone must not remove 2FA)...
  ok(await post(h, "/auth/secure-account", recoveryLink));
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Enabled");
  // ...and the older link, which the intruder's enrolment sent, is still valid and turns it off.
  ok(await post(h, "/auth/secure-account", enabledLink));
  assert.equal(await memberField(h, recordId, "two_factor_status"), "Disabled");
});
