/**
 * contract.md#d28, decisions.md#openid-provider: the tenant's OpenID Provider driven by a real
 * relying party (openid-client 6) on SQLite and PostgreSQL (LATCH_TEST_STORE): discovery → authorize
 * (through the hosted login page when there is no session) → code with PKCE → ID token validated with
 * the JWKS → userinfo → refresh with rotation → revocation; and each attack refused by its defence.
 */
import assert from "node:assert/strict";
import { createPublicKey } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, base64url } from "jose";
import * as client from "openid-client";
import type { DevMode } from "../src/dev/dev-mode.js";
import { OidcProviders, SIGNING_KEY_RECHECK_MS } from "../src/flows/oidc/provider.js";
import { publicJwks, rotateSigningKeys } from "../src/flows/oidc/signing-keys.js";
import type { Tenant } from "../src/model.js";
import { oidcPageHooks } from "../src/ui/pages/consent-page.js";
import { sha256Hex } from "../src/security/hashing.js";
import { addOtherTenant, lockMember, loginCookie, OTHER_DOMAIN, tenantIdOf } from "./support/flows.js";
import { createHarness, registerVerifiedMember, STRONG_PASSWORD, TEST_STORE } from "./support/harness.js";
import { Browser, discover, injectFetch } from "./support/oidc-rp.js";
import { authorizationUrl, EMAIL, insertClient, isInvalidGrant, PARTNER, setUpProvider, signedInBrowser, signIn, SPA, WEB } from "./support/oidc-setup.js";

const setUp = setUpProvider;

test(`a first-party app signs a member in, reads userinfo, refreshes with rotation and revokes (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const metadata = config.serverMetadata();
  assert.equal(metadata.issuer, `https://${s.h.tenant.domain}`);
  assert.equal(metadata.jwks_uri, `https://${s.h.tenant.domain}/oauth/jwks`);
  assert.equal(metadata.authorization_endpoint, `https://${s.h.tenant.domain}/oauth/authorize`);
  assert.equal(metadata.end_session_endpoint, `https://${s.h.tenant.domain}/oauth/end-session`);
  assert.deepEqual(metadata.code_challenge_methods_supported, ["S256"]);
  for (const list of [metadata.id_token_signing_alg_values_supported ?? [], metadata.token_endpoint_auth_signing_alg_values_supported ?? []]) {
    for (const alg of list) assert.ok(!alg.startsWith("HS") && alg !== "none", `no ${alg}`);
  }

  const { tokens } = await signIn(s, config, WEB.redirect);
  const claims = tokens.claims()!;
  assert.equal(claims.sub, s.recordId);
  assert.equal(claims.iss, `https://${s.h.tenant.domain}`);
  assert.deepEqual(claims.amr, ["pwd"]);
  assert.equal(typeof claims.auth_time, "number");
  assert.ok(tokens.refresh_token, "first-party: a refresh token for offline_access without prompt=consent");

  // RFC 9068: typ at+jwt, verifies with the published JWKS, aud the tenant's resource.
  const at = tokens.access_token;
  assert.equal(decodeProtectedHeader(at).typ, "at+jwt");
  const jwks = createLocalJWKSet(await publicJwks(s.h.deps, { id: s.tenantId }));
  const { payload } = await jwtVerify(at, jwks, { issuer: `https://${s.h.tenant.domain}`, audience: `https://${s.h.tenant.domain}`, typ: "at+jwt" });
  assert.equal(payload.sub, s.recordId);
  assert.equal(payload.client_id, WEB.id);

  const info = await client.fetchUserInfo(config, at, s.recordId);
  assert.equal(info.email, EMAIL);
  assert.equal(info.email_verified, true);
  assert.equal(info.name, "Ada Lovelace");

  const rotated = await client.refreshTokenGrant(config, tokens.refresh_token);
  assert.ok(rotated.refresh_token && rotated.refresh_token !== tokens.refresh_token, "rotated");
  await client.fetchUserInfo(config, rotated.access_token, s.recordId);

  await client.tokenRevocation(config, rotated.refresh_token);
  await assert.rejects(client.refreshTokenGrant(config, rotated.refresh_token), isInvalidGrant, "a revoked refresh token");
});

