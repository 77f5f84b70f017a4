/**
 * D30: the owner's way back survives an intruder (issue 27, finding 1). An intruder who knows the
 * password (or phished one email code) moves the email to their own address, triggers an alert
 * that reaches it, uses that alert's own "this wasn't me" link and resets through their mailbox.
 * On the code before D30 that link voided every other, the owner's included, and the intruder kept
 * the account for good. Each test ends with the owner in control and the intruder with nothing.
 * Runs on SQLite and PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { assertError, ok } from "./support/assertions.js";
import { call, changeEmail, EMAIL, member, secureLinkOf, sendAlertsAndEvents, signIn } from "./support/account.js";
import { memberRow, sessionCount } from "./support/database.js";
import { MINUTE, SECOND } from "../src/core/clock.js";
import {
  enrolTwoFactor,
  forgotPassword,
  magicLinkFor,
  nextIp,
  registerMagic,
  requestMagicLink,
  requestResetLink,
  sessionStatus,
  webhooksFor,
} from "./support/flows.js";
import { totpAt } from "./support/totp.js";
import {
  createHarness,
  deliverWebhooks,
  login,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  sessionCookieOf,
  settle,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";

const INTRUDER = "intruder@example.net";
const INTRUDER_PASSWORD = "Intruder-Owns-It-2026";
const OWNER_PASSWORD = "Owner-Is-Back-2026";

/** The intruder's last moves: "this wasn't me" through an alert that reached their address, then a reset through their mailbox. */
async function lockDownAndResetAsIntruder(h: Harness, intrudersAlert: string): Promise<string> {
  ok(await post(h, "/auth/secure-account", await secureLinkOf(h, intrudersAlert, INTRUDER)));
  const reset = await requestResetLink(h, INTRUDER);
  ok(await post(h, "/auth/reset-password", { ...reset, newPassword: INTRUDER_PASSWORD }));
  return signIn(h, INTRUDER, INTRUDER_PASSWORD);
}

/**
 * After the owner's "this wasn't me": the account has the owner's address back and requires a new
 * password, no session is left, the intruder's address and password open nothing, and their
 * mailbox gets no link. Then the owner resets through their own mailbox and signs in.
 */
async function assertOwnerInControl(h: Harness, recordId: string, intruderCookie: string): Promise<void> {
  assert.deepEqual(await memberRow(h, recordId, ["email", "status"]), { email: EMAIL, status: "Password Change Pending" });
  assert.equal(await sessionStatus(h, intruderCookie), 401);
  assert.equal(await sessionCount(h, recordId), 0);
  assertError(await login(h, INTRUDER, INTRUDER_PASSWORD, { ip: nextIp() }), 401, "invalid_credentials");
  assertError(await login(h, EMAIL, INTRUDER_PASSWORD, { ip: nextIp() }), 403, "password_change_required");
  await deliverWebhooks(h); // what was queued before (the intruder's own reset alert, say)
  const sent = h.receiver.received.length;
  ok(await forgotPassword(h, INTRUDER, { ip: nextIp() }));
  ok(await requestMagicLink(h, INTRUDER, { ip: nextIp() }));
  await deliverWebhooks(h);
  assert.deepEqual(
    h.receiver.received.slice(sent).filter((w) => w.body.email === INTRUDER),
    [],
    "nothing reaches the intruder's mailbox",
  );
  const own = await requestResetLink(h, EMAIL);
  ok(await post(h, "/auth/reset-password", { ...own, newPassword: OWNER_PASSWORD }));
  assert.equal((await login(h, EMAIL, OWNER_PASSWORD, { ip: nextIp() })).statusCode, 200);
}

for (const ownersAlert of ["email_changed", "email_change_requested"]) {
  test(`D30, with the password: the intruder takes the email, uses their own alert's link and resets; the owner's ${ownersAlert} link still gives the account back`, async (t) => {
    const { h, recordId } = await member(t);
    const intruderCookie = await signIn(h, EMAIL);
    await changeEmail(h, intruderCookie, INTRUDER, STRONG_PASSWORD);
    const ownersLink = await secureLinkOf(h, ownersAlert, EMAIL);
    // Any alert now reaches the intruder's address: a password change does.
    ok(await call(h, "POST", "/auth/change-password", intruderCookie, { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }));
    const intruderAgain = await lockDownAndResetAsIntruder(h, "password_changed");
    assert.deepEqual(await memberRow(h, recordId, ["email", "status"]), { email: INTRUDER, status: "Unlocked" }, "the intruder holds the account");
    const later = await secureLinkOf(h, "password_reset", INTRUDER);

    const secured = ok<{ message: string }>(await post(h, "/auth/secure-account", ownersLink));
    assert.doesNotMatch(secured.message, /could not be given back/);
    // The intruder's own later link went to the address the restore replaced: void (the restore is final).
    assertError(await post(h, "/auth/secure-account", later), 400, "invalid_token");
    await assertOwnerInControl(h, recordId, intruderAgain);
  });
}

