/**
 * The dev identity provider and the test upstream built on it (contract.md#d27), proved with
 * openid-client itself as the client, through Latch's guarded fetch: discovery, an authorization URL
 * with PKCE, state and nonce, the browser driver, the code grant and the ID token's claims. Each
 * tamper hook must make openid-client refuse the answer, or the attack tests built on them prove nothing.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";
import Fastify from "fastify";
import * as client from "openid-client";
import { createDevIdp, devIdpRoutes, devIdpSubject, type DevIdp } from "../src/dev/idp.js";
import { createGuardedFetch } from "../src/security/outbound.js";
import { startUpstreamIdp, type Person, type TokenTamper, type UpstreamIdp } from "./support/upstream-idp.js";

const guardedFetch = createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 10_000 });

async function discover(issuer: string, clientId: string, clientSecret: string): Promise<client.Configuration> {
  return client.discovery(new URL(issuer), clientId, clientSecret, client.ClientSecretPost(clientSecret), {
    execute: [client.allowInsecureRequests], // the loopback issuer is http
    [client.customFetch]: guardedFetch,
  });
}

interface Started {
  config: client.Configuration;
  url: URL;
  verifier: string;
  state: string;
  nonce: string;
}

async function startSignIn(config: client.Configuration, redirectUri: string): Promise<Started> {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: "openid email profile",
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
  });
  return { config, url, verifier, state, nonce };
}

function finishSignIn(started: Started, callback: URL) {
  return client.authorizationCodeGrant(started.config, callback, {
    pkceCodeVerifier: started.verifier,
    expectedState: started.state,
    expectedNonce: started.nonce,
    idTokenExpected: true,
  });
}

async function signInThrough(upstream: UpstreamIdp, person: Person) {
  const config = await discover(upstream.issuer, upstream.client.client_id, upstream.client.client_secret);
  const started = await startSignIn(config, upstream.client.redirect_uri);
  const callback = await upstream.signIn(started.url, person);
  return { started, callback, grant: () => finishSignIn(started, callback) };
}

test("openid-client signs in through the upstream: PKCE code flow, and the ID token carries sub, email, email_verified and name", async (t) => {
  const upstream = await startUpstreamIdp();
  t.after(() => upstream.close());
  const { callback, started, grant } = await signInThrough(upstream, { email: "Ada@Example.org", verified: true, name: "Ada" });
  assert.equal(`${callback.origin}${callback.pathname}`, upstream.client.redirect_uri);
  assert.equal(callback.searchParams.get("state"), started.state);
  assert.equal(callback.searchParams.get("iss"), upstream.issuer, "RFC 9207: the issuer says it is itself");
  const claims = (await grant()).claims();
  assert.equal(claims?.sub, devIdpSubject("ada@example.org"));
  assert.equal(claims?.sub.length, 22);
  assert.equal(claims?.email, "Ada@Example.org", "the email as typed");
  assert.equal(claims?.email_verified, true);
  assert.equal(claims?.name, "Ada");
  assert.equal(claims?.iss, upstream.issuer);
  assert.equal(claims?.aud, upstream.client.client_id);

  const unverified = (await (await signInThrough(upstream, { email: "ada@example.org", verified: false })).grant()).claims();
  assert.equal(unverified?.sub, claims?.sub, "the same person, whatever the case typed, keeps the same sub");
  assert.equal(unverified?.email_verified, false);
  assert.equal(unverified?.name, undefined);
  assert.equal(upstream.tokenCalls, 2);
});

test("a code is used once, PKCE is required, and a declined sign-in comes back as error=access_denied", async (t) => {
  const upstream = await startUpstreamIdp();
  t.after(() => upstream.close());
  const first = await signInThrough(upstream, { email: "ben@example.org", verified: true });
  await first.grant();
  await assert.rejects(first.grant(), (error: Error) => error instanceof client.ResponseBodyError && error.error === "invalid_grant");

  const config = await discover(upstream.issuer, upstream.client.client_id, upstream.client.client_secret);
  const noPkce = client.buildAuthorizationUrl(config, { redirect_uri: upstream.client.redirect_uri, scope: "openid", state: "s1" });
  const refused = await upstream.signIn(noPkce, { email: "ben@example.org", verified: true });
  assert.equal(refused.searchParams.get("error"), "invalid_request");

  upstream.denyNextSignIn();
  const denied = await signInThrough(upstream, { email: "ben@example.org", verified: true });
  assert.equal(denied.callback.searchParams.get("error"), "access_denied");
  assert.equal(denied.callback.searchParams.get("state"), denied.started.state);
  await assert.rejects(denied.grant(), (error: Error) => error instanceof client.AuthorizationResponseError && error.error === "access_denied");
  const after = await signInThrough(upstream, { email: "ben@example.org", verified: true });
  assert.ok(after.callback.searchParams.get("code"), "only the next sign-in is declined");
});

const now = Math.floor(Date.now() / 1000);
/** Lies in the payload: openid-client's own checks of iss, aud, nonce and exp refuse them. */
const payloadAttacks: Record<string, TokenTamper> = {
  "another audience": { payload: (p) => ({ ...p, aud: "someone-else" }) },
  "another nonce": { payload: (p) => ({ ...p, nonce: "replayed-nonce" }) },
  expired: { payload: (p) => ({ ...p, iat: now - 7200, exp: now - 3600 }) },
  "another issuer": { payload: (p) => ({ ...p, iss: "https://evil.example" }) },
  "no ID token at all": { body: ({ id_token: _dropped, ...rest }) => rest },
  "unsigned (alg none)": { signWith: "none" },
};
/** A signature the issuer's JWKS does not verify: refused only when openid-client checks signatures (enableNonRepudiationChecks). */
const signatureAttacks: Record<string, TokenTamper> = {
  "signed with a foreign key under the provider's kid": { signWith: "foreign" },
  "a foreign key and a changed email": { signWith: "foreign", payload: (p) => ({ ...p, email: "victim@example.org", email_verified: true }) },
};