test(`without a Latch session, authorize goes to the hosted login page and back; after a Latch logout the provider's session is not reused (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const browser = new Browser(s.h);
  const started = await authorizationUrl(config, WEB.redirect);
  const atLogin = await browser.follow(started.url, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(atLogin.url.pathname, "/ui/login");
  assert.equal(atLogin.answer?.statusCode, 200);
  const returnTo = atLogin.url.searchParams.get("returnTo")!;
  assert.match(returnTo, /^\/oauth\/interaction\/[\w-]+$/);

  const done = await browser.follow(atLogin.url, (u) => u.href.startsWith(WEB.redirect), { method: "POST", form: { email: EMAIL, password: STRONG_PASSWORD } });
  assert.equal(done.answer, undefined, `back at the client (stopped at ${done.url.pathname}: ${done.answer?.body.slice(0, 200)})`);
  const tokens = await client.authorizationCodeGrant(config, done.url, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  assert.equal(tokens.claims()!.sub, s.recordId);

  // The member logs out of Latch: the provider's own session cookie is still in the browser, and must not sign them in.
  const logout = await s.h.app.inject({ method: "POST", url: "/auth/logout", headers: { host: s.h.tenant.domain, cookie: browser.cookieHeader() } });
  assert.equal(logout.statusCode, 200, logout.body);
  browser.cookies.delete("session_id");
  assert.ok(
    [...browser.cookies.keys()].some((name) => name.startsWith("_session")),
    "the provider's session cookie is kept by the browser",
  );
  const again = await authorizationUrl(config, WEB.redirect);
  const second = await browser.follow(again.url, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(second.url.pathname, "/ui/login", "no silent sign-in after a Latch logout");
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), isInvalidGrant, "the logout revoked the refresh token");
  await assert.rejects(client.fetchUserInfo(config, tokens.access_token, s.recordId), "the grant died with the session: userinfo refuses the access token");
});

test(`a third-party app gets the consent page: Deny answers access_denied, Allow a code (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, PARTNER.id, PARTNER.secret);
  const browser = signedInBrowser(s);
  const denied = await authorizationUrl(config, PARTNER.redirect);
  const atConsent = await browser.follow(denied.url, (u) => u.href.startsWith(PARTNER.redirect));
  assert.match(atConsent.url.pathname, /^\/oauth\/interaction\//);
  assert.equal(atConsent.answer?.statusCode, 200);
  const pageHtml = atConsent.answer.body;
  assert.match(pageHtml, /The partner application/);
  assert.match(pageHtml, /See your email address/);
  assert.match(pageHtml, /Stay signed in for you/);
  assert.match(pageHtml, /<button type="submit" name="decision" value="allow">Allow<\/button>/);
  assert.ok(atConsent.answer.headers["content-security-policy"], "a hosted page's headers");

  const refused = await browser.follow(atConsent.url, (u) => u.href.startsWith(PARTNER.redirect), { method: "POST", form: { decision: "deny" } });
  assert.equal(refused.url.searchParams.get("error"), "access_denied");
  assert.equal(refused.url.searchParams.get("code"), null);

  const allowed = await authorizationUrl(config, PARTNER.redirect);
  const again = await browser.follow(allowed.url, (u) => u.href.startsWith(PARTNER.redirect));
  const back = await browser.follow(again.url, (u) => u.href.startsWith(PARTNER.redirect), { method: "POST", form: { decision: "allow" } });
  const tokens = await client.authorizationCodeGrant(config, back.url, {
    pkceCodeVerifier: allowed.verifier,
    expectedState: allowed.state,
    expectedNonce: allowed.nonce,
  });
  assert.equal(tokens.claims()!.sub, s.recordId);
  assert.ok(tokens.refresh_token, "offline_access was on the consent page, and allowed");

  // A form post from another site is refused (the hosted pages' CSRF check).
  const forged = await s.h.app.inject({
    method: "POST",
    url: again.url.pathname,
    headers: { host: s.h.tenant.domain, cookie: browser.cookieHeader(), origin: "https://evil.example", "content-type": "application/x-www-form-urlencoded" },
    payload: "decision=allow",
  });
  assert.equal(forged.statusCode, 403);
});

