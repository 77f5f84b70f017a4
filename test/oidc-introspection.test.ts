/**
 * decisions.md#openid-provider-access-tokens: introspection (RFC 7662) of the tenant's JWT access tokens,
 * driven by openid-client's tokenIntrospection, answers as userinfo judges the token: active with the RFC
 * 7662 fields while its grant and Latch session live, `active: false` once the session ended, the member
 * was locked, or the token was not the tenant's; confidential clients only. SQLite and PostgreSQL
 * (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeJwt } from "jose";
import * as client from "openid-client";
import { addOtherTenant, lockMember, loginCookie, OTHER_DOMAIN, tenantIdOf } from "./support/flows.js";
import { TEST_STORE } from "./support/harness.js";
import { discover, injectFetch } from "./support/oidc-rp.js";
import { EMAIL, insertClient, PARTNER, setUpProvider, signIn, SPA, WEB } from "./support/oidc-setup.js";

test(`a confidential client introspects a JWT access token: active, with the RFC 7662 fields (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  const claims = decodeJwt(tokens.access_token);
  const answer = await client.tokenIntrospection(config, tokens.access_token);
  assert.deepEqual(answer, {
    active: true,
    sub: s.recordId,
    client_id: WEB.id,
    scope: claims.scope,
    token_type: "Bearer",
    iss: `https://${s.h.tenant.domain}`,
    aud: `https://${s.h.tenant.domain}`,
    iat: claims.iat,
    exp: claims.exp,
    jti: claims.jti,
  });
  assert.equal(answer.scope, "openid email profile");
  const hinted = await client.tokenIntrospection(config, tokens.access_token, { token_type_hint: "access_token" });
  assert.equal(hinted.active, true, "with token_type_hint too");
  // Another confidential client of the tenant (a resource server) is answered as for opaque tokens.
  const partner = await discover(s.h, PARTNER.id, PARTNER.secret);
  assert.equal((await client.tokenIntrospection(partner, tokens.access_token)).active, true);
  // The refresh token is still the library's own answer.
  assert.equal((await client.tokenIntrospection(config, tokens.refresh_token!)).active, true);
});

test(`a public client learns nothing of a JWT access token, not even its own (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const spa = await discover(s.h, SPA.id);
  const { tokens } = await signIn(s, spa, SPA.redirect);
  assert.deepEqual(await client.tokenIntrospection(spa, tokens.access_token), { active: false });
});

test(`introspection says active: false once the Latch session ended, or the member was locked (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const first = await signIn(s, config, WEB.redirect);
  const logout = await s.h.app.inject({ method: "POST", url: "/auth/logout", headers: { host: s.h.tenant.domain, cookie: `session_id=${s.cookie}` } });
  assert.equal(logout.statusCode, 200, logout.body);
  assert.deepEqual(await client.tokenIntrospection(config, first.tokens.access_token), { active: false }, "the session ended");
  await assert.rejects(client.fetchUserInfo(config, first.tokens.access_token, s.recordId), "as userinfo refuses it");

  const cookie = await loginCookie(s.h, EMAIL);
  const second = await signIn({ ...s, cookie }, config, WEB.redirect);
  assert.equal((await client.tokenIntrospection(config, second.tokens.access_token)).active, true);
  await lockMember(s.h, s.recordId);
  assert.deepEqual(await client.tokenIntrospection(config, second.tokens.access_token), { active: false }, "the member is locked");
});

test(`a forged, unsigned or other tenant's JWT is active: false, never an error (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);

  const [header, payload] = tokens.access_token.split(".");
  const tampered = `${header}.${Buffer.from(JSON.stringify({ ...decodeJwt(tokens.access_token), sub: "1" })).toString("base64url")}.${tokens.access_token.split(".")[2]}`;
  const unsigned = `${Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url")}.${payload}.`;
  for (const token of [tampered, unsigned, "eyJhbGciOiJFUzI1NiJ9.e30.AAAA"]) {
    assert.deepEqual(await client.tokenIntrospection(config, token), { active: false });
  }

  // The same client id registered at another tenant, with a token of that tenant, asks this one.
  await addOtherTenant(s.h);
  await insertClient(s.h, await tenantIdOf(s.h, OTHER_DOMAIN), WEB);
  const other = await client.discovery(new URL(`https://${OTHER_DOMAIN}`), WEB.id, WEB.secret, client.ClientSecretBasic(WEB.secret), {
    [client.customFetch]: injectFetch(s.h),
  });
  assert.equal((await client.tokenIntrospection(other, tokens.access_token)).active, false, "another tenant's issuer does not know it");
});
