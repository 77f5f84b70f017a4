/**
 * D26 passkeys through HTTP, with real WebAuthn ceremonies: a software authenticator
 * (test/support/webauthn-authenticator.ts) signs with its own ES256 keys and @simplewebauthn/server
 * verifies. Each attack of issue 15 point 3 is a test: bad signature, wrong origin, wrong RP ID,
 * replayed challenge, counter going backwards, another tenant's credential; plus the races.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { MINUTE } from "../src/core/clock.js";
import { assertError } from "./support/assertions.js";
import { member } from "./support/account.js";
import { auditTypes } from "./support/database.js";
import { addOtherTenant, adminHeaders, enrolTwoFactor, lockMember, nextIp, OTHER_DOMAIN, storeTenantSettings } from "./support/flows.js";
import { deliverWebhooks, get, login, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { installStoreSeam, yieldingTransactions } from "./support/store-seam.js";
import { SoftAuthenticator, type AssertionOverrides, type RegistrationOverrides } from "./support/webauthn-authenticator.js";
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";

const EMAIL = "pat@example.org";
const bot = { "bot-challenge-response": "ok" };

/** A verified member (EMAIL) logged in through the API, on a tenant that sends security alerts, with `settings` besides. */
function setUp(t: { after(fn: () => Promise<void>): void }, settings: Record<string, unknown> = {}): Promise<{ h: Harness; recordId: string; cookie: string }> {
  return member(t, {
    email: EMAIL,
    settings,
    events: false,
    signIn: async (h, email) => sessionCookieOf(await login(h, email, STRONG_PASSWORD, { ip: nextIp() }))!,
  });
}

const originOf = (domain: string) => `https://${domain}`;

async function registrationOptions(
  h: Harness,
  cookie: string,
  body: Record<string, unknown> = { password: STRONG_PASSWORD },
  domain = h.tenant.domain,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const res = await post(h, "/auth/passkeys/register/options", body, { cookie, domain });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function addPasskey(
  h: Harness,
  cookie: string,
  auth: SoftAuthenticator,
  options: { name?: string; domain?: string; overrides?: RegistrationOverrides } = {},
): Promise<LightMyRequestResponse> {
  const domain = options.domain ?? h.tenant.domain;
  const creation = await registrationOptions(h, cookie, undefined, domain);
  const response = auth.createCredential(creation, originOf(domain), options.overrides);
  return post(h, "/auth/passkeys/register/verify", { response, ...(options.name ? { name: options.name } : {}) }, { cookie, domain });
}

async function loginOptions(h: Harness, domain = h.tenant.domain): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const res = await post(h, "/auth/passkeys/login/options", bot, { domain, ip: nextIp() });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function passkeyLogin(
  h: Harness,
  auth: SoftAuthenticator,
  options: { domain?: string; origin?: string; overrides?: AssertionOverrides; ip?: string } = {},
): Promise<LightMyRequestResponse> {
  const domain = options.domain ?? h.tenant.domain;
  const request = await loginOptions(h, domain);
  const response = auth.getAssertion(request, options.origin ?? originOf(domain), options.overrides);
  return post(h, "/auth/passkeys/login/verify", { response }, { domain, ip: options.ip ?? nextIp() });
}

test("D26: a member adds a passkey (discoverable, user verification), sees it, and logs in with it: the session and body of /auth/login, an alert, the audit", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const creation = await registrationOptions(h, cookie);
  assert.equal(creation.rp.id, h.tenant.domain, "the RP ID is the tenant's hostname");
  assert.equal(creation.authenticatorSelection?.residentKey, "required");
  assert.equal(creation.authenticatorSelection?.userVerification, "required");
  assert.equal(Buffer.from(creation.user.id, "base64url").toString(), recordId);

  const auth = new SoftAuthenticator();
  const added = await post(
    h,
    "/auth/passkeys/register/verify",
    { response: auth.createCredential(creation, originOf(h.tenant.domain)), name: "  Work   laptop " },
    { cookie },
  );
  assert.equal(added.statusCode, 200, added.body);
  const passkey = added.json<{ passkey: { id: string; name: string; lastUsedAt: null } }>().passkey;
  assert.equal(passkey.name, "Work laptop");
  assert.equal(passkey.lastUsedAt, null);
  await deliverWebhooks(h);
  const alert = h.receiver.ofType("security_alert").at(-1)!;
  assert.equal(alert.body.alert, "passkey_added");
  assert.equal(alert.body.passkeyName, "Work laptop");
  assert.ok(alert.body.secureAccountLink);

  const res = await passkeyLogin(h, auth);
  assert.equal(res.statusCode, 200, res.body);
  assert.deepEqual(res.json(), { authorized: true, recordid: recordId, redirectUrl: "/" });
  const session = await get(h, "/auth/session", { cookie: sessionCookieOf(res)! });
  assert.equal(session.statusCode, 200, session.body);
  assert.equal(session.json<{ recordId: string }>().recordId, recordId);
  const listed = (await get(h, "/auth/passkeys", { cookie })).json<{ passkeys: { id: string; lastUsedAt: string | null }[] }>().passkeys;
  assert.equal(listed.length, 1);
  assert.equal(listed[0]!.lastUsedAt, new Date(h.clock.now()).toISOString());
  const types = await auditTypes(h, recordId);
  assert.ok(types.includes("passkey_added") && types.at(-1) === "login_succeeded", types.join());
  const stored = await h.db.selectFrom("passkeys").selectAll().executeTakeFirstOrThrow();
  assert.equal(Number(stored.counter), 1, "the sign counter is kept");
});

