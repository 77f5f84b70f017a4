/**
 * contract.md#d28, decisions.md#session-tokens: `POST /auth/session/token` on SQLite and PostgreSQL
 * (LATCH_TEST_STORE). The token is checked by jose as a tenant's backend checks it (the published
 * JWKS, issuer, audience, `typ`, at the injected clock's time): its claims exactly, the session
 * cookie and CSRF rules, tenants kept apart, key rotation, the expiry capped by the session, and
 * no token for a session that is gone, locked, or held back by a pending password change or 2FA setup.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from "jose";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { publicJwks, rotateSigningKeys } from "../src/flows/oidc/signing-keys.js";
import { SESSION_TOKEN_TYPE } from "../src/flows/oidc/session-token.js";
import { SESSION_TOKEN_LIFETIME_MS } from "../src/rules.js";
import { assertError, ok } from "./support/assertions.js";
import { addOtherTenant, adminHeaders, lockMember, loginCookie, magicLinkFor, nextIp, OTHER_DOMAIN, storeTenantSettings, tenantIdOf } from "./support/flows.js";
import {
  createHarness,
  get,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  TEST_STORE,
  type Harness,
  type PostOptions,
} from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";
import { SoftAuthenticator } from "./support/webauthn-authenticator.js";

const EMAIL = "edge@example.org";

async function signedIn(t: { after(fn: () => Promise<void>): void }, settings: Record<string, unknown> = {}) {
  const h = await createHarness({ settings });
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const cookie = await loginCookie(h, EMAIL, undefined, { ip: nextIp() });
  return { h, recordId, cookie };
}

function requestToken(h: Harness, cookie: string | undefined, options: PostOptions = {}) {
  return post(h, "/auth/session/token", undefined, { ...(cookie === undefined ? {} : { cookie }), ...options });
}

async function tokenOf(h: Harness, cookie: string): Promise<{ token: string; expiresAt: string }> {
  const body = ok<{ success: true; token: string; expiresAt: string }>(await requestToken(h, cookie));
  assert.deepEqual(Object.keys(body).sort(), ["expiresAt", "success", "token"]);
  return body;
}

/** jwtVerify as a backend of `domain` runs it: that tenant's JWKS, iss, aud, typ, at the harness's time. */
async function verifyAsBackend(h: Harness, token: string, domain = h.tenant.domain): Promise<JWTPayload> {
  const jwks = createLocalJWKSet(await publicJwks(h.deps, { id: await tenantIdOf(h, domain) }));
  const { payload } = await jwtVerify(token, jwks, {
    issuer: `https://${domain}`,
    audience: domain,
    typ: SESSION_TOKEN_TYPE,
    algorithms: ["ES256"],
    currentDate: new Date(h.clock.now()),
  });
  return payload;
}

async function currentSessionId(h: Harness, cookie: string): Promise<string> {
  const { sessions } = ok<{ sessions: { id: string; current: boolean }[] }>(await get(h, "/auth/sessions", { cookie }));
  return sessions.find((s) => s.current)!.id;
}

test("the token verifies with the tenant's JWKS; its header and claims are exactly these; nothing of it or the cookie is logged", async (t) => {
  const { h, recordId, cookie } = await signedIn(t);
  const openedAt = Math.floor(h.clock.now() / 1000);
  h.clock.advance(90 * SECOND);
  const { token, expiresAt } = await tokenOf(h, cookie);
  const now = Math.floor(h.clock.now() / 1000);
  const payload = await verifyAsBackend(h, token);
  const sid = await currentSessionId(h, cookie);
  assert.deepEqual(payload, {
    iss: `https://${h.tenant.domain}`,
    aud: h.tenant.domain,
    sub: recordId,
    sid,
    amr: ["pwd"],
    auth_time: openedAt,
    iat: now,
    exp: now + SESSION_TOKEN_LIFETIME_MS / 1000,
  });
  assert.equal(expiresAt, new Date((now + SESSION_TOKEN_LIFETIME_MS / 1000) * 1000).toISOString());
  const current = (await publicJwks(h.deps, { id: await tenantIdOf(h) })).keys.find((k) => k.alg === "ES256")!;
  assert.deepEqual(decodeProtectedHeader(token), { alg: "ES256", kid: current.kid, typ: SESSION_TOKEN_TYPE });
  assert.notEqual(sid, cookie);
  const logs = h.logs.join("\n");
  assert.ok(!logs.includes(token) && !logs.includes(token.split(".")[2]!), "the token is never logged");
  assert.ok(!logs.includes(cookie), "the cookie is never logged");
});

