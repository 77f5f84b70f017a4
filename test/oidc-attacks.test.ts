/**
 * contract.md#d28, docs/security.md (OpenID Provider): attacks on the tenant's OpenID Provider that
 * the main suite (test/oidc-provider.test.ts) does not drive, each with the defence that refuses it.
 * openid-client is the relying party; the browser is test/support/oidc-rp.ts's.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as client from "openid-client";
import { lockMember, loginCookie } from "./support/flows.js";
import { STRONG_PASSWORD, TEST_STORE, type Harness } from "./support/harness.js";
import { Browser, discover } from "./support/oidc-rp.js";
import { authorizationUrl, EMAIL, PARTNER, setUpProvider, WEB } from "./support/oidc-setup.js";

const setUp = setUpProvider;

/** An authorization request of the web app (scope `openid` unless `extra` says). */
function start(config: client.Configuration, extra: Record<string, string> = {}) {
  const { scope = "openid", ...rest } = extra;
  return authorizationUrl(config, WEB.redirect, scope, rest);
}

test(`prompt=login: a signed-in member signs in again before the code is issued (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const browser = new Browser(s.h);
  browser.cookies.set("session_id", s.cookie);
  s.h.clock.advance(5_000);
  const started = await start(config, { prompt: "login" });
  const atLogin = await browser.follow(started.url, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(atLogin.url.pathname, "/ui/login", "prompt=login is not answered with the existing session");
  // Going back to the interaction with the old session does not skip the sign-in.
  const returnTo = atLogin.url.searchParams.get("returnTo")!;
  const back = await browser.follow(new URL(returnTo, atLogin.url), (u) => u.href.startsWith(WEB.redirect));
  assert.equal(back.url.pathname, "/ui/login", "the old session still does not do");
  s.h.clock.advance(5_000);
  const done = await browser.follow(atLogin.url, (u) => u.href.startsWith(WEB.redirect), { method: "POST", form: { email: EMAIL, password: STRONG_PASSWORD } });
  assert.equal(done.answer, undefined, `back at the client (stopped at ${done.url.pathname})`);
  const tokens = await client.authorizationCodeGrant(config, done.url, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  assert.equal(tokens.claims()!.auth_time, Math.floor(s.h.clock.now() / 1000), "auth_time is the new sign-in's");
});

test(`the provider's own HTML pages (logout confirmation, error page) cannot be framed (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const host = s.h.tenant.domain;
  for (const url of ["/oauth/end-session", "/oauth/authorize?client_id=nobody&response_type=code&scope=openid"]) {
    const answer = await s.h.app.inject({ method: "GET", url, headers: { host, cookie: `session_id=${s.cookie}` } });
    assert.match(String(answer.headers["content-type"]), /html/, url);
    assert.equal(answer.headers["x-frame-options"], "DENY", url);
    assert.match(String(answer.headers["content-security-policy"]), /frame-ancestors 'none'/, url);
  }
});

test(`max_age=0 (a new sign-in, as prompt=login): the member who signed in again is let through, not sent back to the login page for ever (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const browser = new Browser(s.h);
  browser.cookies.set("session_id", s.cookie);
  s.h.clock.advance(5_000);
  const started = await start(config, { max_age: "0" });
  const atLogin = await browser.follow(started.url, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(atLogin.url.pathname, "/ui/login");
  const posted = await browser.request(atLogin.url, { method: "POST", form: { email: EMAIL, password: STRONG_PASSWORD } });
  const next = posted.headers.location ?? /url=(.*)$/i.exec(String(posted.headers.refresh))?.[1];
  assert.ok(typeof next === "string", `the login moves on (${posted.statusCode})`);
  // The browser takes a moment to come back: the new session is then older than 0 seconds.
  s.h.clock.advance(1_000);
  const done = await browser.follow(new URL(next, atLogin.url), (u) => u.href.startsWith(WEB.redirect));
  assert.equal(done.answer, undefined, `back at the client (stopped at ${done.url.pathname})`);
  const tokens = await client.authorizationCodeGrant(config, done.url, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  assert.equal(tokens.claims()!.auth_time, Math.floor((s.h.clock.now() - 1_000) / 1000), "auth_time is the new sign-in's");
});

async function codeFor(s: { h: Harness; cookie: string }, config: client.Configuration, scope = "openid offline_access") {
  const browser = new Browser(s.h);
  browser.cookies.set("session_id", s.cookie);
  const started = await start(config, { scope });
  const done = await browser.follow(started.url, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(done.answer, undefined, `reached the callback (stopped at ${done.url.pathname})`);
  return { callback: done.url, started };
}

test(`two refreshes with the same token at once: at most one wins, and the family is revoked (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { callback, started } = await codeFor(s, config);
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  const outcomes = await Promise.allSettled([client.refreshTokenGrant(config, tokens.refresh_token!), client.refreshTokenGrant(config, tokens.refresh_token!)]);
  const won = outcomes.filter((o) => o.status === "fulfilled");
  assert.ok(won.length <= 1, "never two winners");
  for (const o of won) await assert.rejects(client.refreshTokenGrant(config, o.value.refresh_token!), "the winner's token died with the family");
});