test("D26: a passkey login asks no TOTP of a member with 2FA, and its session satisfies require2FA", async (t) => {
  const { h, cookie } = await setUp(t, { require2FA: true });
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  const before = await get(h, "/auth/session", { cookie });
  assert.equal(before.json<{ require2FASetup: boolean }>().require2FASetup, true, "the password session still asks for 2FA setup");
  const res = await passkeyLogin(h, auth);
  assert.equal(res.statusCode, 200, res.body);
  const data = (await get(h, "/auth/session", { cookie: sessionCookieOf(res)! })).json<{ require2FASetup: boolean }>();
  assert.equal(data.require2FASetup, false);

  await enrolTwoFactor(h, cookie);
  const again = await passkeyLogin(h, auth);
  assert.equal(again.statusCode, 200, again.body);
  assert.equal(again.json<{ authorized: boolean }>().authorized, true, "no two_factor_required");
});

test("D26 attacks on login: bad signature, wrong origin, wrong RP ID, no user verification, unknown credential: 401, and nothing changes", async (t) => {
  const { h, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  const sessions = async () => (await h.db.selectFrom("sessions").select("member_id").execute()).length;
  const count = await sessions();
  assertError(await passkeyLogin(h, auth, { overrides: { corruptSignature: true } }), 401, "invalid_credentials");
  assertError(await passkeyLogin(h, auth, { origin: "https://evil.example" }), 401, "invalid_credentials");
  assertError(await passkeyLogin(h, auth, { overrides: { rpId: "evil.example" } }), 401, "invalid_credentials");
  assertError(await passkeyLogin(h, auth, { overrides: { userVerified: false } }), 401, "invalid_credentials");
  assertError(await passkeyLogin(h, auth, { overrides: { type: "webauthn.create" } }), 401, "invalid_credentials");
  assertError(await passkeyLogin(h, unknownAuthenticator(h)), 401, "invalid_credentials");
  assert.equal(await sessions(), count);
  assert.equal((await passkeyLogin(h, auth)).statusCode, 200, "the real passkey still works");
});

/** An authenticator holding a credential this tenant never saw. */
function unknownAuthenticator(h: Harness): SoftAuthenticator {
  const stranger = new SoftAuthenticator();
  stranger.createCredential(
    {
      rp: { id: h.tenant.domain, name: "x" },
      user: { id: Buffer.from("100000000000001").toString("base64url"), name: "x", displayName: "x" },
      challenge: "AAAA",
      pubKeyCredParams: [{ type: "public-key", alg: -7 }],
    },
    originOf(h.tenant.domain),
  );
  return stranger;
}

test("D26: a login challenge works once and for 5 minutes; a replayed answer is refused", async (t) => {
  const { h, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  const request = await loginOptions(h);
  const response = auth.getAssertion(request, originOf(h.tenant.domain));
  assert.equal((await post(h, "/auth/passkeys/login/verify", { response })).statusCode, 200);
  assertError(await post(h, "/auth/passkeys/login/verify", { response }), 400, "invalid_token");
  // A challenge the server never gave.
  assertError(await passkeyLogin(h, auth, { overrides: { challenge: Buffer.from("made-up-challenge").toString("base64url") } }), 400, "invalid_token");
  const late = await loginOptions(h);
  h.clock.advance(5 * MINUTE);
  assertError(await post(h, "/auth/passkeys/login/verify", { response: auth.getAssertion(late, originOf(h.tenant.domain)) }), 400, "invalid_token");
});

test("D26: a sign counter that goes backwards is refused and audited; the next honest login works", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  for (let i = 0; i < 3; i++) assert.equal((await passkeyLogin(h, auth)).statusCode, 200);
  assertError(await passkeyLogin(h, auth, { overrides: { signCount: 2 } }), 401, "invalid_credentials");
  assertError(await passkeyLogin(h, auth, { overrides: { signCount: 3 } }), 401, "invalid_credentials");
  assert.deepEqual((await auditTypes(h, recordId)).filter((type) => type === "passkey_counter_regressed").length, 2);
  assert.equal(Number((await h.db.selectFrom("passkeys").select("counter").executeTakeFirstOrThrow()).counter), 3);
  assert.equal((await passkeyLogin(h, auth)).statusCode, 200);
});

test("D26: two logins racing on one counter value (a cloned key): one session, one refusal", async (t) => {
  const { h, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  const clone = new SoftAuthenticator();
  clone.addCredential(auth.credentials[0]!);
  const seam = installStoreSeam(h);
  const first = seam.pause("passkeys.findByCredentialId", { when: "after" });
  const held = passkeyLogin(h, auth);
  await first.reached;
  const other = await passkeyLogin(h, clone);
  assert.equal(other.statusCode, 200, other.body);
  first.release();
  assertError(await held, 401, "invalid_credentials");
});

test("D26: another tenant's credential is unknown here, even with the other tenant's origin and RP ID", async (t) => {
  const { h, cookie } = await setUp(t);
  await addOtherTenant(h);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  const credentialId = auth.credentials[0]!.id;
  // Presented to the other tenant, signed for it (its origin and RP ID): not registered there.
  assertError(await passkeyLogin(h, auth, { domain: OTHER_DOMAIN, overrides: { credentialId, rpId: OTHER_DOMAIN } }), 401, "invalid_credentials");
  // Signed for the first tenant but sent to the other: refused too.
  assertError(
    await passkeyLogin(h, auth, { domain: OTHER_DOMAIN, origin: originOf(h.tenant.domain), overrides: { credentialId } }),
    401,
    "invalid_credentials",
  );
});

test("D26: a passkey login from a new network is a login anomaly like any other (alert and audit), and it ends a password lockout", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  for (let i = 0; i < 3; i++) assert.equal((await login(h, EMAIL, "Wrong-Password-1", { ip: nextIp() })).statusCode, 401);
  assert.equal((await login(h, EMAIL, STRONG_PASSWORD, { ip: nextIp() })).statusCode, 429, "the password lockout is on");
  assert.equal((await passkeyLogin(h, auth, { ip: "203.0.113.200" })).statusCode, 200, "a passkey is not a password: the lockout doesn't stop it");
  await deliverWebhooks(h);
  // Deliveries go out concurrently: the alerts are looked up by kind, not by arrival.
  assert.ok(h.receiver.ofType("security_alert").some((w) => w.body.alert === "login_anomaly"));
  assert.ok((await auditTypes(h, recordId)).includes("login_anomaly"));
  assert.equal((await login(h, EMAIL, STRONG_PASSWORD, { ip: nextIp() })).statusCode, 200, "and it ended the lockout, as a magic link does");
});

test("D26: a locked member is refused with the right passkey; an unlocked one gets in again", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, auth)).statusCode, 200);
  await lockMember(h, recordId);
  assertError(await passkeyLogin(h, auth), 403, "account_locked");
  assert.equal((await post(h, "/auth/lock-account", { recordId, action: "unlock" }, { headers: adminHeaders(h) })).statusCode, 200);
  assert.equal((await passkeyLogin(h, auth)).statusCode, 200);
});