test("no cookie, an unknown cookie, or another tenant's session: 401; an Origin that is not the tenant's: 403 origin_mismatch; the tenant's own Origin works", async (t) => {
  const { h, cookie } = await signedIn(t);
  await addOtherTenant(h);
  assertError(await requestToken(h, undefined), 401, "unauthorized");
  assertError(await requestToken(h, "not-a-session"), 401, "unauthorized");
  assertError(await requestToken(h, cookie, { domain: OTHER_DOMAIN }), 401, "unauthorized");
  assertError(await requestToken(h, cookie, { headers: { origin: "https://evil.example" } }), 403, "origin_mismatch");
  assertError(await requestToken(h, cookie, { headers: { origin: `http://${h.tenant.domain}` } }), 403, "origin_mismatch");
  ok(await requestToken(h, cookie, { headers: { origin: `https://${h.tenant.domain}` } }));
});

test("a token of one tenant does not verify with another tenant's JWKS, nor pass its iss and aud checks", async (t) => {
  const { h, cookie } = await signedIn(t);
  await addOtherTenant(h);
  const { token } = await tokenOf(h, cookie);
  await assert.rejects(verifyAsBackend(h, token, OTHER_DOMAIN), (err: Error & { code?: string }) => err.code === "ERR_JWKS_NO_MATCHING_KEY");
  const ownKeys = createLocalJWKSet(await publicJwks(h.deps, { id: await tenantIdOf(h) }));
  const asOther = { issuer: `https://${OTHER_DOMAIN}`, audience: OTHER_DOMAIN, typ: SESSION_TOKEN_TYPE, currentDate: new Date(h.clock.now()) };
  await assert.rejects(jwtVerify(token, ownKeys, asOther), (err: Error & { code?: string }) => err.code === "ERR_JWT_CLAIM_VALIDATION_FAILED");
  await assert.rejects(
    jwtVerify(token, ownKeys, { currentDate: new Date(h.clock.now()), typ: "at+jwt" }),
    (err: Error & { code?: string }) => err.code === "ERR_JWT_CLAIM_VALIDATION_FAILED",
    "a verifier of access tokens (RFC 9068 typ) refuses it",
  );
});

test("after a key rotation an old token still verifies, and a new one is signed by the new key", async (t) => {
  const { h, cookie } = await signedIn(t);
  const tenant = { id: await tenantIdOf(h) };
  const before = await tokenOf(h, cookie);
  const oldKid = decodeProtectedHeader(before.token).kid;
  const { current } = await rotateSigningKeys(h.deps, tenant);
  const newKid = current.find((k) => k.alg === "ES256")!.kid;
  assert.notEqual(newKid, oldKid);
  h.clock.advance(4 * MINUTE);
  await verifyAsBackend(h, before.token);
  const after = await tokenOf(h, cookie);
  assert.equal(decodeProtectedHeader(after.token).kid, newKid);
  await verifyAsBackend(h, after.token);
  h.clock.advance(MINUTE + SECOND);
  await assert.rejects(verifyAsBackend(h, before.token), (err: Error & { code?: string }) => err.code === "ERR_JWT_EXPIRED", "expired after 5 minutes");
});

test("the token never outlives its session: exp is the session's expiry when that comes first", async (t) => {
  const { h, cookie } = await signedIn(t, { sessionTier: "15m" });
  const sessionExp = ok<{ exp: number }>(await get(h, "/auth/session", { cookie })).exp;
  h.clock.advance(12 * MINUTE + 500);
  const { token, expiresAt } = await tokenOf(h, cookie);
  const payload = await verifyAsBackend(h, token);
  assert.equal(payload.exp, sessionExp);
  assert.equal(expiresAt, new Date(sessionExp * 1000).toISOString());
  h.clock.advance(3 * MINUTE);
  await assert.rejects(verifyAsBackend(h, token), (err: Error & { code?: string }) => err.code === "ERR_JWT_EXPIRED");
  assertError(await requestToken(h, cookie), 401, "unauthorized");
});