test("D30, without a password: one phished email code is enough to take the email, and the owner's email_changed link still gives the account back", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await sendAlertsAndEvents(h);
  ok(await registerMagic(h, EMAIL));
  await deliverWebhooks(h);
  const verification = parseLink(h.receiver.last("verify_email").body.verificationLink!);
  ok(await post(h, "/auth/verify-email", { recordId: verification.recordId, token: verification.token }));
  const recordId = verification.recordId;

  const phished = await magicLinkFor(h, EMAIL, { ip: nextIp() });
  const signedIn = await post(h, "/auth/verify-login-code", { email: EMAIL, code: phished.code, "bot-challenge-response": "x" }, { ip: nextIp() });
  const intruderCookie = sessionCookieOf(signedIn)!;
  assert.ok(intruderCookie, signedIn.body);
  // A session under 10 minutes old is the re-authentication of a member without a password (D24).
  await changeEmail(h, intruderCookie, INTRUDER);
  const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
  // Another change asked for sends an alert to the intruder's address.
  ok(await call(h, "POST", "/auth/change-email", intruderCookie, { newEmail: "second.intruder@example.net" }));
  const intruderAgain = await lockDownAndResetAsIntruder(h, "email_change_requested");

  ok(await post(h, "/auth/secure-account", ownersLink));
  await assertOwnerInControl(h, recordId, intruderAgain);
});

test("D30: after two email changes the oldest address wins, whichever link is used first, and a restore is final", async (t) => {
  const second = "second.intruder@example.net";
  for (const order of ["owner first", "intruder first"] as const) {
    const { h, recordId } = await member(t);
    const intruderCookie = await signIn(h, EMAIL);
    await changeEmail(h, intruderCookie, INTRUDER, STRONG_PASSWORD);
    const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
    // Links are ordered by when they were issued (ms): a second change takes its own round trips.
    h.clock.advance(1000);
    await changeEmail(h, intruderCookie, second, STRONG_PASSWORD);
    // This alert went to the intruder's first address, and would give it back.
    const intrudersLink = await secureLinkOf(h, "email_changed", INTRUDER);
    if (order === "owner first") {
      ok(await post(h, "/auth/secure-account", ownersLink));
      // Issued after the owner's, to an address the restore replaced: void.
      assertError(await post(h, "/auth/secure-account", intrudersLink), 400, "invalid_token");
    } else {
      ok(await post(h, "/auth/secure-account", intrudersLink));
      assert.equal((await memberRow(h, recordId, ["email", "status"])).email, INTRUDER);
      ok(await post(h, "/auth/secure-account", ownersLink));
    }
    assert.deepEqual(await memberRow(h, recordId, ["email", "status"]), { email: EMAIL, status: "Password Change Pending" }, order);
  }
});

test("D30: each alert's link is used up alone; a password change, a reset and another alert's link leave the others valid", async (t) => {
  const { h, cookie } = await member(t);
  ok(await call(h, "POST", "/auth/change-password", cookie, { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }));
  const first = await secureLinkOf(h, "password_changed", EMAIL);
  const reset = await requestResetLink(h, EMAIL);
  ok(await post(h, "/auth/reset-password", { ...reset, newPassword: INTRUDER_PASSWORD }));
  const second = await secureLinkOf(h, "password_reset", EMAIL);
  ok(await post(h, "/auth/secure-account", second));
  ok(await post(h, "/auth/secure-account", first));
  assertError(await post(h, "/auth/secure-account", first), 400, "invalid_token");
});

test("D30: the lockdown and the restore leave no gap: what the intruder asks for while 'this wasn't me' is held between them opens nothing", async (t) => {
  const { h, recordId } = await member(t);
  const intruderCookie = await signIn(h, EMAIL);
  await changeEmail(h, intruderCookie, INTRUDER, STRONG_PASSWORD);
  const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
  const seam = installStoreSeam(h);
  // The second read of the member comes after the lockdown and before the address comes back
  // (before D30 it began the restore's own transaction, after the lockdown had committed).
  const held = seam.pause("members.findMemberById", { skip: 1 });
  const secured = post(h, "/auth/secure-account", ownersLink);
  await held.reached;
  const attempts = [
    requestMagicLink(h, INTRUDER, { ip: nextIp() }),
    forgotPassword(h, INTRUDER, { ip: nextIp() }),
    login(h, INTRUDER, STRONG_PASSWORD, { ip: nextIp() }),
  ];
  // Time for them to run as far as they can (PostgreSQL: to the member's row lock; SQLite: to the one writer).
  await sleep(300);
  held.release();
  ok(await secured);
  const [, , password] = await Promise.all(attempts);
  assert.notEqual(password!.statusCode, 200, password!.body);
  await settle(h);
  await deliverWebhooks(h);
  for (const hook of webhooksFor(h, "magic_login", INTRUDER)) {
    const link = parseLink(hook.body.magicLoginLink!);
    assertError(await post(h, `/auth/verify-magic-link/${link.recordId}/${link.token}`, {}), 400, "invalid_token");
  }
  for (const hook of webhooksFor(h, "password_reset", INTRUDER)) {
    const link = parseLink(hook.body.resetLink!);
    assertError(await post(h, "/auth/reset-password", { recordId: link.recordId, token: link.token, newPassword: INTRUDER_PASSWORD }), 400, "invalid_token");
  }
  assert.deepEqual(await memberRow(h, recordId, ["email", "status"]), { email: EMAIL, status: "Password Change Pending" });
  assert.equal(await sessionCount(h, recordId), 0);
});