test(`an unregistered redirect URI is refused without a redirect to it, and a public client must use PKCE S256 (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const web = await discover(s.h, WEB.id, WEB.secret);
  const browser = signedInBrowser(s);
  for (const evil of ["https://evil.example/cb", `${WEB.redirect}/more`, `${WEB.redirect}?x=1`]) {
    const started = await authorizationUrl(web, evil);
    const answer = await browser.request(started.url);
    assert.equal(answer.statusCode, 400, evil);
    assert.equal(answer.headers.location, undefined);
    assert.ok(!answer.body.includes("evil.example/cb?") && !answer.body.includes("code="), "no code anywhere");
  }

  const spa = await discover(s.h, SPA.id);
  const noPkce = client.buildAuthorizationUrl(spa, { redirect_uri: SPA.redirect, scope: "openid", state: "s1" });
  const refused = await browser.follow(noPkce, (u) => u.href.startsWith(SPA.redirect));
  assert.equal(refused.url.searchParams.get("error"), "invalid_request");
  assert.equal(refused.url.searchParams.get("code"), null);
  const plain = client.buildAuthorizationUrl(spa, {
    redirect_uri: SPA.redirect,
    scope: "openid",
    state: "s2",
    code_challenge: "a".repeat(43),
    code_challenge_method: "plain",
  });
  const refusedPlain = await browser.follow(plain, (u) => u.href.startsWith(SPA.redirect));
  assert.equal(refusedPlain.url.searchParams.get("error"), "invalid_request");
  assert.equal(refusedPlain.url.searchParams.get("code"), null);

  // With S256 the public client signs in, and its code needs the verifier.
  const { tokens } = await signIn(s, spa, SPA.redirect, browser);
  assert.equal(tokens.claims()!.sub, s.recordId);
  const started = await authorizationUrl(spa, SPA.redirect);
  const { url } = await browser.follow(started.url, (u) => u.href.startsWith(SPA.redirect));
  await assert.rejects(
    client.authorizationCodeGrant(spa, url, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: started.state, expectedNonce: started.nonce }),
    isInvalidGrant,
    "a wrong verifier",
  );
});

test(`a reused code fails and revokes the first exchange's tokens; a replayed refresh token revokes its family (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens, callback, started } = await signIn(s, config, WEB.redirect);
  await assert.rejects(
    client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce }),
    isInvalidGrant,
    "a code is used once",
  );
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), isInvalidGrant, "the first exchange's refresh token is revoked");
  await assert.rejects(client.fetchUserInfo(config, tokens.access_token, s.recordId), "and its access token no longer reads userinfo");

  const fresh = await signIn(s, config, WEB.redirect);
  const rt1 = fresh.tokens.refresh_token!;
  const rt2 = (await client.refreshTokenGrant(config, rt1)).refresh_token!;
  await assert.rejects(client.refreshTokenGrant(config, rt1), isInvalidGrant, "a replayed refresh token");
  await assert.rejects(client.refreshTokenGrant(config, rt2), isInvalidGrant, "the newest one died with its family");
});

test(`another tenant's client is not found there, and a token of tenant A is refused by tenant B (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  await addOtherTenant(s.h);
  const other = await discover(s.h, WEB.id, WEB.secret, OTHER_DOMAIN);
  assert.equal(other.serverMetadata().issuer, `https://${OTHER_DOMAIN}`);
  const started = await authorizationUrl(other, WEB.redirect);
  const answer = await new Browser(s.h).request(started.url);
  assert.equal(answer.statusCode, 400);
  assert.equal(answer.headers.location, undefined);
  assert.match(answer.body, /invalid_client/);
  await assert.rejects(client.refreshTokenGrant(other, "anything"), (error: { status?: number; cause?: unknown }) => {
    return error.status === 401 && JSON.stringify(error.cause).includes("invalid_client");
  });

  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  const otherUserinfo = await injectFetch(s.h)(`https://${OTHER_DOMAIN}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(otherUserinfo.status, 401);
  assert.match(otherUserinfo.headers.get("www-authenticate") ?? "", /invalid_token/);
});

test(`userinfo refuses a token signed with alg none or HS256 keyed by the public key (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  const userinfo = (token: string) =>
    injectFetch(s.h)(`https://${s.h.tenant.domain}/oauth/userinfo`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
  assert.equal(await userinfo(tokens.access_token), 200, "the real one reads userinfo");
  const [header, body] = tokens.access_token.split(".");
  const claims = JSON.parse(new TextDecoder().decode(base64url.decode(body!))) as Record<string, unknown>;
  const kid = (JSON.parse(new TextDecoder().decode(base64url.decode(header!))) as { kid: string }).kid;

  const none = `${base64url.encode(JSON.stringify({ alg: "none", typ: "at+jwt", kid }))}.${body}.`;
  assert.equal(await userinfo(none), 401, "alg none");

  const jwk = (await publicJwks(s.h.deps, { id: s.tenantId })).keys.find((k) => k.kid === kid)!;
  for (const secret of [JSON.stringify(jwk), createPublicKey({ key: jwk, format: "jwk" }).export({ type: "spki", format: "pem" }).toString()]) {
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid }).sign(new TextEncoder().encode(secret));
    assert.equal(await userinfo(hs), 401, "HS256 keyed by the public key");
  }
});

