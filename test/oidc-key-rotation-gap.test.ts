/**
 * decisions.md#openid-provider-signing-keys: the window between a rotation and the moment a cached
 * provider on another instance sees it (SIGNING_KEY_RECHECK_MS). A provider built before the rotation
 * keeps its old keys for up to that long and may sign with the retired key then; every token it signs
 * in that window must verify against the tenant's JWKS until the token itself expires. SQLite and
 * PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLocalJWKSet, importJWK, jwtVerify, SignJWT, type JWK } from "jose";
import { OidcProviders } from "../src/flows/oidc/provider.js";
import { publicJwks, rotateSigningKeys, signingKeySet } from "../src/flows/oidc/signing-keys.js";
import { MAX_TOKEN_LIFETIME_MS, SIGNING_KEY_RECHECK_MS } from "../src/rules.js";
import { oidcPageHooks } from "../src/ui/pages/consent-page.js";
import { createHarness, TEST_STORE } from "./support/harness.js";

test(`a token a cached provider signs with the retired key just before it sees the rotation verifies until it expires (${TEST_STORE})`, async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const tenant = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!;
  // Another instance's provider, built (and its keys read) before the rotation.
  const registry = new OidcProviders(h.deps, oidcPageHooks);
  const before = await registry.forTenant(tenant);
  const oldKeys = (await signingKeySet(h.deps, tenant)).keys;

  await rotateSigningKeys(h.deps, tenant);
  h.clock.advance(SIGNING_KEY_RECHECK_MS - 1);
  const cached = await registry.forTenant(tenant);
  assert.equal(cached, before, "the cached provider has not rechecked its keys yet");
  assert.equal(cached.kids, before.kids, "so it still signs with the retired key");

  // The last token it can sign with the retired ES256 key, with the longest lifetime a token has.
  const jwk = oldKeys.find((k) => k.alg === "ES256")! as JWK & { kid: string };
  const signedAt = h.clock.now();
  const token = await new SignJWT({ sub: "1" })
    .setProtectedHeader({ alg: "ES256", kid: jwk.kid })
    .setIssuedAt(Math.floor(signedAt / 1000))
    .setExpirationTime(new Date(signedAt + MAX_TOKEN_LIFETIME_MS))
    .sign(await importJWK(jwk, "ES256"));

  h.clock.advance(1);
  assert.notEqual(await registry.forTenant(tenant), before, "past the recheck the provider is rebuilt with the new keys");

  h.clock.set(signedAt + MAX_TOKEN_LIFETIME_MS - 1000);
  const jwks = createLocalJWKSet(await publicJwks(h.deps, tenant));
  const verified = await jwtVerify(token, jwks, { algorithms: ["ES256"], currentDate: new Date(h.clock.now()) }).then(
    () => true,
    () => false,
  );
  assert.ok(verified, "the retired key is still published one second before its last token expires");
});
