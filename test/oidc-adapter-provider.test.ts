/**
 * decisions.md#openid-provider-storage, end to end: a real oidc-provider Provider whose only state
 * is OidcAdapter over Latch's store (SQLite or PostgreSQL, LATCH_TEST_STORE), driven by
 * openid-client through discovery → code → token → refresh → a replayed refresh token, which must
 * get invalid_grant and take the whole family (grant, newest refresh token) with it.
 */
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import * as client from "openid-client";
import { ManualClock } from "../src/core/clock.js";
import { loadOidcProvider, type OidcProvider } from "../src/providers/oidc-provider.js";
import type { TenantSettings } from "../src/model.js";
import { sha256Hex } from "../src/security/hashing.js";
import { OidcAdapter } from "../src/store/oidc.js";
import { TEST_STORE } from "./support/harness.js";
import { listenOnLoopback } from "./support/local-servers.js";
import { postgresStore, sqliteStore, type MadeStore } from "./support/stores.js";

const settings: TenantSettings = {
  emailVerificationWebhook: "https://h.example/v",
  passwordResetWebhook: "https://h.example/r",
  magicLoginWebhook: "https://h.example/m",
  sessionTier: "1d",
  loginSuccessRedirect: "/",
  botProtection: { provider: "none" },
  resetTokenTtlMinutes: 60,
  require2FA: false,
  allowedOrigins: [],
};
const TENANT = "ten_op";
const MEMBER = 100000000000777;
const SESSION_HASH = sha256Hex("latch-session-cookie");
const REDIRECT_URI = "http://127.0.0.1/cb";

let made: MadeStore;
let issuer: string;
let close: () => void;
const clock = new ManualClock(Date.now());