test(`RP-initiated logout ends the Latch session too; an unregistered post_logout_redirect_uri is refused (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens, browser } = await signIn(s, config, WEB.redirect);
  const idToken = tokens.id_token!;

  const bad = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: "https://evil.example/bye" });
  const refused = await browser.request(bad);
  assert.equal(refused.statusCode, 400);
  assert.equal(refused.headers.location, undefined);

  const url = client.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: "https://app.example.net/bye", state: "st" });
  const confirm = await browser.request(url);
  assert.equal(confirm.statusCode, 200);
  assert.match(confirm.body, /Sign out\?/);
  const action = /<form[^>]*action="([^"]+)"/.exec(confirm.body)![1]!;
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.body)![1]!;
  const out = await browser.request(new URL(action, url), { method: "POST", form: { xsrf, logout: "yes" } });
  assert.equal(out.statusCode, 303);
  assert.equal(out.headers.location, "https://app.example.net/bye?state=st");
  const session = await s.h.app.inject({ method: "GET", url: "/auth/session", headers: { host: s.h.tenant.domain, cookie: `session_id=${s.cookie}` } });
  assert.equal(session.statusCode, 401, "the Latch session ended");
  assert.ok(!browser.cookies.has("session_id"), "and its cookie is cleared");
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), isInvalidGrant);

  // Logout CSRF: a link to /oauth/end-session in a browser whose provider session is not the member's gets the library's
  // self-submitting confirmation; it must not end the Latch session.
  const victim = await loginCookie(s.h, EMAIL);
  const other = new Browser(s.h);
  other.cookies.set("session_id", victim);
  const page = await other.request(new URL(`https://${s.h.tenant.domain}/oauth/end-session`));
  assert.equal(page.statusCode, 200);
  const autoXsrf = /name="xsrf" value="([^"]+)"/.exec(page.body)![1]!;
  const autoOut = await other.request(new URL(`https://${s.h.tenant.domain}/oauth/end-session/confirm`), {
    method: "POST",
    form: { xsrf: autoXsrf, logout: "yes" },
  });
  assert.ok(autoOut.statusCode < 400, autoOut.body);
  const still = await s.h.app.inject({ method: "GET", url: "/auth/session", headers: { host: s.h.tenant.domain, cookie: `session_id=${victim}` } });
  assert.equal(still.statusCode, 200, "the Latch session lives on");
});

test(`introspection answers confidential clients only (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  const active = await client.tokenIntrospection(config, tokens.refresh_token!);
  assert.equal(active.active, true);
  assert.equal(active.sub, s.recordId);
  const spa = await discover(s.h, SPA.id);
  assert.deepEqual(await client.tokenIntrospection(spa, tokens.refresh_token!), { active: false }, "a public client learns nothing");
});

test(`a confidential client is held to its secret, compared with the stored hash (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const wrong = await discover(s.h, WEB.id, `${WEB.secret}x`);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  await assert.rejects(client.refreshTokenGrant(wrong, tokens.refresh_token!), (error: { status?: number }) => error.status === 401, "a wrong secret");
  // The stored hash itself is no secret: presenting it does not authenticate.
  const hashAsSecret = await discover(s.h, WEB.id, sha256Hex(WEB.secret));
  await assert.rejects(client.refreshTokenGrant(hashAsSecret, tokens.refresh_token!), (error: { status?: number }) => error.status === 401, "the hash");
  // client_secret_post is accepted too, as openid-client's default.
  const post = await client.discovery(new URL(`https://${s.h.tenant.domain}`), WEB.id, WEB.secret, client.ClientSecretPost(WEB.secret), {
    [client.customFetch]: injectFetch(s.h),
  });
  assert.ok((await client.refreshTokenGrant(post, tokens.refresh_token!)).access_token);
});