test("a locked member, or a session ended by logout, gets no token", async (t) => {
  const { h, recordId, cookie } = await signedIn(t);
  const second = await loginCookie(h, EMAIL, undefined, { ip: nextIp() });
  ok(await post(h, "/auth/logout", undefined, { cookie: second }));
  assertError(await requestToken(h, second), 401, "unauthorized");
  ok(await requestToken(h, cookie));
  await lockMember(h, recordId);
  assertError(await requestToken(h, cookie), 401, "unauthorized");
});

test("decisions.md#session-tokens: Password Change Pending gets 403 password_change_required; a member who must set up the tenant's required 2FA gets 409 invalid_state", async (t) => {
  const { h, recordId, cookie } = await signedIn(t);
  await storeTenantSettings(h, { require2FA: true });
  assertError(await requestToken(h, cookie), 409, "invalid_state");
  await storeTenantSettings(h, { require2FA: false });
  ok(await requestToken(h, cookie));

  ok(await post(h, "/auth/admin/require-password-change", { recordId }, { headers: adminHeaders(h) }));
  const link = await magicLinkFor(h, EMAIL);
  const byLink = await post(h, `/auth/verify-magic-link/${link.recordId}/${link.token}`, { "bot-challenge-response": "x" }, { ip: nextIp() });
  const pending = sessionCookieOf(byLink)!;
  assert.equal(ok<{ passwordChangePending: boolean }>(await get(h, "/auth/session", { cookie: pending })).passwordChangePending, true);
  assertError(await requestToken(h, pending), 403, "password_change_required");
});

test("under require2FA a passkey session gets a token (a passkey is both factors, contract.md#d26) with amr hwk, mfa", async (t) => {
  const { h, cookie } = await signedIn(t);
  const auth = new SoftAuthenticator();
  const origin = `https://${h.tenant.domain}`;
  const creation = ok<Parameters<SoftAuthenticator["createCredential"]>[0]>(
    await post(h, "/auth/passkeys/register/options", { password: STRONG_PASSWORD }, { cookie }),
  );
  ok(await post(h, "/auth/passkeys/register/verify", { response: auth.createCredential(creation, origin) }, { cookie }));
  await storeTenantSettings(h, { require2FA: true });
  const request = ok<Parameters<SoftAuthenticator["getAssertion"]>[0]>(
    await post(h, "/auth/passkeys/login/options", { "bot-challenge-response": "x" }, { ip: nextIp() }),
  );
  const byPasskey = sessionCookieOf(await post(h, "/auth/passkeys/login/verify", { response: auth.getAssertion(request, origin) }, { ip: nextIp() }))!;
  assert.deepEqual((await verifyAsBackend(h, (await tokenOf(h, byPasskey)).token)).amr, ["hwk", "mfa"]);
  assertError(await requestToken(h, cookie), 409, "invalid_state");
});

test(`a tenant's first session tokens and JWKS reads at once make its signing keys once, one per algorithm (${TEST_STORE})`, async (t) => {
  const { h, cookie } = await signedIn(t);
  const inserts = installStoreSeam(h).count("signingKeys.insertCurrentKey");
  const tenant = { id: await tenantIdOf(h, h.tenant.domain) };
  const [answers, jwksReads] = await Promise.all([
    Promise.all(Array.from({ length: 10 }, () => tokenOf(h, cookie))),
    Promise.all(Array.from({ length: 10 }, () => publicJwks(h.deps, tenant))),
  ]);
  assert.equal(new Set(answers.map((a) => decodeProtectedHeader(a.token).kid)).size, 1, "every token signed with the one current key");
  assert.equal(new Set(jwksReads.map((jwks) => jwks.keys.length)).size, 1, "every JWKS read saw the same keys");
  assert.equal(inserts.calls, 2, "one ES256 and one RS256 key generated and stored, not one pair per request");
});