test("D30: a restore whose write a unique index refuses (an account took the address in that instant) is decided again, and the link is used once", async (t) => {
  const { h, recordId } = await member(t);
  const intruderCookie = await signIn(h, EMAIL);
  await changeEmail(h, intruderCookie, INTRUDER, STRONG_PASSWORD);
  const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
  installStoreSeam(h).fail("members.updateEmail", 1, "23505");
  const secured = ok<{ message: string }>(await post(h, "/auth/secure-account", ownersLink));
  assert.doesNotMatch(secured.message, /could not be given back/, "the second attempt found the address free");
  assert.deepEqual(await memberRow(h, recordId, ["email", "status"]), { email: EMAIL, status: "Password Change Pending" });
  assert.equal(await sessionStatus(h, intruderCookie), 401);
  assertError(await post(h, "/auth/secure-account", ownersLink), 400, "invalid_token");
});

test("D30: after the restore, the links the intruder's address collected are void: they can't lock the owner out again or turn off the owner's new 2FA", async (t) => {
  const { h, recordId } = await member(t);
  const intruderCookie = await signIn(h, EMAIL);
  await changeEmail(h, intruderCookie, INTRUDER, STRONG_PASSWORD);
  const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
  // Every password change sends the intruder's address a link of its own, valid 7 days.
  const hoard = [];
  for (const [from, to] of [
    [STRONG_PASSWORD, OTHER_STRONG_PASSWORD],
    [OTHER_STRONG_PASSWORD, INTRUDER_PASSWORD],
  ]) {
    ok(await call(h, "POST", "/auth/change-password", intruderCookie, { currentPassword: from, newPassword: to }));
    hoard.push(await secureLinkOf(h, "password_changed", INTRUDER));
  }
  ok(await post(h, "/auth/secure-account", ownersLink));
  const own = await requestResetLink(h, EMAIL);
  ok(await post(h, "/auth/reset-password", { ...own, newPassword: OWNER_PASSWORD }));
  const ownerCookie = await signIn(h, EMAIL, OWNER_PASSWORD);
  await enrolTwoFactor(h, ownerCookie, OWNER_PASSWORD);

  for (const link of hoard) assertError(await post(h, "/auth/secure-account", link), 400, "invalid_token");
  const row = await memberRow(h, recordId, ["email", "status", "two_factor_status"]);
  assert.deepEqual(row, { email: EMAIL, status: "Unlocked", two_factor_status: "Enabled" });
  assert.equal(await sessionStatus(h, ownerCookie), 200);
});

test("D30: links and enrolments are ordered by the member's counter, not the clock: a link issued after the change but stamped earlier (clock skew, a time read before the lock) can't take the address back", async (t) => {
  const { h, recordId } = await member(t);
  const intruderCookie = await signIn(h, EMAIL);
  h.clock.advance(MINUTE);
  await changeEmail(h, intruderCookie, INTRUDER, STRONG_PASSWORD);
  const ownersLink = await secureLinkOf(h, "email_changed", EMAIL);
  // Another instance whose clock is behind, or a request that read the time before it waited for the lock.
  h.clock.advance(-30 * SECOND);
  ok(await call(h, "POST", "/auth/change-email", intruderCookie, { newEmail: "second.intruder@example.net", password: STRONG_PASSWORD }));
  const intrudersLink = await secureLinkOf(h, "email_change_requested", INTRUDER);
  const { secret } = ok<{ secret: string }>(await call(h, "POST", "/auth/2fa/setup", intruderCookie, { password: STRONG_PASSWORD }));
  ok(await call(h, "POST", "/auth/2fa/enable", intruderCookie, { code: totpAt(secret, h.clock.now()) }));
  h.clock.advance(MINUTE);

  ok(await post(h, "/auth/secure-account", ownersLink));
  const row = await memberRow(h, recordId, ["email", "two_factor_status"]);
  assert.deepEqual(row, { email: EMAIL, two_factor_status: "Disabled" }, "the intruder's factor, enabled after the change, is off");
  assertError(await post(h, "/auth/secure-account", intrudersLink), 400, "invalid_token");
  assert.equal((await memberRow(h, recordId, ["email", "status"])).email, EMAIL);
});