test(`providers are kept for at most MAX_CACHED_PROVIDERS tenants, and a key rotation reaches a cached one (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const registry = new OidcProviders(s.h.deps, oidcPageHooks, 2);
  const tenants: Tenant[] = [];
  for (const domain of ["a.example.com", "b.example.com", "c.example.com"]) {
    await addOtherTenant(s.h, domain);
    tenants.push((await s.h.deps.store.tenants.findTenantByDomain(domain))!);
  }
  const first = await registry.forTenant(tenants[0]!);
  assert.equal(await registry.forTenant(tenants[0]!), first, "kept");
  await registry.forTenant(tenants[1]!);
  await registry.forTenant(tenants[2]!);
  assert.equal(registry.size, 2, "bounded");
  assert.notEqual(await registry.forTenant(tenants[0]!), first, "the least recently used was dropped, and is built again");

  // A rotation: the cached provider is rebuilt with the new keys once SIGNING_KEY_RECHECK_MS has passed.
  const config = await discover(s.h, WEB.id, WEB.secret);
  const before = await signIn(s, config, WEB.redirect);
  const oldKid = decodeProtectedHeader(before.tokens.id_token!).kid;
  await rotateSigningKeys(s.h.deps, { id: s.tenantId });
  s.h.clock.advance(SIGNING_KEY_RECHECK_MS);
  const after = await signIn(s, config, WEB.redirect);
  const newKid = decodeProtectedHeader(after.tokens.id_token!).kid;
  assert.notEqual(newKid, oldKid, "signed with the new key");
  assert.equal(decodeProtectedHeader(after.tokens.access_token).kid, newKid);
  // openid-client validated the new ID token with the JWKS; the old access token still reads userinfo.
  assert.equal((await client.fetchUserInfo(config, before.tokens.access_token, s.recordId)).sub, s.recordId);
});

test(`the provider's own session is reused only with the same Latch session: tokens follow the session that authorized them (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const browser = signedInBrowser(s);
  const first = await signIn(s, config, WEB.redirect, browser, "openid email");
  // The member signs in again in this browser (a second Latch session; the first still lives), and the app asks again.
  const second = await loginCookie(s.h, EMAIL);
  browser.cookies.set("session_id", second);
  s.h.clock.advance(1000);
  const again = await signIn(s, config, WEB.redirect, browser, "openid email");
  const logout = await s.h.app.inject({ method: "POST", url: "/auth/logout", headers: { host: s.h.tenant.domain, cookie: `session_id=${second}` } });
  assert.equal(logout.statusCode, 200);
  await assert.rejects(client.fetchUserInfo(config, again.tokens.access_token, s.recordId), "authorized under the second session, ended with it");
  assert.equal((await client.fetchUserInfo(config, first.tokens.access_token, s.recordId)).sub, s.recordId, "the first session lives on");
});

test(
  "dev mode's own tenant is an issuer at dev mode's http://localhost:{port}, and signs a member in",
  { skip: TEST_STORE === "postgres" ? "dev mode is SQLite only" : false },
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), "latch-oidc-dev-"));
    const h = await createHarness({ dataDir, domain: "localhost", env: { DEV_MODE: "true", DATABASE_URL: `sqlite:${join(dataDir, "dev.db")}` } });
    t.after(async () => {
      await h.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    (h.deps.dev as DevMode).linkBase = "http://localhost:3000";
    const recordId = await registerVerifiedMember(h, EMAIL);
    const cookie = await loginCookie(h, EMAIL);
    const tenantId = await tenantIdOf(h, "localhost");
    await insertClient(h, tenantId, WEB);
    const config = await client.discovery(new URL("http://localhost:3000"), WEB.id, WEB.secret, client.ClientSecretBasic(WEB.secret), {
      [client.customFetch]: injectFetch(h),
      execute: [client.allowInsecureRequests],
    });
    assert.equal(config.serverMetadata().token_endpoint, "http://localhost:3000/oauth/token");
    const { tokens } = await signIn({ h, recordId, cookie, tenantId }, config, WEB.redirect);
    assert.equal(tokens.claims()!.sub, recordId);
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, recordId)).email, EMAIL);
  },
);

