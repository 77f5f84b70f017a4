/**
 * decisions.md#openid-provider-clients: a public client whose URIs mix a native app's private-use
 * scheme with https on a loopback host can't be mapped by oidc-provider (application_type native
 * refuses the one, web the other): refused at creation and PATCH with a 400 naming the URI; a native
 * app (private-use scheme, http loopback) is mapped as native and reaches the login. SQLite and
 * PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import * as client from "openid-client";
import { adminRequestHeaders } from "./support/flows.js";
import { createHarness, TEST_STORE, type Harness } from "./support/harness.js";
import { Browser, discover } from "./support/oidc-rp.js";

const PATH = "/auth/admin/oauth-clients";

function call(h: Harness, method: "POST" | "PATCH", url: string, body: object): Promise<LightMyRequestResponse> {
  return h.app.inject({ method, url, payload: body as Record<string, unknown>, remoteAddress: "198.51.100.7", headers: adminRequestHeaders(h, {}) });
}

function refusedFields(res: LightMyRequestResponse): string[] {
  assert.equal(res.statusCode, 400, `${res.statusCode} ${res.body}`);
  const body = res.json<{ success: boolean; code: string; details?: { field: string }[] }>();
  assert.equal(body.success, false);
  assert.equal(body.code, "validation_failed");
  return (body.details ?? []).map((d) => d.field);
}

test(`a public client can't list https on a loopback host beside a private-use scheme, at creation or PATCH (${TEST_STORE})`, async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const mixed = { name: "Mixed", type: "public", redirectUris: ["com.example.app:/cb", "https://localhost:8443/cb"] };
  assert.deepEqual(refusedFields(await call(h, "POST", PATH, mixed)), ["redirectUris.1"]);
  assert.deepEqual(
    refusedFields(await call(h, "POST", PATH, { ...mixed, redirectUris: ["com.example.app:/cb"], postLogoutRedirectUris: ["https://127.0.0.1/bye"] })),
    ["postLogoutRedirectUris.0"],
  );

  const native = await call(h, "POST", PATH, { name: "Native", type: "public", redirectUris: ["com.example.app:/cb", "http://127.0.0.1:7777/cb"] });
  assert.equal(native.statusCode, 201, native.body);
  const { clientId } = native.json<{ client: { clientId: string } }>().client;
  assert.deepEqual(refusedFields(await call(h, "PATCH", `${PATH}/${clientId}`, { postLogoutRedirectUris: ["https://localhost/bye"] })), [
    "postLogoutRedirectUris.0",
  ]);
  const web = await call(h, "POST", PATH, { name: "Web", type: "public", redirectUris: ["https://localhost:8443/cb"] });
  assert.equal(web.statusCode, 201, web.body);
  const webId = web.json<{ client: { clientId: string } }>().client.clientId;
  assert.deepEqual(refusedFields(await call(h, "PATCH", `${PATH}/${webId}`, { redirectUris: ["https://localhost:8443/cb", "com.example.app:/cb"] })), [
    "redirectUris.0",
  ]);

  // The native app is mapped as native: its authorization request reaches Latch's login, not the library's error page.
  const config = await discover(h, clientId);
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: "com.example.app:/cb",
    scope: "openid",
    code_challenge: await client.calculatePKCECodeChallenge(client.randomPKCECodeVerifier()),
    code_challenge_method: "S256",
  });
  const { url: stopped } = await new Browser(h).follow(url, (u) => u.pathname === "/ui/login");
  assert.equal(stopped.pathname, "/ui/login");
});