test("D26 attacks on registration: wrong origin, wrong RP ID, no user verification, a replayed answer, another member's challenge, a credential registered twice", async (t) => {
  const { h, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  const verify = async (overrides: RegistrationOverrides, origin = originOf(h.tenant.domain)) => {
    const creation = await registrationOptions(h, cookie);
    return post(h, "/auth/passkeys/register/verify", { response: auth.createCredential(creation, origin, overrides) }, { cookie });
  };
  assertError(await verify({}, "https://evil.example"), 400, "validation_failed");
  assertError(await verify({ rpId: "evil.example" }), 400, "validation_failed");
  assertError(await verify({ userVerified: false }), 400, "validation_failed");

  const creation = await registrationOptions(h, cookie);
  const response = auth.createCredential(creation, originOf(h.tenant.domain));
  assert.equal((await post(h, "/auth/passkeys/register/verify", { response }, { cookie })).statusCode, 200);
  assertError(await post(h, "/auth/passkeys/register/verify", { response }, { cookie }), 400, "invalid_token");

  // Another member answers with a response made for this member's challenge: not theirs.
  await registerVerifiedMember(h, "other@example.org");
  const otherCookie = sessionCookieOf(await login(h, "other@example.org", STRONG_PASSWORD, { ip: nextIp() }))!;
  const mine = await registrationOptions(h, cookie);
  const stolen = new SoftAuthenticator().createCredential(mine, originOf(h.tenant.domain));
  assertError(await post(h, "/auth/passkeys/register/verify", { response: stolen }, { cookie: otherCookie }), 400, "invalid_token");

  // The same credential again (an authenticator ignoring excludeCredentials): 409, nothing added.
  const again = await registrationOptions(h, cookie);
  assert.equal(again.excludeCredentials?.length, 1, "the member's passkeys are excluded");
  const duplicate = auth.createCredential({ ...again, excludeCredentials: [] }, originOf(h.tenant.domain), { credentialId: response.id });
  assertError(await post(h, "/auth/passkeys/register/verify", { response: duplicate }, { cookie }), 409, "conflict");
  assert.equal((await h.db.selectFrom("passkeys").select("id").execute()).length, 1);
});

test("D26 with D24: adding a passkey re-authenticates: the password when there is one, even in a fresh session; a passwordless member within 10 minutes; never a flagged password", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const options = (body: Record<string, unknown>, c = cookie) => post(h, "/auth/passkeys/register/options", body, { cookie: c });
  assertError(await options({}), 400, "validation_failed");
  assertError(await options({ password: "Wrong-Password-1" }), 401, "invalid_credentials");
  assert.equal((await options({ password: STRONG_PASSWORD })).statusCode, 200);

  // A magic-link-only member: a session under 10 minutes old is the proof; an older one is not.
  await post(h, "/auth/register-magic-link", { email: "ml@example.org", name: "Ml", ...bot }, { ip: nextIp() });
  await deliverWebhooks(h);
  const verify = new URL(h.receiver.ofType("verify_email").at(-1)!.body.verificationLink!).pathname.split("/");
  assert.equal((await post(h, "/auth/verify-email", { recordId: verify[2], token: verify[3] })).statusCode, 200);
  const magicCookie = sessionCookieOf(await loginByLink(h, "ml@example.org"))!;
  assert.equal((await options({}, magicCookie)).statusCode, 200);
  h.clock.advance(11 * MINUTE);
  assertError(await options({}, magicCookie), 401, "unauthorized");

  // Password Change Pending: the password is the one flagged; it proves nothing.
  assert.equal((await post(h, "/auth/admin/require-password-change", { recordId }, { headers: adminHeaders(h) })).statusCode, 200);
  const flagged = sessionCookieOf(await passkeylessLogin(h))!;
  assertError(await options({ password: STRONG_PASSWORD }, flagged), 403, "password_change_required");
});