async function grantUnder(upstream: UpstreamIdp, tamper: TokenTamper | undefined, checkSignatures: boolean) {
  upstream.tamper = tamper;
  const config = await discover(upstream.issuer, upstream.client.client_id, upstream.client.client_secret);
  if (checkSignatures) client.enableNonRepudiationChecks(config);
  const started = await startSignIn(config, upstream.client.redirect_uri);
  return finishSignIn(started, await upstream.signIn(started.url, { email: "carol@example.org", verified: true }));
}

test("every tamper of the ID token makes openid-client's authorizationCodeGrant throw once it checks signatures; re-signing alone changes nothing", async (t) => {
  const upstream = await startUpstreamIdp();
  t.after(() => upstream.close());
  for (const [name, tamper] of Object.entries({ ...payloadAttacks, ...signatureAttacks })) {
    await assert.rejects(grantUnder(upstream, tamper, true), Error, name);
  }
  for (const [name, tamper] of Object.entries(payloadAttacks)) {
    await assert.rejects(grantUnder(upstream, tamper, false), Error, `${name}, without signature checks too`);
  }
  // openid-client's default (OIDC Core 3.1.3.7: TLS vouches for a token fetched from the token endpoint)
  // takes a foreign signature: contract.md#d27 asks for the JWKS check, so the federation flow must enable it.
  const unchecked = await grantUnder(upstream, signatureAttacks["a foreign key and a changed email"], false);
  assert.equal(unchecked.claims()?.email, "victim@example.org");
  // The control: the provider's own key over a changed name is valid, so the failures above are the tampers'.
  const control = await grantUnder(upstream, { signWith: "provider", payload: (p) => ({ ...p, name: "Re-signed" }) }, true);
  assert.equal(control.claims()?.name, "Re-signed");
  assert.equal((await grantUnder(upstream, undefined, true)).claims()?.name, undefined);
});

