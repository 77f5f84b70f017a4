/**
 * D24: the member's own profile, sessions, email and account, and "this wasn't me". Each call runs
 * on the session's member only; re-authentication guards what a stolen session must not do alone.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError, assertErrorNoExtras, ok } from "./support/assertions.js";
import { memberRow, rowCounts, rowsHolding } from "./support/database.js";
import {
  adminHeaders,
  enrolTwoFactor,
  lastWebhookFor,
  lockMember,
  magicLinkFor,
  nextIp,
  receiverSettings,
  requestResetLink,
  sessionStatus,
  WRONG_PASSWORD,
} from "./support/flows.js";
import {
  deliverWebhooks,
  login,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  settle,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";
import { alerts, call, EMAIL, events, member, signIn } from "./support/account.js";
import { installStoreSeam } from "./support/store-seam.js";
import { totpAt } from "./support/totp.js";

const NEW_EMAIL = "ada.lovelace@example.net";

interface ListedSession {
  id: string;
  ip: string | null;
  userAgent: string | null;
  lastSeenAt: string;
  current: boolean;
}

async function sessions(h: Harness, cookie: string): Promise<ListedSession[]> {
  return ok<{ sessions: ListedSession[] }>(await call(h, "GET", "/auth/sessions", cookie)).sessions;
}

test("D24 /auth/me: the profile; PATCH renames (audit, member.updated), refuses a bad name with no change, and needs the session of this tenant", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const me = ok(await call(h, "GET", "/auth/me", cookie));
  assert.deepEqual(me, {
    success: true,
    recordid: recordId,
    email: EMAIL,
    name: "Ada Lovelace",
    authentication_status: "Unlocked",
    authentication_type: ["Password"],
    _2fa_status: "Disabled",
    hasPassword: true,
    createdAt: new Date(h.clock.now()).toISOString(),
  });

  assert.equal(ok(await call(h, "PATCH", "/auth/me", cookie, { name: "  Augusta Ada King " })).name, "Augusta Ada King");
  assert.equal(ok(await call(h, "GET", "/auth/me", cookie)).name, "Augusta Ada King");
  const [updated] = (await events(h)).filter((e) => e.event_type === "member.updated");
  assert.deepEqual(updated, { event_type: "member.updated", recordid: recordId, at: new Date(h.clock.now()).toISOString(), changes: ["name"] });

  for (const name of ["", "x".repeat(101), "bad\u0007name"]) {
    assertError(await call(h, "PATCH", "/auth/me", cookie, { name }), 400, "validation_failed");
  }
  assert.equal(ok(await call(h, "GET", "/auth/me", cookie)).name, "Augusta Ada King", "a refused rename changed nothing");

  assertErrorNoExtras(await call(h, "GET", "/auth/me", undefined), 401, "unauthorized");
  assertErrorNoExtras(await call(h, "PATCH", "/auth/me", "not-a-session", { name: "Eve" }), 401, "unauthorized");
  assertErrorNoExtras(await call(h, "PATCH", "/auth/me", cookie, { name: "Eve" }, { origin: "https://evil.example" }), 403, "origin_mismatch");
  // The cookie of this tenant names nobody on another tenant.
  await post(
    h,
    "/operator/tenants",
    { domain: "other.example.com", settings: receiverSettings(h) },
    { headers: { authorization: "Bearer operator-key-for-tests-0123456789abcdef" } },
  );
  assertErrorNoExtras(await call(h, "GET", "/auth/me", cookie, undefined, { "x-tenant-domain": "other.example.com" }), 401, "unauthorized");
});

test("D24 sessions: listed with public ids, IP, agent and last seen (moved at most once a minute); one or all others revoked; never another member's", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const phone = await signIn(h, EMAIL, STRONG_PASSWORD, "Phone/2");
  const listed = await sessions(h, cookie);
  assert.equal(listed.length, 2);
  assert.deepEqual(listed.map((s) => s.current).sort(), [false, true]);
  const other = listed.find((s) => !s.current)!;
  assert.equal(other.userAgent, "Phone/2");
  assert.match(other.ip!, /^\d+\.\d+\.\d+\.\d+$/);
  for (const s of listed) assert.ok(!JSON.stringify(s).includes(cookie) && !JSON.stringify(s).includes(phone), "a public id is not a cookie");
  const stored = await h.db.selectFrom("sessions").select(["id_hash", "public_id"]).execute();
  for (const row of stored) assert.ok(!listed.some((s) => s.id === row.id_hash || row.id_hash.startsWith(s.id)), "nor the cookie's hash");

  // Last seen: written when a minute has passed, not on every check.
  const seenAt = listed.find((s) => s.current)!.lastSeenAt;
  h.clock.advance(59_000);
  assert.equal((await sessions(h, cookie)).find((s) => s.current)!.lastSeenAt, seenAt);
  h.clock.advance(1_000);
  assert.equal(await sessionStatus(h, cookie), 200);
  assert.equal((await sessions(h, cookie)).find((s) => s.current)!.lastSeenAt, new Date(h.clock.now()).toISOString());

  // Another member's session id is not found, and stays alive.
  await registerVerifiedMember(h, "grace@example.org");
  const grace = await signIn(h, "grace@example.org");
  const graceId = (await sessions(h, grace))[0]!.id;
  assertErrorNoExtras(await call(h, "DELETE", `/auth/sessions/${graceId}`, cookie), 404, "not_found");
  assertErrorNoExtras(await call(h, "DELETE", "/auth/sessions/no-such-session", cookie), 404, "not_found");
  assert.equal(await sessionStatus(h, grace), 200);

  ok(await call(h, "DELETE", `/auth/sessions/${other.id}`, cookie));
  assert.equal(await sessionStatus(h, phone), 401, "the revoked session ended");
  assert.equal(await sessionStatus(h, cookie), 200, "this one stays");

  const tablet = await signIn(h, EMAIL, STRONG_PASSWORD, "Tablet/3");
  const laptop = await signIn(h, EMAIL, STRONG_PASSWORD, "Laptop/4");
  ok(await call(h, "POST", "/auth/sessions/revoke-others", cookie, {}));
  assert.deepEqual(
    [await sessionStatus(h, tablet), await sessionStatus(h, laptop), await sessionStatus(h, cookie), await sessionStatus(h, grace)],
    [401, 401, 200, 200],
  );

  // Ending the current session clears its cookie.
  const own = (await sessions(h, cookie))[0]!;
  const res = await call(h, "DELETE", `/auth/sessions/${own.id}`, cookie);
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers["set-cookie"]), /session_id=;/);
  assert.equal(await sessionStatus(h, cookie), 401);

  const audit = await h.db.selectFrom("audit_events").select("type").where("member_id", "=", Number(recordId)).execute();
  assert.equal(audit.filter((e) => e.type === "session_revoked").length, 2);
  assert.equal(audit.filter((e) => e.type === "sessions_revoked").length, 1);
});

test("D24 delete-account: re-authentication (password, then the 2FA code); wrong passwords count towards the lockout; erasure leaves only the erasure's own record", async (t) => {
  const { h, recordId, cookie } = await member(t);
  assertError(await call(h, "POST", "/auth/delete-account", cookie, {}), 400, "validation_failed");
  assertError(await call(h, "POST", "/auth/delete-account", cookie, { password: WRONG_PASSWORD }), 401, "invalid_credentials");
  const lockout = await h.db.selectFrom("login_lockouts").selectAll().executeTakeFirst();
  assert.ok(lockout && Number(lockout.failures) >= 1, "a wrong password is a failed password check");

  await enrolTwoFactor(h, cookie);
  assertError(await call(h, "POST", "/auth/delete-account", cookie, { password: STRONG_PASSWORD }), 400, "validation_failed");
  assertError(await call(h, "POST", "/auth/delete-account", cookie, { password: STRONG_PASSWORD, twoFACode: "000000" }), 401, "invalid_2fa_code");
  assert.equal(await sessionStatus(h, cookie), 200, "nothing was deleted");

  const secret = (await h.db.selectFrom("members").select("totp_secret_enc").executeTakeFirstOrThrow()).totp_secret_enc;
  assert.ok(secret);
  const code = totpAt(h.deps.secrets.open(secret), h.clock.now());
  const res = await call(h, "POST", "/auth/delete-account", cookie, { password: STRONG_PASSWORD, twoFACode: code });
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers["set-cookie"]), /session_id=;/);
  assert.equal(await sessionStatus(h, cookie), 401);

  const deleted = (await events(h)).filter((e) => e.event_type === "member.deleted");
  assert.deepEqual(
    deleted.map((e) => e.recordid),
    [recordId],
  );
  const left = (await rowsHolding(h, { exact: [recordId], contained: [EMAIL] })).filter(
    (row) => !row.includes('"eventType":"member.deleted"') && !row.startsWith("webhook_deliveries:"),
  );
  assert.deepEqual(
    left.map((row) => row.split(":")[0]),
    ["audit_events"],
    left.join("\n"),
  );
  assert.match(left[0]!, /"type":"member_deleted"/);
  assert.match(left[0]!, /"by\\?":\\?"member/);
  // The member's own address and browser went with everything else of theirs.
  const kept = await h.db.selectFrom("audit_events").select(["ip", "user_agent"]).where("member_id", "=", Number(recordId)).executeTakeFirstOrThrow();
  assert.deepEqual(kept, { ip: null, user_agent: null });
  assertError(await login(h, EMAIL), 401, "invalid_credentials");
});

test("D24 delete-account without a password: a session under 10 minutes old is the re-authentication; an older one is refused", async (t) => {
  const { h } = await member(t);
  const register = await post(h, "/auth/register-magic-link", { email: "grace@example.org", name: "Grace", "bot-challenge-response": "x" }, { ip: nextIp() });
  assert.equal(register.statusCode, 200, register.body);
  await deliverWebhooks(h);
  const verify = parseLink(lastWebhookFor(h, "verify_email", "grace@example.org").body.verificationLink!);
  ok(await post(h, "/auth/verify-email", { recordId: verify.recordId, token: verify.token }));
  const signInByLink = async () => {
    const link = await magicLinkFor(h, "grace@example.org", { ip: nextIp() });
    const res = await post(h, `/auth/verify-magic-link/${link.recordId}/${link.token}`, {});
    assert.equal(res.statusCode, 200, res.body);
    return sessionCookieOf(res)!;
  };
  const old = await signInByLink();
  assert.equal(ok(await call(h, "GET", "/auth/me", old)).hasPassword, false);
  h.clock.advance(10 * 60_000 + 1);
  const refused = assertError(await call(h, "POST", "/auth/delete-account", old, {}), 401, "unauthorized");
  assert.match(String(refused.message), /sign in again/i);
  assert.equal(await sessionStatus(h, old), 200, "refused, not signed out");
  h.clock.advance(3 * 60_000);
  const fresh = await signInByLink();
  ok(await call(h, "POST", "/auth/delete-account", fresh, {}));
  assert.equal(await sessionStatus(h, old), 401, "every session went with the account");
});

for (const [what, interleave] of [
  [
    "a password change from another session",
    (h: Harness, other: string) =>
      call(h, "POST", "/auth/change-password", other, { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }).then(ok),
  ],
  ["an admin lock", (h: Harness, _other: string, recordId: string) => lockMember(h, recordId)],
] as const) {
  test(`D20/D24: ${what} committed between delete-account's password check and its transaction ends the session it was asked from: refused, nothing erased`, async (t) => {
    const { h, recordId, cookie } = await member(t);
    const other = await signIn(h, EMAIL);
    const seam = installStoreSeam(h);
    // The password check passed and cleared the lockout row; the erasure has not begun.
    const checked = seam.pause("limits.clearLockout", { when: "after" });
    const deleting = call(h, "POST", "/auth/delete-account", cookie, { password: STRONG_PASSWORD });
    await checked.reached;
    await interleave(h, other, recordId);
    checked.release();
    assertError(await deleting, 401, "unauthorized");
    const row = await h.db.selectFrom("members").select("id").where("id", "=", Number(recordId)).executeTakeFirst();
    assert.ok(row, "the member is still there");
  });
}

test("D24 change-email: re-authenticated; the link goes to the new address, an alert to the old; confirming swaps the email, ends other sessions and voids old links", async (t) => {
  const { h, recordId } = await member(t);
  // A reset link mailed to the old address (asking for it ends every session: sign in again after).
  const reset = await requestResetLink(h, EMAIL);
  const cookie = await signIn(h, EMAIL);
  const other = await signIn(h, EMAIL);
  assertError(await call(h, "POST", "/auth/change-email", cookie, { newEmail: NEW_EMAIL }), 400, "validation_failed");
  assertError(await call(h, "POST", "/auth/change-email", cookie, { newEmail: NEW_EMAIL, password: WRONG_PASSWORD }), 401, "invalid_credentials");
  assertError(await call(h, "POST", "/auth/change-email", cookie, { newEmail: EMAIL, password: STRONG_PASSWORD }), 400, "validation_failed");
  assertError(await call(h, "POST", "/auth/change-email", cookie, { newEmail: "not-an-email", password: STRONG_PASSWORD }), 400, "validation_failed");

  const asked = ok<{ message: string }>(await call(h, "POST", "/auth/change-email", cookie, { newEmail: NEW_EMAIL.toUpperCase(), password: STRONG_PASSWORD }));
  await deliverWebhooks(h);
  const mail = lastWebhookFor(h, "email_change", NEW_EMAIL);
  assert.equal(mail.path, "/verify");
  assert.equal(mail.body.recordid, recordId);
  const link = parseLink(mail.body.verificationLink!);
  assert.equal(link.page, "email-change");
  const requested = (await alerts(h)).find((a) => a.alert === "email_change_requested")!;
  assert.equal(requested.email, EMAIL, "the alert goes to the old address");
  assert.equal(requested.newEmail, NEW_EMAIL);
  assert.equal(parseLink(requested.secureAccountLink!).page, "secure-account");
  assert.equal(ok(await call(h, "GET", "/auth/me", cookie)).email, EMAIL, "nothing changes before the link is used");

  assertError(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: "x".repeat(43) }), 400, "invalid_token");
  const confirmed = await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }, { cookie });
  assert.equal(confirmed.statusCode, 200, confirmed.body);
  assert.equal(asked.message, "If that address can be used, we have sent a confirmation link to it.");
  assert.equal(ok(await call(h, "GET", "/auth/me", cookie)).email, NEW_EMAIL, "the confirming session stays");
  assert.equal(await sessionStatus(h, other), 401, "other sessions end");
  assertError(
    await post(h, "/auth/reset-password", { recordId: reset.recordId, token: reset.token, newPassword: OTHER_STRONG_PASSWORD }),
    400,
    "invalid_token",
  );
  assertError(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }), 400, "invalid_token");
  assertError(await login(h, EMAIL), 401, "invalid_credentials");
  assert.equal((await login(h, NEW_EMAIL, STRONG_PASSWORD, { ip: nextIp() })).statusCode, 200);

  const changed = (await alerts(h)).find((a) => a.alert === "email_changed")!;
  assert.equal(changed.email, EMAIL);
  assert.deepEqual(
    (await events(h)).filter((e) => e.event_type === "member.updated").map((e) => e.changes),
    [["email"]],
  );
});

test("D24 change-email to a taken address: the same answer and the same writes as to a free one, and nothing reaches the taken address", async (t) => {
  // Two twins, each with a member and a taken address; one asks for the taken address, the other for a free one.
  const askFor = async (newEmail: string) => {
    const { h, cookie } = await member(t);
    await registerVerifiedMember(h, "taken@example.org");
    const before = await rowCounts(h);
    const res = await call(h, "POST", "/auth/change-email", cookie, { newEmail, password: STRONG_PASSWORD });
    const after = await rowCounts(h);
    await deliverWebhooks(h);
    return {
      h,
      cookie,
      body: ok(res),
      delta: Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - before[k]!])),
      mailed: h.receiver.ofType("email_change").map((w) => w.body.email),
    };
  };
  const taken = await askFor("taken@example.org");
  const free = await askFor("free@example.org");
  assert.deepEqual(taken.body, free.body);
  assert.deepEqual(taken.delta, free.delta, "the same rows are written either way");
  assert.deepEqual(taken.mailed, []);
  assert.deepEqual(free.mailed, ["free@example.org"]);
  // Three requests an hour per member: the fourth is refused.
  const { h, cookie } = free;
  for (const newEmail of ["second@example.org", "third@example.org"])
    ok(await call(h, "POST", "/auth/change-email", cookie, { newEmail, password: STRONG_PASSWORD }));
  assertError(await call(h, "POST", "/auth/change-email", cookie, { newEmail: "fourth@example.org", password: STRONG_PASSWORD }), 429, "rate_limited");
});

test("D24 confirm-email-change when the address was taken meanwhile: 409, nothing changes, and the link still works once it is free", async (t) => {
  const { h, recordId, cookie } = await member(t);
  ok(await call(h, "POST", "/auth/change-email", cookie, { newEmail: NEW_EMAIL, password: STRONG_PASSWORD }));
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "email_change", NEW_EMAIL).body.verificationLink!);
  const squatter = await registerVerifiedMember(h, NEW_EMAIL);
  assertErrorNoExtras(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }), 409, "conflict");
  assert.equal(ok(await call(h, "GET", "/auth/me", cookie)).email, EMAIL);
  ok(await call(h, "DELETE", `/auth/admin/members/${squatter}`, undefined, undefined, adminHeaders(h)));
  ok(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }));
  const row = await memberRow(h, recordId, ["email"]);
  assert.equal(row.email, NEW_EMAIL);
});

test("D24 this wasn't me: an email_changed alert's link ends every session, voids every link, requires a new password and gives the old address back; one use", async (t) => {
  const { h, recordId, cookie } = await member(t);
  ok(await call(h, "POST", "/auth/change-email", cookie, { newEmail: NEW_EMAIL, password: STRONG_PASSWORD }));
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "email_change", NEW_EMAIL).body.verificationLink!);
  ok(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }));
  const changed = (await alerts(h)).find((a) => a.alert === "email_changed")!;
  const secure = parseLink(changed.secureAccountLink!);
  const magic = await magicLinkFor(h, NEW_EMAIL, { ip: nextIp() });

  assertError(
    await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }, { domain: "unknown.example.com" }),
    404,
    "unknown_tenant",
  );
  const res = await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token });
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers["set-cookie"]), /session_id=;/);
  assert.equal(await sessionStatus(h, cookie), 401);
  const row = await memberRow(h, recordId, ["email", "status"]);
  assert.deepEqual(row, { email: EMAIL, status: "Password Change Pending" });
  assertError(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, {}), 400, "invalid_token");
  assertError(await login(h, EMAIL), 403, "password_change_required");
  assertError(await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }), 400, "invalid_token");
  // The confirmed change, then the lockdown and the restore in one commit (D30: no gap between them), one event.
  // Deliveries go out concurrently, so they may arrive in any order (each carries `at`): compare them sorted.
  const changes = (await events(h)).filter((e) => e.event_type === "member.updated").map((e) => JSON.stringify(e.changes));
  assert.deepEqual(changes.sort(), ['["email"]', '["status","email"]']);
});

test("D24 this wasn't me after a lock: the lock voided the alert's link too, and the account stays locked", async (t) => {
  const { h, recordId, cookie } = await member(t);
  ok(await call(h, "POST", "/auth/change-password", cookie, { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }));
  const alert = (await alerts(h)).find((a) => a.alert === "password_changed")!;
  const secure = parseLink(alert.secureAccountLink!);
  // A lock voids every link (D15), this one too: the lock already did what the link would.
  await lockMember(h, recordId);
  assertError(await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }), 400, "invalid_token");
  const row = await memberRow(h, recordId, ["status"]);
  assert.equal(row.status, "Locked");
});

/** An attacker who knows the password takes the email over; returns the owner's "this wasn't me" link from the email_changed alert. */
async function takeOverEmail(h: Harness, cookie: string, attackerEmail: string): Promise<{ recordId: string; token: string }> {
  ok(await call(h, "POST", "/auth/change-email", cookie, { newEmail: attackerEmail, password: STRONG_PASSWORD }));
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "email_change", attackerEmail).body.verificationLink!);
  ok(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }, { cookie }));
  const changed = (await alerts(h)).filter((a) => a.alert === "email_changed").at(-1)!;
  assert.equal(changed.email, EMAIL);
  return parseLink(changed.secureAccountLink!);
}

