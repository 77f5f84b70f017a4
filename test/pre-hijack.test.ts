/**
 * Issue 13, finding 1 (D18): an attacker who registers a victim's email first must not end up
 * holding the victim's account. Each registration of a pending account keeps its own password and
 * its own link; a resend link carries no password. The attack is replayed step by step.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError, assertRegistered, assertVerified } from "./support/assertions.js";
import { adminHeaders, register, webhooksFor } from "./support/flows.js";
import { createHarness, deliverWebhooks, login, parseLink, post, type Harness } from "./support/harness.js";
import { assertPage, getPage } from "./support/ui-forms.js";

const VICTIM = "victim@example.org";
const ATTACKER_PASSWORD = "Attacker-Owns-It-77";
const VICTIM_PASSWORD = "Victims-Own-Secret-42";
const ATTACKER_IP = "198.51.100.66";
const VICTIM_IP = "203.0.113.77";

/** Registers and delivers its email at once, so the mailbox keeps the order of the steps. */
async function registerVictim(h: Harness, name: string, password: string, ip: string) {
  const registered = assertRegistered(await register(h, VICTIM, password, { name, ip }));
  await deliverWebhooks(h);
  return registered;
}

/** The verification links in the victim's mailbox, oldest first, with the name each greets. */
async function mailbox(h: Harness): Promise<{ name: string; recordId: string; token: string }[]> {
  await deliverWebhooks(h);
  return webhooksFor(h, "verify_email", VICTIM).map((w) => ({ name: w.body.name!, ...parseLink(w.body.verificationLink!) }));
}

async function verify(h: Harness, link: { recordId: string; token: string }, password?: string) {
  return post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token, ...(password === undefined ? {} : { password }) });
}

test("pre-hijack: the victim's own registration link gives the account the victim's password, never the attacker's", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  await registerVictim(h, "Victor", VICTIM_PASSWORD, VICTIM_IP);

  const [attackers, victims] = await mailbox(h);
  assert.equal(attackers!.name, "Eve", "each email greets its own registration");
  assert.equal(victims!.name, "Victor");
  assert.equal(victims!.recordId, attackers!.recordId, "one pending account");

  assertVerified(await verify(h, victims!), true);
  assertError(await login(h, VICTIM, ATTACKER_PASSWORD, { ip: ATTACKER_IP }), 401, "invalid_credentials");
  assert.equal((await login(h, VICTIM, VICTIM_PASSWORD, { ip: VICTIM_IP })).statusCode, 200);
  // The attacker's link died with the victim's use of theirs: it can't rewrite the account later.
  assertError(await verify(h, attackers!), 400, "invalid_token");
  assert.equal((await login(h, VICTIM, VICTIM_PASSWORD, { ip: VICTIM_IP })).statusCode, 200);
});

test("pre-hijack: a pending account answers 403 email_not_verified only to its newest registration's password (D18, D4)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  h.clock.advance(60_000);
  await registerVictim(h, "Victor", VICTIM_PASSWORD, VICTIM_IP);
  await deliverWebhooks(h);
  assertError(await login(h, VICTIM, ATTACKER_PASSWORD, { ip: ATTACKER_IP }), 401, "invalid_credentials");
  assertError(await login(h, VICTIM, VICTIM_PASSWORD, { ip: VICTIM_IP }), 403, "email_not_verified");
});

test("pre-hijack: a resend link carries no password; the victim chooses one with it and the attacker's stays out", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  assert.equal((await post(h, "/auth/resend-verification", { email: VICTIM, "bot-challenge-response": "x" }, { ip: VICTIM_IP })).statusCode, 200);
  const [attackers, resent] = await mailbox(h);
  assert.equal(resent!.name, "Eve", "a resend greets the account's current name");

  // The password rules hold, and a refused password leaves the link usable (D15).
  assertError(await verify(h, resent!, "short"), 400, "weak_password");
  // A password sent with a link that already sets one is refused, and that link stays usable too.
  assertError(await verify(h, attackers!, VICTIM_PASSWORD), 400, "validation_failed");
  assertVerified(await verify(h, resent!, VICTIM_PASSWORD), true);

  assertError(await login(h, VICTIM, ATTACKER_PASSWORD, { ip: ATTACKER_IP }), 401, "invalid_credentials");
  assert.equal((await login(h, VICTIM, VICTIM_PASSWORD, { ip: VICTIM_IP })).statusCode, 200);
  assertError(await verify(h, attackers!), 400, "invalid_token");
});