test("the sign-in page: labelled fields, a checked 'verified' box, and a bad email shown again with its error", async (t) => {
  const upstream = await startUpstreamIdp();
  t.after(() => upstream.close());
  const config = await discover(upstream.issuer, upstream.client.client_id, upstream.client.client_secret);
  const started = await startSignIn(config, upstream.client.redirect_uri);
  const first = await fetch(started.url, { redirect: "manual" });
  const pageUrl = new URL(first.headers.get("location")!, started.url);
  const cookie = first.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");
  const page = await fetch(pageUrl, { headers: { cookie } });
  const html = await page.text();
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'none'/);
  assert.match(html, /<html lang="en">/);
  assert.match(html, /<label for="email">Email<\/label>\s*<input id="email" name="email" type="email" required/);
  assert.match(
    html,
    /<input id="verified" name="verified" type="checkbox" value="true" checked><label for="verified">The provider has verified this email<\/label>/,
  );
  assert.match(html, new RegExp(`action="${pageUrl.pathname}"`));
  const bad = await fetch(pageUrl, {
    method: "POST",
    headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
    body: "email=not-an-email&action=sign-in",
  });
  assert.equal(bad.status, 400);
  assert.match(await bad.text(), /aria-invalid="true" aria-describedby="email-error"/);
  const gone = await fetch(new URL("/interaction/unknown-uid", upstream.issuer));
  assert.equal(gone.status, 400, "no interaction cookie: the page says the sign-in expired");
  assert.match(await gone.text(), /This sign-in has expired/);
});

test("devIdpRoutes mounts the provider at /dev/idp in a Fastify app: discovery, the form post and the code grant work under the prefix", async (t) => {
  const app = Fastify();
  // A JSON route beside the mount: the mount's body handling must not leak out of its scope.
  app.post("/echo", async (request) => request.body);
  // The provider is made once the server listens and its port, part of the issuer, is known.
  const made: { idp?: DevIdp } = {};
  await devIdpRoutes(app, () => made.idp);
  const origin = await app.listen({ port: 0, host: "127.0.0.1" });
  t.after(() => app.close());
  assert.equal((await fetch(`${origin}/dev/idp/.well-known/openid-configuration`)).status, 404, "404 until the provider exists");

  const issuer = `${origin}/dev/idp`;
  const redirectUri = `${origin}/auth/federated/dev/callback`;
  made.idp = await createDevIdp({ issuer, clients: [{ client_id: "dev", client_secret: "dev-secret", redirect_uris: [redirectUri] }] });
  const config = await discover(issuer, "dev", "dev-secret");
  assert.equal(config.serverMetadata().token_endpoint, `${issuer}/token`);
  assert.equal(config.serverMetadata().jwks_uri, `${issuer}/jwks`);
  const started = await startSignIn(config, redirectUri);

  // The browser's part, by hand: authorization → interaction page → form post → back to the client.
  const jar: string[] = [];
  const keep = (response: Response) => jar.push(...response.headers.getSetCookie().map((line) => line.split(";")[0]!));
  const toPage = await fetch(started.url, { redirect: "manual" });
  keep(toPage);
  const pageUrl = new URL(toPage.headers.get("location")!, origin);
  assert.match(pageUrl.pathname, /^\/dev\/idp\/interaction\//);
  let next = await fetch(pageUrl, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: jar.join("; "), "content-type": "application/x-www-form-urlencoded" },
    body: "email=dev%40example.org&verified=true&action=sign-in",
  });
  for (let hop = 0; next.status === 303 || next.status === 302; hop++) {
    keep(next);
    const location = new URL(next.headers.get("location")!, origin);
    if (location.pathname === new URL(redirectUri).pathname) {
      const claims = (await finishSignIn(started, location)).claims();
      assert.equal(claims?.sub, devIdpSubject("dev@example.org"));
      assert.equal(claims?.iss, issuer);
      const echo = await fetch(`${origin}/echo`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"a":1}' });
      assert.deepEqual(await echo.json(), { a: 1 });
      return;
    }
    assert.ok(hop < 8, "too many redirects");
    next = await fetch(location, { redirect: "manual", headers: { cookie: jar.join("; ") } });
  }
  assert.fail(`the provider answered ${next.status}: ${await next.text()}`);
});

test("loadOidcProvider drops only the Node 20 'Unsupported runtime' line: other warnings still print", async () => {
  const script = [
    'const { loadOidcProvider } = await import("./src/providers/oidc-provider.ts");',
    "const module = await loadOidcProvider();",
    'console.warn("a warning of our own");',
    "console.log(typeof module.Provider, typeof module.createMemoryAdapter);",
  ].join("\n");
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script]);
  assert.equal(stdout.trim(), "function function");
  assert.equal(stderr.trim(), "a warning of our own");
});