test("review of D24: the owner's 'this wasn't me' link survives the attacker's next password change, reset and 2FA enrolment; the 2FA they added is turned off; the email comes back", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const attacker = "attacker@example.net";
  const secure = await takeOverEmail(h, cookie, attacker);
  // The attacker goes on: a password change (which voids links), a reset through their mailbox, 2FA.
  ok(await call(h, "POST", "/auth/change-password", cookie, { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }));
  const reset = await requestResetLink(h, attacker);
  ok(await post(h, "/auth/reset-password", { recordId: reset.recordId, token: reset.token, newPassword: "Attacker-Owns-It-2026" }));
  const attackerCookie = await signIn(h, attacker, "Attacker-Owns-It-2026");
  await enrolTwoFactor(h, attackerCookie, "Attacker-Owns-It-2026");

  const res = await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token });
  assert.equal(res.statusCode, 200, res.body);
  assert.doesNotMatch(res.json<{ message: string }>().message, /could not be given back/);
  const row = await memberRow(h, recordId, ["email", "status", "two_factor_status"]);
  assert.deepEqual(row, { email: EMAIL, status: "Password Change Pending", two_factor_status: "Disabled" });
  assert.equal(await sessionStatus(h, attackerCookie), 401);
  // The owner takes the account back through their own mailbox, with no second factor of the attacker's.
  const own = await requestResetLink(h, EMAIL);
  ok(await post(h, "/auth/reset-password", { recordId: own.recordId, token: own.token, newPassword: "Owner-Is-Back-2026" }));
  assert.equal((await login(h, EMAIL, "Owner-Is-Back-2026", { ip: nextIp() })).json<{ authorized: boolean }>().authorized, true);
});