test(`bad input at the provider's endpoints is a 4xx, never a 500 (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const host = s.h.tenant.domain;
  const form = { "content-type": "application/x-www-form-urlencoded" };
  const cases: { method: "GET" | "POST"; url: string; headers?: Record<string, string>; payload?: string }[] = [
    { method: "GET", url: "/oauth/authorize" },
    { method: "GET", url: "/oauth/authorize?client_id=web-app&response_type=token&redirect_uri=https%3A%2F%2Fapp.example.net%2Fcallback" },
    { method: "GET", url: `/oauth/authorize?client_id=${"x".repeat(300)}&response_type=code&scope=openid` },
    { method: "GET", url: "/oauth/authorize?client_id=web-app&client_id=spa&response_type=code" },
    { method: "GET", url: "/oauth/authorize/not-an-interaction" },
    { method: "POST", url: "/oauth/token", headers: form, payload: "grant_type=authorization_code&code=x" },
    { method: "POST", url: "/oauth/token", headers: { "content-type": "application/json" }, payload: "{not json" },
    { method: "POST", url: "/oauth/token", headers: form, payload: "grant_type=client_credentials&client_id=web-app&client_secret=x" },
    { method: "POST", url: "/oauth/token", headers: { ...form, authorization: "Basic %%%" }, payload: "grant_type=refresh_token&refresh_token=x" },
    { method: "GET", url: "/oauth/userinfo", headers: { authorization: "Bearer a.b.c" } },
    { method: "GET", url: "/oauth/userinfo", headers: { authorization: "Bearer" } },
    { method: "POST", url: "/oauth/revoke", headers: form, payload: "token=x" },
    { method: "GET", url: "/oauth/end-session?id_token_hint=not.a.token" },
    { method: "POST", url: "/oauth/end-session/confirm", headers: form, payload: "xsrf=x&logout=yes" },
    { method: "GET", url: "/oauth/interaction/nope" },
    { method: "POST", url: "/oauth/interaction/nope", headers: { ...form, origin: `https://${host}` }, payload: "decision=allow" },
    { method: "GET", url: `/oauth/interaction/${"a".repeat(65)}` },
  ];
  for (const c of cases) {
    const answer = await s.h.app.inject({ method: c.method, url: c.url, headers: { host, ...c.headers }, ...(c.payload ? { payload: c.payload } : {}) });
    // A refusal the client can be told at its registered redirect URI is a 303 with `error` (RFC 6749 §4.1.2.1).
    const refused = answer.statusCode === 303 ? /[#?&]error=/.test(String(answer.headers.location)) : answer.statusCode >= 400 && answer.statusCode < 500;
    assert.ok(refused, `${c.method} ${c.url.slice(0, 80)}: ${answer.statusCode} ${answer.body.slice(0, 200)}`);
  }
  const unknownSite = await s.h.app.inject({ method: "GET", url: "/.well-known/openid-configuration", headers: { host: "nobody.example" } });
  assert.equal(unknownSite.statusCode, 404);
  assert.equal(unknownSite.json<{ code: string }>().code, "unknown_tenant");
});

test(`max_age: a Latch session older than the client allows sends the member to sign in again (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const browser = signedInBrowser(s);
  s.h.clock.advance(60_000);
  const started = await authorizationUrl(config, WEB.redirect, "openid", { max_age: "30" });
  const atLogin = await browser.follow(started.url, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(atLogin.url.pathname, "/ui/login", "a minute-old session is too old for max_age=30");
  const done = await browser.follow(atLogin.url, (u) => u.href.startsWith(WEB.redirect), { method: "POST", form: { email: EMAIL, password: STRONG_PASSWORD } });
  const tokens = await client.authorizationCodeGrant(config, done.url, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  // (openid-client's own maxAge check compares with the real time, and this test's clock is Latch's ManualClock.)
  assert.equal(tokens.claims()!.auth_time, Math.floor(s.h.clock.now() / 1000), "auth_time is the new sign-in's");
});

test(`locking the member revokes what the provider issued: refresh and userinfo are refused (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  await lockMember(s.h, s.recordId);
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), isInvalidGrant);
  await assert.rejects(client.fetchUserInfo(config, tokens.access_token, s.recordId));
});

test(`a client cannot revoke another client's token (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  const partner = await discover(s.h, PARTNER.id, PARTNER.secret);
  await client.tokenRevocation(partner, tokens.refresh_token!).catch(() => undefined);
  assert.ok((await client.refreshTokenGrant(config, tokens.refresh_token!)).access_token, "still valid");
});