test(`a code whose Latch session ended, or whose member was locked, after the interaction yields no tokens (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const first = await codeFor(s, config);
  const logout = await s.h.app.inject({ method: "POST", url: "/auth/logout", headers: { host: s.h.tenant.domain, cookie: `session_id=${s.cookie}` } });
  assert.equal(logout.statusCode, 200);
  await assert.rejects(
    client.authorizationCodeGrant(config, first.callback, {
      pkceCodeVerifier: first.started.verifier,
      expectedState: first.started.state,
      expectedNonce: first.started.nonce,
    }),
    (error: { error?: string }) => error.error === "invalid_grant",
  );
  s.cookie = await loginCookie(s.h, EMAIL);
  const second = await codeFor(s, config);
  await lockMember(s.h, s.recordId);
  await assert.rejects(
    client.authorizationCodeGrant(config, second.callback, {
      pkceCodeVerifier: second.started.verifier,
      expectedState: second.started.state,
      expectedNonce: second.started.nonce,
    }),
    (error: { error?: string }) => error.error === "invalid_grant",
  );
});

test(`a browser app's CORS preflight to userinfo, token and revocation reaches the library (the app is not cut off from userinfo) (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  for (const url of ["/oauth/userinfo", "/oauth/token", "/oauth/revoke"]) {
    const preflight = await s.h.app.inject({
      method: "OPTIONS",
      url,
      headers: {
        host: s.h.tenant.domain,
        origin: "http://127.0.0.1:5173",
        "access-control-request-method": url === "/oauth/userinfo" ? "GET" : "POST",
        "access-control-request-headers": "authorization",
      },
    });
    assert.ok(preflight.statusCode < 300, `${url}: ${preflight.statusCode} ${preflight.body}`);
    assert.ok(preflight.headers["access-control-allow-methods"], url);
  }
});

test(`no code, refresh token, access token, ID token or client secret reaches a log line, even on the error paths (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { callback, started } = await codeFor(s, config);
  const code = callback.searchParams.get("code")!;
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  const rotated = await client.refreshTokenGrant(config, tokens.refresh_token!);
  await client.fetchUserInfo(config, rotated.access_token, tokens.claims()!.sub);
  // The error paths: a replayed code and refresh token, a wrong secret, the ID token in a logout URL.
  await assert.rejects(client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: started.verifier, expectedState: started.state }));
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!));
  const wrong = await discover(s.h, WEB.id, `${WEB.secret}x`);
  await assert.rejects(client.refreshTokenGrant(wrong, rotated.refresh_token!));
  await new Browser(s.h).request(client.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! }));
  const logs = s.h.logs.join("");
  assert.match(logs, /oauth\/end-session\?id_token_hint=/, "the requests are logged, with their URLs");
  const secrets = {
    code,
    refresh: tokens.refresh_token!,
    rotated: rotated.refresh_token!,
    access: tokens.access_token,
    id: tokens.id_token!,
    secret: WEB.secret,
  };
  for (const [name, value] of Object.entries(secrets)) assert.ok(!logs.includes(value), `${name} is in a log line`);
  // A JWT's parts are not logged either (the signature alone is a third of the token).
  for (const part of tokens.id_token!.split(".").slice(1)) assert.ok(!logs.includes(part), "a part of the ID token is in a log line");
});

test(`PKCE downgrade (RFC 9700 §4.8.2): a code issued without a challenge is refused with a code_verifier, and one with a challenge without it (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const browser = new Browser(s.h);
  browser.cookies.set("session_id", s.cookie);
  const state = client.randomState();
  const plain = client.buildAuthorizationUrl(config, { redirect_uri: WEB.redirect, scope: "openid", state });
  const done = await browser.follow(plain, (u) => u.href.startsWith(WEB.redirect));
  assert.equal(done.answer, undefined);
  await assert.rejects(
    client.authorizationCodeGrant(config, done.url, { pkceCodeVerifier: client.randomPKCECodeVerifier(), expectedState: state }),
    (error: { error?: string }) => error.error === "invalid_grant",
  );
  const withChallenge = await codeFor(s, config, "openid");
  await assert.rejects(
    client.authorizationCodeGrant(config, withChallenge.callback, { expectedState: withChallenge.started.state, expectedNonce: withChallenge.started.nonce }),
    (error: { error?: string }) => error.error === "invalid_grant",
  );
});

test(`consent of a third-party app covers what the member allowed: more scopes ask again, and prompt=none does not take them (${TEST_STORE})`, async (t) => {
  const s = await setUp(t);
  const config = await discover(s.h, PARTNER.id, PARTNER.secret);
  const browser = new Browser(s.h);
  browser.cookies.set("session_id", s.cookie);
  const ask = async (scope: string, extra: Record<string, string> = {}) => {
    const url = client.buildAuthorizationUrl(config, { redirect_uri: PARTNER.redirect, scope, state: "st", ...extra });
    return browser.follow(url, (u) => u.href.startsWith(PARTNER.redirect));
  };
  const consent = await ask("openid");
  assert.match(consent.answer!.body, /Allow/);
  const allowed = await browser.follow(consent.url, (u) => u.href.startsWith(PARTNER.redirect), { method: "POST", form: { decision: "allow" } });
  assert.ok(allowed.url.searchParams.get("code"), "a code for openid");
  const silent = await ask("openid", { prompt: "none" });
  assert.ok(silent.url.searchParams.get("code"), "the same scope again needs no consent");
  const more = await ask("openid email");
  assert.equal(more.url.pathname.startsWith("/oauth/interaction/"), true, "email asks again");
  assert.match(more.answer!.body, /email address/);
  const sneaky = await ask("openid email", { prompt: "none" });
  assert.equal(sneaky.url.searchParams.get("code"), null, "prompt=none does not take email");
  assert.equal(sneaky.url.searchParams.get("error"), "consent_required");
});