test("review of D24: a second factor the member had before the alert stays on after 'this wasn't me'", async (t) => {
  const { h, recordId, cookie } = await member(t);
  await enrolTwoFactor(h, cookie);
  ok(await call(h, "PATCH", "/auth/me", cookie, { name: "Ada" }));
  h.clock.advance(60_000);
  ok(await call(h, "POST", "/auth/change-password", cookie, { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }));
  const alert = (await alerts(h)).filter((a) => a.alert === "password_changed").at(-1)!;
  const secure = parseLink(alert.secureAccountLink!);
  ok(await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }));
  const row = await memberRow(h, recordId, ["two_factor_status"]);
  assert.equal(row.two_factor_status, "Enabled", "mailbox access alone must not turn off a factor that predates the alert");
});

test("review of D24: a pending registration of the old address can't keep it from its owner; a verified account holding it keeps it, and the answer says so", async (t) => {
  const { h, recordId, cookie } = await member(t);
  const secure = await takeOverEmail(h, cookie, "attacker@example.net");
  // The attacker registers the old address so that it is "taken" (they can't verify it: no mailbox).
  const squat = await post(
    h,
    "/auth/register-password",
    { email: EMAIL, name: "Squatter", password: "Squatter-Pass-2026", "bot-challenge-response": "x" },
    { ip: nextIp() },
  );
  assert.equal(squat.statusCode, 200, squat.body);
  await settle(h);
  const res = await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token });
  assert.equal(res.statusCode, 200, res.body);
  const rows = await h.db.selectFrom("members").select(["id", "email"]).where("email", "=", EMAIL).execute();
  assert.deepEqual(
    rows.map((r) => String(r.id)),
    [recordId],
    "the owner has the address back; the squatter's pending account is gone",
  );

  // Another member, whose old address a verified account took meanwhile: the lockdown stands, the message says so.
  const other = await registerVerifiedMember(h, "grace@example.org");
  const graceCookie = await signIn(h, "grace@example.org");
  ok(await call(h, "POST", "/auth/change-email", graceCookie, { newEmail: "grace.new@example.org", password: STRONG_PASSWORD }));
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "email_change", "grace.new@example.org").body.verificationLink!);
  ok(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }));
  const graceSecure = parseLink((await alerts(h)).filter((a) => a.alert === "email_changed" && a.recordid === other).at(-1)!.secureAccountLink!);
  await registerVerifiedMember(h, "grace@example.org");
  const kept = await post(h, "/auth/secure-account", { recordId: graceSecure.recordId, token: graceSecure.token });
  assert.equal(kept.statusCode, 200, kept.body);
  assert.match(kept.json<{ message: string }>().message, /could not be given back/);
  const graceRow = await memberRow(h, other, ["email", "status"]);
  assert.deepEqual(graceRow, { email: "grace.new@example.org", status: "Password Change Pending" });
});