/** The session of a magic link login. */
async function loginByLink(h: Harness, email: string): Promise<LightMyRequestResponse> {
  await post(h, "/auth/request-magic-link", { email, ...bot }, { ip: nextIp() });
  await deliverWebhooks(h);
  const [, , recordId, token] = new URL(h.receiver.ofType("magic_login").at(-1)!.body.magicLoginLink!).pathname.split("/");
  const res = await post(h, `/auth/verify-magic-link/${recordId}/${token}`, bot);
  assert.equal(res.statusCode, 200, res.body);
  return res;
}

/** EMAIL's session in Password Change Pending (a magic link logs in; a password login is refused). */
function passkeylessLogin(h: Harness): Promise<LightMyRequestResponse> {
  h.clock.advance(4 * MINUTE);
  return loginByLink(h, EMAIL);
}

test("D26: two registration options at once leave one ceremony open; at most 20 passkeys", async (t) => {
  yieldingTransactions(t);
  const { h, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  const [first, second] = await Promise.all([registrationOptions(h, cookie), registrationOptions(h, cookie)]);
  const answers = await Promise.all(
    [first, second].map((o) => post(h, "/auth/passkeys/register/verify", { response: auth.createCredential(o, originOf(h.tenant.domain)) }, { cookie })),
  );
  assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 400]);
  for (let i = 1; i < 20; i++) assert.equal((await addPasskey(h, cookie, new SoftAuthenticator())).statusCode, 200);
  assertError(await post(h, "/auth/passkeys/register/options", { password: STRONG_PASSWORD }, { cookie }), 409, "conflict");
});

