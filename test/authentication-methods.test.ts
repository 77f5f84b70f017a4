/**
 * decisions.md#authentication-methods: every place that opens a session records how, and the
 * session check reads it back (the `amr` of ID tokens and session tokens), on SQLite and PostgreSQL
 * (LATCH_TEST_STORE). One test per method: password, password then TOTP or a recovery code, magic
 * link, emailed code (alone and with the second factor), passkey, federated (alone and with 2FA).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { findActiveSession } from "../src/flows/kernel/sessions.js";
import { ok } from "./support/assertions.js";
import { call } from "./support/account.js";
import { enrolTwoFactor, loginCookie, magicLinkFor, nextIp } from "./support/flows.js";
import { connectUpstream, federatedRoundTrip, setCookieValue } from "./support/federation.js";
import { createHarness, login, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { totpAt } from "./support/totp.js";
import { SoftAuthenticator } from "./support/webauthn-authenticator.js";

const EMAIL = "amr@example.org";

async function harness(t: { after(fn: () => Promise<void>): void }): Promise<Harness> {
  const h = await createHarness();
  t.after(() => h.close());
  return h;
}

/** The amr the session check reads for the cookie an answer set. */
async function amrOf(h: Harness, res: LightMyRequestResponse | string): Promise<string[]> {
  const cookie = typeof res === "string" ? res : sessionCookieOf(res);
  assert.ok(cookie, typeof res === "string" ? "no cookie" : `no session cookie: ${res.statusCode} ${res.body}`);
  const tenant = await h.deps.tenantCache.findByDomain(h.tenant.domain);
  const session = await findActiveSession(h.deps, tenant!, cookie);
  assert.ok(session, "the session is live");
  return session.amr;
}

/** A verified member with 2FA on; returns the TOTP secret and recovery codes. */
async function memberWithTwoFactor(h: Harness): Promise<{ secret: string; recoveryCodes: string[] }> {
  await registerVerifiedMember(h, EMAIL);
  return enrolTwoFactor(h, await loginCookie(h, EMAIL, STRONG_PASSWORD, { ip: nextIp() }));
}

function magicLogin(h: Harness, link: { recordId: string; token: string }, extra: Record<string, unknown> = {}): Promise<LightMyRequestResponse> {
  return post(h, `/auth/verify-magic-link/${link.recordId}/${link.token}`, { "bot-challenge-response": "x", ...extra }, { ip: nextIp() });
}

test("password: pwd", async (t) => {
  const h = await harness(t);
  await registerVerifiedMember(h, EMAIL);
  assert.deepEqual(await amrOf(h, await loginCookie(h, EMAIL)), ["pwd"]);
});

test("password then a TOTP code, or then a recovery code: pwd, otp, mfa", async (t) => {
  const h = await harness(t);
  const { secret, recoveryCodes } = await memberWithTwoFactor(h);
  const asked = await login(h, EMAIL, STRONG_PASSWORD, { ip: nextIp() });
  assert.equal(sessionCookieOf(asked), undefined, "the second factor is asked first");
  const withTotp = await post(h, "/auth/login", {
    email: EMAIL,
    password: STRONG_PASSWORD,
    twoFACode: totpAt(secret, h.clock.now()),
    "bot-challenge-response": "x",
  });
  assert.deepEqual(await amrOf(h, withTotp), ["pwd", "otp", "mfa"]);
  const withRecovery = await post(h, "/auth/login", { email: EMAIL, password: STRONG_PASSWORD, twoFACode: recoveryCodes[0], "bot-challenge-response": "x" });
  assert.deepEqual(await amrOf(h, withRecovery), ["pwd", "otp", "mfa"]);
});

test("magic link and its emailed code: email, never otp (RFC 8176's otp is an authenticator's code)", async (t) => {
  const h = await harness(t);
  await registerVerifiedMember(h, EMAIL);
  assert.deepEqual(await amrOf(h, await magicLogin(h, await magicLinkFor(h, EMAIL))), ["email"]);
  h.clock.advance(5 * 60_000); // past the magic link cooldown
  const { code } = await magicLinkFor(h, EMAIL);
  const byCode = await post(h, "/auth/verify-login-code", { email: EMAIL, code, "bot-challenge-response": "x" }, { ip: nextIp() });
  assert.deepEqual(await amrOf(h, byCode), ["email"]);
});

test("magic link or emailed code with the member's 2FA: email, otp, mfa", async (t) => {
  const h = await harness(t);
  const { secret } = await memberWithTwoFactor(h);
  const link = await magicLinkFor(h, EMAIL);
  assert.deepEqual(await amrOf(h, await magicLogin(h, link, { twoFACode: totpAt(secret, h.clock.now()) })), ["email", "otp", "mfa"]);
  h.clock.advance(5 * 60_000);
  const { code } = await magicLinkFor(h, EMAIL);
  const body = { email: EMAIL, code, twoFACode: totpAt(secret, h.clock.now()), "bot-challenge-response": "x" };
  assert.deepEqual(await amrOf(h, await post(h, "/auth/verify-login-code", body, { ip: nextIp() })), ["email", "otp", "mfa"]);
});

test("passkey: hwk, mfa (possession and user verification, contract.md#d26)", async (t) => {
  const h = await harness(t);
  await registerVerifiedMember(h, EMAIL);
  const cookie = await loginCookie(h, EMAIL, STRONG_PASSWORD, { ip: nextIp() });
  const auth = new SoftAuthenticator();
  const origin = `https://${h.tenant.domain}`;
  const creation = ok<Parameters<SoftAuthenticator["createCredential"]>[0]>(
    await post(h, "/auth/passkeys/register/options", { password: STRONG_PASSWORD }, { cookie }),
  );
  ok(await post(h, "/auth/passkeys/register/verify", { response: auth.createCredential(creation, origin) }, { cookie }));
  const request = ok<Parameters<SoftAuthenticator["getAssertion"]>[0]>(
    await post(h, "/auth/passkeys/login/options", { "bot-challenge-response": "x" }, { ip: nextIp() }),
  );
  const res = await post(h, "/auth/passkeys/login/verify", { response: auth.getAssertion(request, origin) }, { ip: nextIp() });
  assert.deepEqual(await amrOf(h, res), ["hwk", "mfa"]);
});

test("federated: fed; with the member's 2FA step after the callback: fed, otp, mfa", async (t) => {
  const h = await harness(t);
  const idp = await connectUpstream(h, t);
  const person = { email: "grace@example.net", verified: true };
  const first = await federatedRoundTrip(h, idp, person);
  assert.deepEqual(await amrOf(h, first.callback), ["fed"], "sign-up");
  const again = await federatedRoundTrip(h, idp, person);
  assert.deepEqual(await amrOf(h, again.callback), ["fed"], "sign-in of a linked identity");

  const cookie = sessionCookieOf(first.callback)!;
  const setup = ok<{ secret: string }>(await call(h, "POST", "/auth/2fa/setup", cookie, {}));
  ok(await call(h, "POST", "/auth/2fa/enable", cookie, { code: totpAt(setup.secret, h.clock.now()) }));
  h.clock.advance(30_000);
  const trip = await federatedRoundTrip(h, idp, person);
  const pending = `__Host-latch_fed_pending=${setCookieValue(trip.callback, "__Host-latch_fed_pending")}`;
  const done = await post(h, "/auth/federated/second-factor", { twoFACode: totpAt(setup.secret, h.clock.now()) }, { headers: { cookie: pending } });
  assert.deepEqual(await amrOf(h, done), ["fed", "otp", "mfa"]);
});
