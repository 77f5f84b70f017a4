/**
 * contract.md#d28 in a real headless Chromium: an app on another origin (a loopback server using
 * openid-client) signs a member of dev mode's tenant in through Latch's OpenID Provider and its
 * hosted login page, then a third-party app through the consent page; both registered by the admin API. Every page passes axe-core;
 * screenshots go to test-artifacts/e2e/hosted-oidc/.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { test } from "node:test";
import * as client from "openid-client";
import { listenOnLoopback } from "../support/local-servers.js";
import { E2E_PASSWORD, verifiedDevMember } from "./support/dev-api.js";
import { solveAltchaWidget } from "./support/altcha.js";
import { heading, step } from "./support/journey.js";
import { useE2eSuite } from "./support/suite.js";

const suite = useE2eSuite("hosted-oidc");
const FLOW_TIMEOUT = { timeout: 180_000 };

interface App {
  origin: string;
  close(): void;
}

/** A relying party on its own origin, registered by the admin API: /login starts the code flow, /callback exchanges the code and shows who signed in. */
async function startApp(name: string, firstParty: boolean): Promise<App> {
  let config: client.Configuration | undefined;
  let clientId = "";
  let secret = "";
  const pending = new Map<string, string>();
  let origin = "";
  const server: Server = createServer((req, res) => {
    void (async () => {
      config ??= await client.discovery(new URL(suite.server.baseURL), clientId, secret, client.ClientSecretBasic(secret), {
        execute: [client.allowInsecureRequests],
      });
      const url = new URL(req.url ?? "/", origin);
      if (url.pathname === "/login") {
        const verifier = client.randomPKCECodeVerifier();
        const state = client.randomState();
        pending.set(state, verifier);
        const to = client.buildAuthorizationUrl(config, {
          redirect_uri: `${origin}/callback`,
          scope: "openid email profile offline_access",
          code_challenge: await client.calculatePKCECodeChallenge(verifier),
          code_challenge_method: "S256",
          state,
        });
        res.writeHead(303, { location: to.href }).end();
        return;
      }
      const state = url.searchParams.get("state") ?? "";
      const tokens = await client.authorizationCodeGrant(config, url, { pkceCodeVerifier: pending.get(state), expectedState: state });
      const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
      const body = `<!doctype html><html lang="en"><head><title>The app</title></head><body><main><h1>Signed in as ${String(info.email)}</h1><p id="refresh">${tokens.refresh_token ? "with" : "without"} a refresh token</p></main></body></html>`;
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(body);
    })().catch((error: unknown) => {
      res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
    });
  });
  origin = await listenOnLoopback(server);
  const made = await fetch(`${suite.server.baseURL}/auth/admin/oauth-clients`, {
    method: "POST",
    headers: { authorization: `Bearer ${suite.server.adminKey}`, "content-type": "application/json" },
    body: JSON.stringify({ name, type: "confidential", firstParty, redirectUris: [`${origin}/callback`] }),
  });
  const answer = (await made.json()) as { client?: { clientId: string; clientSecret: string } };
  assert.ok(made.ok && answer.client, JSON.stringify(answer));
  ({ clientId, clientSecret: secret } = answer.client);
  return { origin, close: () => server.close() };
}

test("an app on another origin signs a member in through the hosted login page, and a third-party app through the consent page", FLOW_TIMEOUT, async (t) => {
  const email = "grace@example.org";
  await verifiedDevMember(suite.server, email, "Grace Hopper");
  const shop = await startApp("Shop", true);
  t.after(() => shop.close());

  const { page } = await suite.openPage(t);
  await page.goto(`${shop.origin}/login`);
  await heading(page, "Log in");
  await step(page, "hosted login page for the app");
  await page.getByRole("textbox", { name: "Email" }).fill(email);
  await page.getByLabel("Password", { exact: true }).fill(E2E_PASSWORD);
  await solveAltchaWidget(page);
  await page.getByRole("button", { name: "Log in", exact: true }).click();
  await heading(page, `Signed in as ${email}`);
  assert.equal(await page.locator("#refresh").textContent(), "with a refresh token");

  const partner = await startApp("Partner Analytics", false);
  t.after(() => partner.close());
  await page.goto(`${partner.origin}/login`);
  await heading(page, "Allow Partner Analytics?");
  await step(page, "consent page");
  await page.getByRole("button", { name: "Allow" }).click();
  await heading(page, `Signed in as ${email}`);
});