test("D26 bad input: over-long or unknown transports are dropped, a credential id over 1023 bytes or unlike the reported one is refused, names with control or bidi characters are refused; never a 500", async (t) => {
  const { h, cookie } = await setUp(t);
  const origin = originOf(h.tenant.domain);
  const withTransports = new SoftAuthenticator().createCredential(await registrationOptions(h, cookie), origin);
  withTransports.response.transports = [...Array.from({ length: 7 }, (_, i) => `${i}`.padEnd(32, "x")), "usb"] as never;
  const added = await post(h, "/auth/passkeys/register/verify", { response: withTransports }, { cookie });
  assert.equal(added.statusCode, 200, added.body);
  assert.equal((await h.db.selectFrom("passkeys").select("transports").executeTakeFirstOrThrow()).transports, '["usb"]');

  const long = new SoftAuthenticator().createCredential(await registrationOptions(h, cookie), origin, {
    credentialId: Buffer.alloc(1100, 7).toString("base64url"),
  });
  assertError(await post(h, "/auth/passkeys/register/verify", { response: { ...long, id: "AAAA", rawId: "AAAA" } }, { cookie }), 400, "validation_failed");
  const mismatched = new SoftAuthenticator().createCredential(await registrationOptions(h, cookie), origin);
  assertError(
    await post(h, "/auth/passkeys/register/verify", { response: { ...mismatched, id: "AAAA", rawId: "AAAA" } }, { cookie }),
    400,
    "validation_failed",
  );

  const named = new SoftAuthenticator().createCredential(await registrationOptions(h, cookie), origin);
  assertError(await post(h, "/auth/passkeys/register/verify", { response: named, name: "Phone\u0000" }, { cookie }), 400, "validation_failed");
  const id = added.json<{ passkey: { id: string } }>().passkey.id;
  const patch = (url: string, name: string) =>
    h.app.inject({ method: "PATCH", url, payload: { name }, headers: { "x-tenant-domain": h.tenant.domain, cookie: `session_id=${cookie}` } });
  for (const name of ["a\u0000b", "\u202egnp.exe", "esc\u001b[31m", "   "]) assertError(await patch(`/auth/passkeys/${id}`, name), 400, "validation_failed");
  assertError(await patch("/auth/passkeys/%00", "x"), 400, "validation_failed");
  assertError(
    await h.app.inject({ method: "DELETE", url: "/auth/passkeys/%00", headers: { "x-tenant-domain": h.tenant.domain, cookie: `session_id=${cookie}` } }),
    400,
    "validation_failed",
  );
  assert.equal((await h.db.selectFrom("passkeys").select("name").executeTakeFirstOrThrow()).name.startsWith("Passkey added "), true);

  const cd = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const live = (await loginOptions(h)).challenge;
  const base = { id: "AAAA", rawId: "AAAA", type: "public-key", clientExtensionResults: {} };
  for (const clientData of [null, { challenge: { a: 1 } }, { type: "webauthn.get", challenge: live, origin }, { challenge: "x".repeat(3000) }]) {
    const res = await post(
      h,
      "/auth/passkeys/login/verify",
      { response: { ...base, response: { clientDataJSON: cd(clientData), authenticatorData: "AA", signature: "AA" } } },
      { ip: nextIp() },
    );
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, res.body);
    assert.equal(res.json<{ success: boolean }>().success, false);
  }
});

