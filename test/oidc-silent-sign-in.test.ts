/**
 * decisions.md#openid-provider-interaction: an application's silent sign-in (`prompt=none`, OpenID Connect Core
 * §3.1.2.1) in a browser with a live Latch session that never went through this application's authorization, driven
 * by a real relying party (openid-client 6) on SQLite and PostgreSQL (LATCH_TEST_STORE). And the revocation endpoint
 * given a JWT access token (decisions.md#openid-provider-access-tokens).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as client from "openid-client";
import { sha256Hex } from "../src/security/hashing.js";
import { addOtherTenant, lockMember, loginCookie, OTHER_DOMAIN, tenantIdOf } from "./support/flows.js";
import { TEST_STORE } from "./support/harness.js";
import { Browser, discover, injectFetch } from "./support/oidc-rp.js";
import {
  authorizationUrl,
  EMAIL,
  insertClient,
  isInvalidGrant,
  PARTNER,
  setUpProvider,
  signedInBrowser,
  signIn,
  WEB,
  type Setup,
} from "./support/oidc-setup.js";

/** A `prompt=none` request of the client, followed up to its callback: the callback URL and what was started. */
async function silently(config: client.Configuration, browser: Browser, redirect: string, scope = "openid email profile", extra: Record<string, string> = {}) {
  const started = await authorizationUrl(config, redirect, scope, { prompt: "none", ...extra });
  const { url, answer } = await browser.follow(started.url, (u) => u.href.startsWith(redirect));
  assert.equal(answer, undefined, `prompt=none shows no page (stopped at ${url.pathname}: ${answer?.statusCode})`);
  assert.ok(!browser.visited.some((visited) => visited.pathname.startsWith("/ui/") || visited.pathname.startsWith("/oauth/interaction")), "no page visited");
  return { url, started };
}

function exchange(config: client.Configuration, silent: Awaited<ReturnType<typeof silently>>) {
  return client.authorizationCodeGrant(config, silent.url, {
    pkceCodeVerifier: silent.started.verifier,
    expectedState: silent.started.state,
    expectedNonce: silent.started.nonce,
  });
}

async function boundSessionHashes(s: Setup, clientId: string): Promise<(string | null)[]> {
  const rows = await s.h.db
    .selectFrom("oauth_grants")
    .select("session_id_hash")
    .where("tenant_id", "=", s.tenantId)
    .where("client_id", "=", clientId)
    .execute();
  return rows.map((row) => row.session_id_hash);
}

async function countSessions(s: Setup): Promise<number> {
  return (await s.h.db.selectFrom("sessions").select("id_hash").where("tenant_id", "=", s.tenantId).execute()).length;
}

test(`prompt=none: a first-party app gets a code from the live Latch session, bound to it until the Latch logout (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const signedInAt = Math.floor(s.h.clock.now() / 1000);
  s.h.clock.advance(60_000);
  const config = await discover(s.h, WEB.id, WEB.secret);
  // A browser with the Latch session only: no provider session, no earlier authorization of this app.
  const browser = signedInBrowser(s);
  const first = await silently(config, browser, WEB.redirect);
  assert.equal(first.url.searchParams.get("error"), null, `no error (${first.url.searchParams.get("error_description")})`);
  const tokens = await exchange(config, first);
  const claims = tokens.claims()!;
  assert.equal(claims.sub, s.recordId);
  assert.equal(claims.auth_time, signedInAt, "auth_time is the Latch session's sign-in");
  assert.deepEqual(claims.amr, ["pwd"]);
  assert.equal((await client.fetchUserInfo(config, tokens.access_token, s.recordId)).email, EMAIL);
  assert.deepEqual(await boundSessionHashes(s, WEB.id), [sha256Hex(s.cookie)], "one grant, bound to the Latch session");

  // The provider's session now carries it: the next prompt=none is answered as after an interaction.
  const second = await silently(config, browser, WEB.redirect);
  assert.equal((await exchange(config, second)).claims()!.sub, s.recordId);
  // A scope the provider session's grant lacks: standing consent, so a new grant of it, bound to the same Latch session.
  const other = signedInBrowser(s);
  await exchange(config, await silently(config, other, WEB.redirect, "openid"));
  const wider = await silently(config, other, WEB.redirect, "openid email");
  assert.equal(wider.url.searchParams.get("error"), null, `a first-party app is not asked for consent (${wider.url.searchParams.get("error")})`);
  const widerTokens = await exchange(config, wider);
  assert.equal((await client.fetchUserInfo(config, widerTokens.access_token, s.recordId)).email, EMAIL);
  assert.deepEqual(new Set(await boundSessionHashes(s, WEB.id)), new Set([sha256Hex(s.cookie)]), "every grant bound to the Latch session");
  // A max_age the session is young enough for (by both clocks: the library's is the wall clock).
  const young = await silently(config, browser, WEB.redirect, "openid", { max_age: String(10 * 365 * 86400) });
  assert.equal((await exchange(config, young)).claims()!.sub, s.recordId);

  const logout = await s.h.app.inject({ method: "POST", url: "/auth/logout", headers: { host: s.h.tenant.domain, cookie: browser.cookieHeader() } });
  assert.equal(logout.statusCode, 200, logout.body);
  browser.cookies.delete("session_id");
  const after = await silently(config, browser, WEB.redirect);
  assert.equal(after.url.searchParams.get("error"), "login_required", "after the Latch logout");
  assert.equal(after.url.searchParams.get("code"), null);
  await assert.rejects(client.fetchUserInfo(config, tokens.access_token, s.recordId), "the silent grant died with the session");
  // The member signs in to Latch again in this browser: the provider session, bound to the ended one, is signed in anew.
  browser.cookies.set("session_id", await loginCookie(s.h, EMAIL));
  const again = await silently(config, browser, WEB.redirect);
  assert.equal((await exchange(config, again)).claims()!.sub, s.recordId, "a new Latch session signs in silently again");
});

test(`prompt=none: a third-party app gets consent_required, then a code once the member consented, and consent_required for a scope not consented (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, PARTNER.id, PARTNER.secret);
  const browser = signedInBrowser(s);
  const refused = await silently(config, browser, PARTNER.redirect, "openid email");
  assert.equal(refused.url.searchParams.get("error"), "consent_required");
  assert.equal(refused.url.searchParams.get("code"), null);
  assert.deepEqual(await boundSessionHashes(s, PARTNER.id), [], "no grant given without consent");

  // The member consents on the consent page (an interactive authorization), to openid and email.
  const started = await authorizationUrl(config, PARTNER.redirect, "openid email");
  const atConsent = await browser.follow(started.url, (u) => u.href.startsWith(PARTNER.redirect));
  assert.match(atConsent.url.pathname, /^\/oauth\/interaction\//);
  const back = await browser.follow(atConsent.url, (u) => u.href.startsWith(PARTNER.redirect), { method: "POST", form: { decision: "allow" } });
  await client.authorizationCodeGrant(config, back.url, { pkceCodeVerifier: started.verifier, expectedState: started.state, expectedNonce: started.nonce });

  browser.visited.length = 0;
  const covered = await silently(config, browser, PARTNER.redirect, "openid email");
  assert.equal((await exchange(config, covered)).claims()!.sub, s.recordId, "the consent covers openid email");
  const wider = await silently(config, browser, PARTNER.redirect, "openid email profile");
  assert.equal(wider.url.searchParams.get("error"), "consent_required", "profile was never consented");
  assert.equal(wider.url.searchParams.get("code"), null);
});