test("review of D24: in Password Change Pending the flagged password re-authenticates nothing; a dead link takes no write lock; delete-account keeps someone's waiting registration", async (t) => {
  const { h, recordId, cookie } = await member(t);
  ok(await post(h, "/auth/admin/require-password-change", { recordId }, { headers: adminHeaders(h) }));
  const magic = await magicLinkFor(h, EMAIL, { ip: nextIp() });
  const session = sessionCookieOf(await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, {}))!;
  assertError(await call(h, "POST", "/auth/change-email", session, { newEmail: NEW_EMAIL, password: STRONG_PASSWORD }), 403, "password_change_required");
  assertError(await call(h, "POST", "/auth/delete-account", session, { password: STRONG_PASSWORD }), 403, "password_change_required");
  assert.equal(await sessionStatus(h, cookie), 401, "(the requirement ended the older session)");

  // A made-up link is refused before any transaction starts.
  const transactions: unknown[] = [];
  const original = h.deps.store.transaction.bind(h.deps.store);
  h.deps.store.transaction = (work: never) => (transactions.push(1), original(work));
  t.after(() => void (h.deps.store.transaction = original));
  for (const path of ["/auth/secure-account", "/auth/confirm-email-change"])
    assertError(await post(h, path, { recordId, token: "A".repeat(43) }), 400, "invalid_token");
  assert.equal(transactions.length, 0);

  // A registration of the address waiting in the queue when the account is deleted is still sent.
  const reset = await requestResetLink(h, EMAIL);
  ok(await post(h, "/auth/reset-password", { recordId: reset.recordId, token: reset.token, newPassword: OTHER_STRONG_PASSWORD }));
  const fresh = await signIn(h, EMAIL, OTHER_STRONG_PASSWORD);
  const tenant = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!;
  await h.deps.store.emailRequests.insertEmailRequest(
    {
      id: "someones-sign-up",
      tenantId: tenant.id,
      kind: "registration",
      email: EMAIL,
      ip: "198.51.100.9",
      userAgent: null,
      registration: { recordId: 555555555555555, name: "New Ada", authenticationType: "Magic Link", passwordHash: null, passwordSalt: null },
    },
    h.clock.now(),
  );
  ok(await call(h, "POST", "/auth/delete-account", fresh, { password: OTHER_STRONG_PASSWORD }));
  await settle(h);
  await deliverWebhooks(h);
  assert.equal(lastWebhookFor(h, "verify_email", EMAIL).body.name, "New Ada", "the waiting sign-up was sent, to a new pending account");
});
