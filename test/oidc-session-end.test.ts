/**
 * contract.md#d28, decisions.md#openid-provider-storage: ending a Latch session revokes the refresh
 * tokens (and access tokens) the provider issued under it, whatever ends it: a password change
 * elsewhere, "this wasn't me", erasure. (Logout and lock: test/oidc-provider.test.ts.) On SQLite and
 * PostgreSQL: revocation is the store's cascade, so every instance sees it at once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as client from "openid-client";
import { call, sendAlertsAndEvents } from "./support/account.js";
import { changePassword, lastWebhookFor, loginCookie } from "./support/flows.js";
import { deliverWebhooks, parseLink, post, STRONG_PASSWORD, TEST_STORE } from "./support/harness.js";
import { EMAIL, isInvalidGrant, setUpProvider, signedInBrowser, signIn, WEB } from "./support/oidc-setup.js";
import { discover } from "./support/oidc-rp.js";

const NEW_PASSWORD = "Brand-New-Pass-2026-x";

/** The app's tokens still work: a refresh (rotating) and userinfo. Returns the new refresh token. */
async function assertAlive(config: client.Configuration, tokens: client.TokenEndpointResponse, recordId: string): Promise<void> {
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  assert.ok(refreshed.access_token);
  assert.equal((await client.fetchUserInfo(config, refreshed.access_token, recordId)).sub, recordId);
}

async function assertRevoked(config: client.Configuration, tokens: client.TokenEndpointResponse, recordId: string): Promise<void> {
  await assert.rejects(client.refreshTokenGrant(config, tokens.refresh_token!), isInvalidGrant);
  await assert.rejects(client.fetchUserInfo(config, tokens.access_token, recordId));
}

test(`a password change ends the other sessions and what they authorized; the changing session's tokens live on (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const elsewhere = await signIn(s, config, WEB.redirect);
  const here = await loginCookie(s.h, EMAIL);
  const kept = await signIn(s, config, WEB.redirect, signedInBrowser(s, here));
  assert.equal((await changePassword(s.h, here, STRONG_PASSWORD, NEW_PASSWORD)).statusCode, 200);
  await assertRevoked(config, elsewhere.tokens, s.recordId);
  await assertAlive(config, kept.tokens, s.recordId);
});

test(`"this wasn't me" revokes every token the provider issued to the member (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  await sendAlertsAndEvents(s.h);
  const config = await discover(s.h, WEB.id, WEB.secret);
  // The password change (which sends the alert) keeps its own session, live until the link is used (first test).
  const other = await loginCookie(s.h, EMAIL);
  assert.equal((await changePassword(s.h, other, STRONG_PASSWORD, NEW_PASSWORD)).statusCode, 200);
  const second = await signIn(s, config, WEB.redirect, signedInBrowser(s, other));
  await deliverWebhooks(s.h);
  const link = parseLink(lastWebhookFor(s.h, "security_alert", EMAIL).body.secureAccountLink!);
  assert.equal((await post(s.h, "/auth/secure-account", { recordId: link.recordId, token: link.token })).statusCode, 200);
  await assertRevoked(config, second.tokens, s.recordId);
});

test(`erasing the account revokes what the provider issued, and a later sign-up with the address gets none of it (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  assert.equal((await call(s.h, "POST", "/auth/delete-account", s.cookie, { password: STRONG_PASSWORD })).statusCode, 200);
  await assertRevoked(config, tokens, s.recordId);
  const grants = await s.h.db.selectFrom("oauth_grants").select("id_hash").where("tenant_id", "=", s.tenantId).execute();
  assert.deepEqual(grants, [], "no grant row outlives the member");
});