test("D26: rename and remove; another member's passkey id is 404 and untouched; removal sends an alert", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  const id = (await addPasskey(h, cookie, auth)).json<{ passkey: { id: string } }>().passkey.id;
  await registerVerifiedMember(h, "other@example.org");
  const otherCookie = sessionCookieOf(await login(h, "other@example.org", STRONG_PASSWORD, { ip: nextIp() }))!;
  const patch = (c: string, name: string) =>
    h.app.inject({
      method: "PATCH",
      url: `/auth/passkeys/${id}`,
      payload: { name },
      headers: { "x-tenant-domain": h.tenant.domain, cookie: `session_id=${c}` },
    });
  const remove = (c: string) =>
    h.app.inject({ method: "DELETE", url: `/auth/passkeys/${id}`, headers: { "x-tenant-domain": h.tenant.domain, cookie: `session_id=${c}` } });
  assertError(await patch(otherCookie, "Mine now"), 404, "not_found");
  assertError(await remove(otherCookie), 404, "not_found");
  const renamed = await patch(cookie, "Phone");
  assert.equal(renamed.statusCode, 200, renamed.body);
  assert.equal(renamed.json<{ passkey: { name: string } }>().passkey.name, "Phone");
  assert.equal((await remove(cookie)).statusCode, 200);
  assertError(await remove(cookie), 404, "not_found");
  await deliverWebhooks(h);
  const alert = h.receiver.ofType("security_alert").find((w) => w.body.alert === "passkey_removed")!;
  assert.equal(alert.body.passkeyName, "Phone", "deliveries go out concurrently: found by kind");
  assert.ok((await auditTypes(h, recordId)).includes("passkey_removed"));
  assertError(await passkeyLogin(h, auth), 401, "invalid_credentials");
});