before(async () => {
  made = TEST_STORE === "postgres" ? await postgresStore() : await sqliteStore();
  const { store } = made;
  await store.tenants.createApplication("app_op", sha256Hex("op-key"), clock.now());
  await store.tenants.createTenant({ id: TENANT, domain: "op.example", applicationId: "app_op", settings, webhookSecretEnc: "x" }, clock.now());
  await store.members.insertMember(
    TENANT,
    { recordId: MEMBER, email: "m@example.org", name: "M", passwordHash: null, passwordSalt: null, authenticationType: "Password" },
    clock.now(),
  );
  await store.sessions.insertSession(
    TENANT,
    SESSION_HASH,
    MEMBER,
    { publicId: "pub", ip: null, userAgent: null, country: null },
    clock.now(),
    clock.now() + 86_400_000,
  );

  const module = await loadOidcProvider();
  // Made once the server listens: its issuer needs the port.
  const ref: { provider?: OidcProvider } = {};
  let serve: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  // The interaction logs in the fixed member and grants what was asked, bound to their Latch session, as the next slice's route will.
  const interaction = async (req: IncomingMessage, res: ServerResponse) => {
    const details = await ref.provider!.interactionDetails(req, res);
    const grant = new ref.provider!.Grant({ accountId: String(MEMBER), clientId: details.params.client_id });
    grant.addOIDCScope("openid offline_access");
    const grantId = await grant.save();
    assert.ok(await store.oauth.bindGrant(TENANT, sha256Hex(grantId), SESSION_HASH, MEMBER));
    await ref.provider!.interactionFinished(
      req,
      res,
      { login: { accountId: String(MEMBER), remember: false }, consent: { grantId } },
      { mergeWithLastSubmission: false },
    );
  };
  const server = createServer((req, res) => {
    if (req.url?.startsWith("/interaction/")) {
      interaction(req, res).catch(() => res.writeHead(500).end());
      return;
    }
    (serve ??= ref.provider!.callback())(req, res);
  });
  issuer = await listenOnLoopback(server);
  close = () => server.close();
  const jwk = { ...generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" }), kid: "k1", alg: "ES256", use: "sig" };
  ref.provider = new module.Provider(issuer, {
    adapter: OidcAdapter.forTenant(
      TENANT,
      () => store,
      clock,
      (description) => new module.errors.InvalidGrant(description),
    ),
    clients: [
      {
        client_id: "app",
        client_secret: "app-secret",
        redirect_uris: [REDIRECT_URI],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ["cookie-key-for-this-test"] },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    features: { devInteractions: { enabled: false }, dPoP: { enabled: false }, pushedAuthorizationRequests: { enabled: false } },
    interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
    // offline_access is dropped at /authorize without prompt=consent (research §0.2): the grant's scope decides.
    issueRefreshToken: (_ctx: unknown, c: { grantTypeAllowed(t: string): boolean }) => c.grantTypeAllowed("refresh_token"),
    rotateRefreshToken: true,
    expiresWithSession: () => false,
    enabledJWA: { idTokenSigningAlgValues: ["ES256"] },
    clientDefaults: { id_token_signed_response_alg: "ES256" },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 3600, RefreshToken: 3600 },
  });
});
after(async () => {
  close();
  await made.dispose();
});

/** A browser without a UI: follows the provider's redirects with its cookies until the one to the client. */
async function browse(start: URL): Promise<URL> {
  const cookies = new Map<string, string>();
  let url = start;
  for (let hop = 0; hop < 10; hop++) {
    const res = await fetch(url, { redirect: "manual", headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") } });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const [name, value] = pair!.split("=");
      cookies.set(name!, value ?? "");
    }
    const location = res.headers.get("location");
    assert.ok(location, `a redirect from ${url.pathname} (${res.status})`);
    url = new URL(location, url);
    if (url.href.startsWith(REDIRECT_URI)) return url;
  }
  throw new Error("redirect loop");
}

test(`a real Provider on OidcAdapter (${TEST_STORE}): code, refresh with rotation, and a replayed refresh token revokes the family`, async () => {
  const config = await client.discovery(new URL(issuer), "app", "app-secret", client.ClientSecretPost("app-secret"), {
    execute: [client.allowInsecureRequests],
  });
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const authorize = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: "openid offline_access",
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
  });
  const callback = await browse(authorize);
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
  assert.equal(tokens.claims()?.sub, String(MEMBER));
  const first = tokens.refresh_token;
  assert.ok(first);

  const replayedCode = client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
  await assert.rejects(replayedCode, (error: { error?: string }) => error.error === "invalid_grant", "a code is used once");
  // The code's reuse revoked its family: start a fresh sign-in for the refresh part.
  const again = await client.authorizationCodeGrant(config, await browse(authorize), { pkceCodeVerifier: verifier, expectedState: state });
  const rt1 = again.refresh_token!;
  const rotated = await client.refreshTokenGrant(config, rt1);
  const rt2 = rotated.refresh_token!;
  assert.notEqual(rt2, rt1, "rotated");
  const db = (made.store as unknown as { db: import("kysely").Kysely<import("../src/store/schema.js").Database> }).db;
  const dump = JSON.stringify(await db.selectFrom("oauth_artifacts").selectAll().where("tenant_id", "=", TENANT).execute());
  for (const raw of [rt1, rt2, callback.searchParams.get("code")!]) assert.ok(!dump.includes(raw), "bearer secrets are stored hashed");
  assert.ok(dump.includes(sha256Hex(rt2)));

  await assert.rejects(client.refreshTokenGrant(config, rt1), (error: { error?: string }) => error.error === "invalid_grant", "a replayed refresh token");
  await assert.rejects(
    client.refreshTokenGrant(config, rt2),
    (error: { error?: string }) => error.error === "invalid_grant",
    "the newest one died with its family",
  );
  await assert.rejects(client.refreshTokenGrant(config, first), (error: { error?: string }) => error.error === "invalid_grant");
  assert.equal((await db.selectFrom("oauth_grants").select("id_hash").where("tenant_id", "=", TENANT).execute()).length, 0, "both families are gone");
});
