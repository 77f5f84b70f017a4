/**
 * What the OpenID Provider's suites share (decisions.md#openid-provider): a tenant with a signed-in
 * member and three registered clients (a confidential first-party web app, a public SPA, a
 * third-party partner), and a sign-in through the provider up to the client's callback.
 */
import assert from "node:assert/strict";
import * as client from "openid-client";
import { sha256Hex } from "../../src/security/hashing.js";
import { loginCookie, tenantIdOf } from "./flows.js";
import { createHarness, registerVerifiedMember, type Harness } from "./harness.js";
import { Browser } from "./oidc-rp.js";

export const EMAIL = "ada@example.org";
export const WEB = { id: "web-app", secret: "web-app-secret-0123456789abcdef0123456789", redirect: "https://app.example.net/callback" };
export const SPA = { id: "spa", redirect: "http://127.0.0.1:5173/cb" };
export const PARTNER = { id: "partner", secret: "partner-secret-0123456789abcdef0123456789", redirect: "https://partner.example.org/cb" };

export interface Setup {
  h: Harness;
  recordId: string;
  cookie: string;
  tenantId: string;
}

export async function insertClient(
  h: Harness,
  tenantId: string,
  c: { id: string; secret?: string; redirect: string },
  options: { firstParty?: boolean; logout?: string[] } = {},
): Promise<void> {
  await h.deps.store.oauthClients.insertClient(tenantId, {
    clientId: c.id,
    name: `The ${c.id} application`,
    type: c.secret ? "confidential" : "public",
    firstParty: options.firstParty ?? true,
    redirectUris: [c.redirect],
    postLogoutRedirectUris: options.logout ?? [],
    secretHash: c.secret ? sha256Hex(c.secret) : null,
    createdAt: h.clock.now(),
    updatedAt: h.clock.now(),
  });
}

export async function setUpProvider(t: { after(fn: () => Promise<void>): void }, h?: Harness): Promise<Setup> {
  h ??= await createHarness();
  const harness = h;
  t.after(() => harness.close());
  const recordId = await registerVerifiedMember(h, EMAIL);
  const cookie = await loginCookie(h, EMAIL);
  const tenantId = await tenantIdOf(h, h.tenant.domain);
  await insertClient(h, tenantId, WEB, { logout: ["https://app.example.net/bye"] });
  await insertClient(h, tenantId, SPA);
  await insertClient(h, tenantId, PARTNER, { firstParty: false });
  return { h, recordId, cookie, tenantId };
}

export interface Started {
  url: URL;
  verifier: string;
  state: string;
  nonce: string;
}

export async function authorizationUrl(
  config: client.Configuration,
  redirectUri: string,
  scope = "openid email profile offline_access",
  extra: Record<string, string> = {},
): Promise<Started> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
    ...extra,
  });
  return { url, verifier, state, nonce };
}

/** A browser holding the given Latch session (the member's own unless told). */
export function signedInBrowser(s: Setup, cookie = s.cookie): Browser {
  const browser = new Browser(s.h);
  browser.cookies.set("session_id", cookie);
  return browser;
}

/** Authorize with a signed-in browser, up to the client's callback, and exchange the code. */
export async function signIn(s: Setup, config: client.Configuration, redirectUri: string, browser = signedInBrowser(s), scope?: string) {
  const started = await authorizationUrl(config, redirectUri, scope);
  const { url, answer } = await browser.follow(started.url, (u) => u.href.startsWith(redirectUri));
  assert.equal(answer, undefined, `reached the callback (stopped at ${url.pathname}: ${answer?.statusCode} ${answer?.body.slice(0, 300)})`);
  const tokens = await client.authorizationCodeGrant(config, url, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
  });
  return { tokens, callback: url, started, browser };
}

export const isInvalidGrant = (error: { error?: string }): boolean => error.error === "invalid_grant";
