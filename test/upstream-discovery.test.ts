/**
 * decisions.md#federated-sign-in: discovery is cached for its HTTP lifetime (max-age, at most 24 h,
 * none for no-store), per connection version; and every call to a provider goes through the
 * outbound guard, so a provider on an internal address is refused unless private networks are open.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DAY, HOUR } from "../src/core/clock.js";
import { discoveryLifetimeMs, OpenIdUpstream, UpstreamError, type UpstreamSettings } from "../src/providers/upstream.js";
import { createGuardedFetch } from "../src/security/outbound.js";
import { deriveFlowChecks } from "../src/security/flow-checks.js";
import { startUpstreamIdp } from "./support/upstream-idp.js";

test("discovery lives for its max-age, at most 24 hours; no-store and no-cache keep nothing; no header, an hour", () => {
  assert.equal(discoveryLifetimeMs("public, max-age=300"), 300_000);
  assert.equal(discoveryLifetimeMs("max-age=9999999"), DAY);
  assert.equal(discoveryLifetimeMs("no-store"), 0);
  assert.equal(discoveryLifetimeMs("max-age=60, no-cache"), 0);
  assert.equal(discoveryLifetimeMs(null), HOUR);
});

test("a connection's discovery is fetched once while fresh and again when its version changes; an internal provider is refused without private networks", async (t) => {
  const idp = await startUpstreamIdp({ redirectUri: "https://members.example.com/auth/federated/up/callback", tokenEndpointAuthMethod: "client_secret_basic" });
  t.after(() => idp.close());
  const fetched: string[] = [];
  const open = createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 5_000 });
  let now = 0;
  const upstream = new OpenIdUpstream(
    async (url, init) => {
      fetched.push(new URL(url).pathname);
      return open(url, init);
    },
    { allowInsecureRequests: true, timeoutSeconds: 5, now: () => now },
  );
  const settings = (version: number): UpstreamSettings => ({
    cacheKey: `tenant/up/${version}`,
    kind: "oidc",
    issuer: idp.issuer,
    clientId: idp.client.client_id,
    clientSecret: idp.client.client_secret,
    scopes: ["openid", "email"],
  });
  const checks = deriveFlowChecks("a-cookie-value-for-this-test");
  const redirect = "https://members.example.com/auth/federated/up/callback";
  await upstream.authorizationUrl(settings(1), redirect, checks);
  await upstream.authorizationUrl(settings(1), redirect, checks);
  const discoveries = () => fetched.filter((path) => path.endsWith("/.well-known/openid-configuration")).length;
  assert.equal(discoveries(), 1, "the second start reuses the discovery");
  await upstream.authorizationUrl(settings(2), redirect, checks);
  assert.equal(discoveries(), 2, "a changed connection is discovered again");
  now += DAY + 1;
  await upstream.authorizationUrl(settings(2), redirect, checks);
  assert.equal(discoveries(), 3, "an expired discovery is fetched again");

  const guarded = new OpenIdUpstream(createGuardedFetch({ allowPrivateNetworks: false, timeoutMs: 5_000 }), {
    allowInsecureRequests: true,
    timeoutSeconds: 5,
    now: () => now,
  });
  await assert.rejects(
    guarded.authorizationUrl(settings(3), redirect, checks),
    (error: unknown) => error instanceof UpstreamError && error.reason === "provider_unreachable",
  );
});