test(`prompt=none without a live Latch session of the tenant is login_required: none, expired, a locked member's, another tenant's (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const expectLoginRequired = async (browser: Browser, why: string, c = config) => {
    const { url } = await silently(c, browser, WEB.redirect);
    assert.equal(url.searchParams.get("error"), "login_required", why);
    assert.equal(url.searchParams.get("code"), null, why);
  };
  const before = await countSessions(s);
  await expectLoginRequired(new Browser(s.h), "no session");
  assert.equal(await countSessions(s), before, "no Latch session made");

  // Another tenant's provider, with the same client registered there, and this tenant's session cookie.
  await addOtherTenant(s.h);
  await insertClient(s.h, await tenantIdOf(s.h, OTHER_DOMAIN), WEB);
  await expectLoginRequired(signedInBrowser(s), "another tenant's session", await discover(s.h, WEB.id, WEB.secret, OTHER_DOMAIN));

  await lockMember(s.h, s.recordId);
  const sessionsLeft = await countSessions(s);
  await expectLoginRequired(signedInBrowser(s), "a locked member's session");
  assert.deepEqual(await boundSessionHashes(s, WEB.id), [], "no grant made");
  assert.equal(await countSessions(s), sessionsLeft, "no Latch session made");
});

test(`prompt=none with a session expired, or older than max_age by Latch's clock, is login_required (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  // Latch's clock at the wall clock's, so the library's own max_age check (by the wall clock) finds the session young.
  s.h.clock.set(Date.now());
  const cookie = await loginCookie(s.h, EMAIL);
  s.h.clock.advance(2 * 3600_000);
  const { url } = await silently(config, signedInBrowser(s, cookie), WEB.redirect, "openid", { max_age: "3600" });
  assert.equal(url.searchParams.get("error"), "login_required", "signed in two hours ago, max_age one hour");
  assert.equal(url.searchParams.get("code"), null);

  s.h.clock.advance(2 * 86400_000);
  const expired = await silently(config, signedInBrowser(s, cookie), WEB.redirect);
  assert.equal(expired.url.searchParams.get("error"), "login_required", "an expired session");
});

test(`revoking a JWT access token is unsupported_token_type and changes nothing; revoking the refresh token ends both (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  const revoke = (token: string) =>
    injectFetch(s.h)(`https://${s.h.tenant.domain}/oauth/revoke`, {
      method: "POST",
      headers: { authorization: `Basic ${Buffer.from(`${WEB.id}:${WEB.secret}`).toString("base64")}`, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token }).toString(),
    });
  const accessRevoked = await revoke(tokens.access_token);
  assert.equal(accessRevoked.status, 400);
  assert.equal(((await accessRevoked.json()) as { error?: string }).error, "unsupported_token_type", "RFC 7009 §2.2.1");
  assert.equal((await client.fetchUserInfo(config, tokens.access_token, s.recordId)).sub, s.recordId, "not stored, so not revoked: it lives until it expires");

  const refreshRevoked = await revoke(tokens.refresh_token!);
  assert.equal(refreshRevoked.status, 200);
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), isInvalidGrant, "a revoked refresh token");
  await assert.rejects(client.fetchUserInfo(config, tokens.access_token, s.recordId), "its grant went with it, so userinfo refuses the access token");
});
