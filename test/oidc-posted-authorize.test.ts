/**
 * decisions.md#openid-provider: an authorization request sent by POST (OpenID Connect Core 3.1.2.1)
 * is treated as the same request by GET, so a first-party client asking for offline_access gets a
 * refresh token either way. SQLite and PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as client from "openid-client";
import { hashClientSecret } from "../src/security/client-secrets.js";
import { sha256Hex } from "../src/security/hashing.js";
import { loginCookie, tenantIdOf } from "./support/flows.js";
import { createHarness, registerVerifiedMember, TEST_STORE } from "./support/harness.js";
import { Browser, discover } from "./support/oidc-rp.js";

const WEB = { id: "posting-app", secret: "posting-app-secret-0123456789abcdef0123456789", redirect: "https://app.example.net/callback" };

test(`a POSTed authorization request with offline_access gets a refresh token, as a GET one does (${TEST_STORE})`, async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "poster@example.org");
  const cookie = await loginCookie(h, "poster@example.org");
  await h.db
    .updateTable("sessions")
    .set({ amr: JSON.stringify(["pwd"]) })
    .where("id_hash", "=", sha256Hex(cookie))
    .execute();
  const tenantId = await tenantIdOf(h, h.tenant.domain);
  await h.deps.store.oauthClients.insertClient(tenantId, {
    clientId: WEB.id,
    name: "The posting app",
    type: "confidential",
    firstParty: true,
    redirectUris: [WEB.redirect],
    postLogoutRedirectUris: [],
    secretHash: hashClientSecret(WEB.secret),
    createdAt: h.clock.now(),
    updatedAt: h.clock.now(),
  });
  const config = await discover(h, WEB.id, WEB.secret);

  for (const method of ["GET", "POST"] as const) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: WEB.redirect,
      scope: "openid email offline_access",
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    const browser = new Browser(h);
    browser.cookies.set("session_id", cookie);
    const start = method === "GET" ? url : new URL(`${url.origin}${url.pathname}`);
    const first = method === "GET" ? {} : { method: "POST" as const, form: Object.fromEntries(url.searchParams) };
    const { url: callback, answer } = await browser.follow(start, (u) => u.href.startsWith(WEB.redirect), first);
    assert.equal(answer, undefined, `${method}: reached the callback (stopped at ${callback.pathname}: ${answer?.statusCode} ${answer?.body.slice(0, 300)})`);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    assert.ok(tokens.refresh_token, `${method}: a refresh token for offline_access`);
    assert.ok((await client.refreshTokenGrant(config, tokens.refresh_token)).access_token, `${method}: the refresh token works`);
  }
});