test("pre-hijack: a resend link used without a password verifies an account with no password: the attacker's does not work", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  const admin = await post(
    h,
    "/auth/admin/resend-verification-email",
    { recordId: (await mailbox(h))[0]!.recordId, email: VICTIM },
    { headers: adminHeaders(h) },
  );
  assert.equal(admin.statusCode, 200, admin.body);
  const resent = (await mailbox(h)).at(-1)!;
  assertVerified(await verify(h, resent), false);
  assertError(await login(h, VICTIM, ATTACKER_PASSWORD, { ip: ATTACKER_IP }), 401, "invalid_credentials");
  const member = await h.db
    .selectFrom("members")
    .select(["password_hash", "has_password_auth", "has_magic_link_auth", "status"])
    .where("email", "=", VICTIM)
    .executeTakeFirstOrThrow();
  assert.deepEqual(member, { password_hash: null, has_password_auth: 0, has_magic_link_auth: 1, status: "Unlocked" });
});

test("pre-hijack: a password reset of a pending account voids every registration and verification link (D18)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  const [attackers] = await mailbox(h);
  assert.equal((await post(h, "/auth/forgot-password", { email: VICTIM, "bot-challenge-response": "x" }, { ip: VICTIM_IP })).statusCode, 200);
  await deliverWebhooks(h);
  const reset = parseLink(h.receiver.last("password_reset").body.resetLink!);
  assert.equal((await post(h, "/auth/reset-password", { recordId: reset.recordId, token: reset.token, newPassword: VICTIM_PASSWORD })).statusCode, 200);
  assertError(await verify(h, attackers!), 400, "invalid_token");
  assertError(await login(h, VICTIM, ATTACKER_PASSWORD, { ip: ATTACKER_IP }), 401, "invalid_credentials");
  assert.equal((await login(h, VICTIM, VICTIM_PASSWORD, { ip: VICTIM_IP })).statusCode, 200);
  assert.equal((await h.db.selectFrom("registrations").select("id").execute()).length, 0, "no registration outlives the account's verification");
});

test("pre-hijack: no pending account holds a password hash; each registration holds its own (D18)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  await registerVictim(h, "Victor", VICTIM_PASSWORD, VICTIM_IP);
  await deliverWebhooks(h);
  const member = await h.db.selectFrom("members").select(["id", "password_hash", "status"]).where("email", "=", VICTIM).executeTakeFirstOrThrow();
  assert.equal(member.password_hash, null);
  assert.equal(member.status, "Email Verification Pending");
  const registrations = await h.db
    .selectFrom("registrations")
    .select(["name", "password_hash"])
    .where("member_id", "=", member.id)
    .orderBy("created_at")
    .execute();
  assert.deepEqual(registrations.map((r) => r.name).sort(), ["Eve", "Victor"]);
  assert.ok(registrations.every((r) => r.password_hash?.startsWith("$argon2id$")));
});

test("pre-hijack: the confirmation page names the registration each link confirms, and offers a password only to links without one", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVictim(h, "Eve", ATTACKER_PASSWORD, ATTACKER_IP);
  assert.equal((await post(h, "/auth/resend-verification", { email: VICTIM, "bot-challenge-response": "x" }, { ip: VICTIM_IP })).statusCode, 200);
  const [attackers, resent] = await mailbox(h);
  const attackersPage = assertPage(await getPage(h, `/email-verified/${attackers!.recordId}/${attackers!.token}`));
  assert.match(attackersPage, /made with the name <strong>Eve<\/strong>\. If you did not make it, do not press the button/);
  assert.doesNotMatch(attackersPage, /Choose a password/);
  const resentPage = assertPage(await getPage(h, `/email-verified/${resent!.recordId}/${resent!.token}`));
  assert.doesNotMatch(resentPage, /made with the name/);
  assert.match(resentPage, /Choose a password \(optional\)/);
  // The pages changed nothing: both links still work (the first use voids the other).
  assertVerified(await verify(h, resent!, VICTIM_PASSWORD), true);
});