test('D26 with D22/D24: "this wasn\'t me" removes every passkey, whichever alert it came from; erasure deletes them', async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const owner = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, owner, { name: "Owner" })).statusCode, 200);
  await deliverWebhooks(h);
  const ownerAlert = h.receiver.ofType("security_alert").at(-1)!;
  h.clock.advance(MINUTE);
  const intruder = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, intruder, { name: "Intruder" })).statusCode, 200);
  await deliverWebhooks(h);
  const link = new URL(h.receiver.ofType("security_alert").at(-1)!.body.secureAccountLink!);
  const [, , linkRecordId, token] = link.pathname.split("/");
  assert.equal((await post(h, "/auth/secure-account", { recordId: linkRecordId, token })).statusCode, 200);
  assert.equal((await h.db.selectFrom("passkeys").select("name").execute()).length, 0, "a newer alert's link removes the intruder's passkey, and the owner's");
  assert.ok(ownerAlert.body.secureAccountLink);
  assertError(await passkeyLogin(h, intruder), 401, "invalid_credentials");

  // Erasure, after the owner adds one again.
  const reset = await post(h, "/auth/forgot-password", { email: EMAIL, ...bot }, { ip: nextIp() });
  assert.equal(reset.statusCode, 200);
  await deliverWebhooks(h);
  const [, , resetId, resetToken] = new URL(h.receiver.ofType("password_reset").at(-1)!.body.resetLink!).pathname.split("/");
  assert.equal((await post(h, "/auth/reset-password", { recordId: resetId, token: resetToken, newPassword: "Another-Strong-Pass-77" })).statusCode, 200);
  const again = sessionCookieOf(await login(h, EMAIL, "Another-Strong-Pass-77", { ip: nextIp() }))!;
  const creation = await registrationOptions(h, again, { password: "Another-Strong-Pass-77" });
  assert.equal(
    (await post(h, "/auth/passkeys/register/verify", { response: owner.createCredential(creation, originOf(h.tenant.domain)) }, { cookie: again })).statusCode,
    200,
  );
  const erased = await h.app.inject({
    method: "DELETE",
    url: `/auth/admin/members/${recordId}`,
    headers: { "x-tenant-domain": h.tenant.domain, ...adminHeaders(h) },
  });
  assert.equal(erased.statusCode, 200, erased.body);
  assert.equal((await h.db.selectFrom("passkeys").select("id").execute()).length, 0);
  assertError(await passkeyLogin(h, owner, { overrides: { credentialId: owner.credentials.at(-1)!.id } }), 401, "invalid_credentials");
});

/** The refusal's own log line names the rule that refused it (the answer is that of any refused passkey). */
function assertRefusedFor(h: Harness, res: LightMyRequestResponse, rule: string): void {
  const requestId = res.json<{ requestId: string }>().requestId;
  assert.ok(
    h.logs.some((line) => line.includes(`"reqId":"${requestId}"`) && line.includes(`"rule":"${rule}"`)),
    `no log line with rule ${rule} for ${requestId}`,
  );
}

test("D30: an answer made in a frame of another origin's page (clientData crossOrigin: true, or a topOrigin) is refused: registration 400, login 401; the challenge is used up, nothing stored, the refusal logged under its rule", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  const framed: RegistrationOverrides[] = [
    { crossOrigin: true },
    { crossOrigin: true, topOrigin: "https://evil.example" },
    { topOrigin: "https://evil.example" },
  ];
  const auth = new SoftAuthenticator();
  for (const overrides of framed) {
    const creation = await registrationOptions(h, cookie);
    const response = auth.createCredential(creation, originOf(h.tenant.domain), overrides);
    const refused = await post(h, "/auth/passkeys/register/verify", { response }, { cookie });
    assertError(refused, 400, "validation_failed");
    assertRefusedFor(h, refused, "passkey_cross_origin");
    assertError(await post(h, "/auth/passkeys/register/verify", { response }, { cookie }), 400, "invalid_token");
  }
  assert.equal((await h.db.selectFrom("passkeys").select("id").execute()).length, 0, "no passkey stored");
  assert.ok(!(await auditTypes(h, recordId)).includes("passkey_added"));

  const member = new SoftAuthenticator();
  assert.equal((await addPasskey(h, cookie, member)).statusCode, 200, "the same member, unframed, adds one");
  const sessions = async () => (await h.db.selectFrom("sessions").select("member_id").execute()).length;
  const before = await sessions();
  for (const overrides of framed as AssertionOverrides[]) {
    const refused = await passkeyLogin(h, member, { overrides });
    assertError(refused, 401, "invalid_credentials");
    assertRefusedFor(h, refused, "passkey_cross_origin");
  }
  assert.equal(await sessions(), before, "no session");
  assert.equal((await h.db.selectFrom("passkeys").select("last_used_at").executeTakeFirstOrThrow()).last_used_at, null, "the passkey was never used");
  assert.equal((await passkeyLogin(h, member, { overrides: { crossOrigin: false } })).statusCode, 200, "crossOrigin: false is a same-origin answer");
});

