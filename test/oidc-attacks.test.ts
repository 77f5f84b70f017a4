/**
 * contract.md#d28, docs/security.md (OpenID Provider): attacks on the tenant's OpenID Provider that
 * the main suite (test/oidc-provider.test.ts) does not drive, each with the defence that refuses it.
 * openid-client is the relying party; the browser is test/support/oidc-rp.ts's.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { sha256Hex } from "../src/security/hashing.js";
import { loginCookie, tenantIdOf } from "./support/flows.js";
import { createHarness, registerVerifiedMember, TEST_STORE, type Harness } from "./support/harness.js";

const EMAIL = "ada@example.org";
const WEB = { id: "web-app", secret: "web-app-secret-0123456789abcdef0123456789", redirect: "https://app.example.net/callback" };

async function setUp(t: { after(fn: () => Promise<void>): void }): Promise<{ h: Harness; cookie: string; recordId: string }> {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const cookie = await loginCookie(h, EMAIL);
  const tenantId = await tenantIdOf(h, h.tenant.domain);
  await h.deps.store.oauthClients.insertClient(tenantId, {
    clientId: WEB.id,
    name: "The web application",
    type: "confidential",
    firstParty: true,
    redirectUris: [WEB.redirect],
    postLogoutRedirectUris: ["https://app.example.net/bye"],
    secretHash: sha256Hex(WEB.secret),
    createdAt: h.clock.now(),
    updatedAt: h.clock.now(),
  });
  return { h, cookie, recordId };
}

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