test("D30: passkey names refuse every format character, zero-width ones too, like member names", async (t) => {
  const { h, cookie } = await setUp(t);
  const auth = new SoftAuthenticator();
  const added = await addPasskey(h, cookie, auth, { name: "Phone" });
  assert.equal(added.statusCode, 200, added.body);
  const id = added.json<{ passkey: { id: string } }>().passkey.id;
  const rename = (name: string) =>
    h.app.inject({
      method: "PATCH",
      url: `/auth/passkeys/${id}`,
      payload: { name },
      headers: { "x-tenant-domain": h.tenant.domain, cookie: `session_id=${cookie}` },
    });
  for (const name of ["Pho\u200bne", "Pho\u200dne", "Pho\u2060ne", "Pho\ufeffne", "Phone\ufeff", "Pho\u00adne", "\u2067Phone"]) {
    assertError(await rename(name), 400, "validation_failed");
  }
  const other = new SoftAuthenticator().createCredential(await registrationOptions(h, cookie), originOf(h.tenant.domain));
  assertError(await post(h, "/auth/passkeys/register/verify", { response: other, name: "Lap\u200btop" }, { cookie }), 400, "validation_failed");
  assert.deepEqual(
    (await h.db.selectFrom("passkeys").select("name").execute()).map((p) => p.name),
    ["Phone"],
  );
  assert.equal((await rename("Téléphone de Zoë")).statusCode, 200);
});

test("D30: WebAuthn origins are https://{hostname} and the listed origins on it or under it: not an http one stored before https was required, nor a foreign one listed for CORS", async (t) => {
  const { h, cookie } = await setUp(t);
  const sub = `https://app.${h.tenant.domain}`;
  const staleHttp = `http://app.${h.tenant.domain}`;
  const foreign = "https://shop.example.net";
  await storeTenantSettings(h, { allowedOrigins: [staleHttp, foreign, sub] });
  const rpId = h.tenant.domain;
  for (const origin of [staleHttp, foreign]) {
    const made = new SoftAuthenticator().createCredential(await registrationOptions(h, cookie), origin, { rpId });
    assertError(await post(h, "/auth/passkeys/register/verify", { response: made }, { cookie }), 400, "validation_failed");
  }
  assert.equal((await h.db.selectFrom("passkeys").select("id").execute()).length, 0);

  const listed = new SoftAuthenticator();
  const added = await post(
    h,
    "/auth/passkeys/register/verify",
    { response: listed.createCredential(await registrationOptions(h, cookie), sub, { rpId }) },
    { cookie },
  );
  assert.equal(added.statusCode, 200, added.body);
  for (const origin of [staleHttp, foreign]) {
    const answer = listed.getAssertion({ ...(await loginOptions(h)), rpId }, origin);
    assertError(await post(h, "/auth/passkeys/login/verify", { response: answer }, { ip: nextIp() }), 401, "invalid_credentials");
  }
  const ok = await post(h, "/auth/passkeys/login/verify", { response: listed.getAssertion({ ...(await loginOptions(h)), rpId }, sub) }, { ip: nextIp() });
  assert.equal(ok.statusCode, 200, ok.body);
  // The foreign origin keeps what it was listed for: CORS.
  const cors = await h.app.inject({
    method: "OPTIONS",
    url: "/auth/login",
    headers: { host: h.tenant.domain, origin: foreign, "access-control-request-method": "POST" },
  });
  assert.equal(cors.headers["access-control-allow-origin"], foreign);
});
