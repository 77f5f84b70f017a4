// Issue 16: a client generated from docs/openapi.json (openapi-typescript types, committed as
// test/support/openapi-types.ts; openapi-fetch) calls every operation of the document against a
// real Latch on a real port. Every answer is checked against the document (status documented,
// body and headers valid, test/support/openapi-answers.ts), every webhook Latch sent is checked
// against the document's `webhooks`, and the last test fails if an operation was never called, or
// (health checks aside) never answered both a success and an error.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import createClient, { type Client } from "openapi-fetch";
import { generateOpenApiTypes, OPENAPI_TYPES_FILE } from "../scripts/openapi.js";
import { HOUR, MINUTE, SECOND } from "../src/core/clock.js";
import { updateTenantSettings } from "../src/flows/tenants/tenants.js";
import { internalApiKeyOf, lastWebhookFor } from "./support/flows.js";
import { createHarness, deliverWebhooks, OPERATOR_KEY, OTHER_STRONG_PASSWORD, parseLink, settle, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { OpenApiAnswerChecker } from "./support/openapi-answers.js";
import type { paths } from "./support/openapi-types.js";
import { totpAt } from "./support/totp.js";
import { SoftAuthenticator } from "./support/webauthn-authenticator.js";
import { startUpstreamIdp } from "./support/upstream-idp.js";

type Api = Client<paths>;
interface Caller {
  api: Api;
  /** The session cookie this caller holds, as a browser would. */
  jar: { session?: string };
}

let h: Harness;
let baseUrl: string;
const checker = new OpenApiAnswerChecker();
const ALTCHA_DOMAIN = "altcha.example.com";

before(async () => {
  h = await createHarness();
  // Alerts and lifecycle events too, so every webhook of the document is sent and checked.
  await updateTenantSettings(h.deps, h.tenant.domain, { securityAlertWebhook: `${h.receiver.url}/alerts`, eventsWebhook: `${h.receiver.url}/events` });
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
after(() => h.close());

async function tenantSettings() {
  const tenant = await h.deps.store.tenants.findTenantByDomain(h.tenant.domain);
  assert.ok(tenant);
  return tenant.settings;
}

/** A caller of the generated client: its own cookie jar, the tenant header, and optionally a key. */
function caller(options: { key?: string; domain?: string } = {}): Caller {
  const jar: Caller["jar"] = {};
  const api = createClient<paths>({
    baseUrl,
    headers: { "x-tenant-domain": options.domain ?? h.tenant.domain, ...(options.key ? { authorization: `Bearer ${options.key}` } : {}) },
    fetch: async (request: Request) => {
      if (jar.session) request.headers.set("cookie", `session_id=${jar.session}`);
      const response = await fetch(request);
      for (const line of response.headers.getSetCookie()) {
        const match = /^session_id=([^;]*)/.exec(line);
        if (match) jar.session = match[1] || undefined;
      }
      return response;
    },
  });
  api.use({
    async onResponse({ request, response, schemaPath }) {
      await checker.checkAnswer(request.method, schemaPath, response);
      await settle(h); // the email requests a call committed become outbox rows, as the dispatcher would
      return undefined;
    },
  });
  return { api, jar };
}

type Result<T> = { data?: T; error?: unknown; response: Response };
function ok<T>(result: Result<T>): T {
  assert.ok(result.response.ok, `${result.response.url}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data as T;
}
function refused(result: Result<unknown>, status: number, code: string): void {
  assert.equal(result.response.status, status, `${result.response.url}: ${JSON.stringify(result.error ?? result.data)}`);
  assert.equal((result.error as { code?: string }).code, code);
}

/** The last emailed link of that kind for `email`, after the outbox is delivered. */
async function emailed(eventType: string, field: string, email: string): Promise<{ recordId: string; token: string; body: Record<string, string> }> {
  await deliverWebhooks(h);
  const { body } = lastWebhookFor(h, eventType, email);
  return { ...parseLink(body[field]!), body };
}

/** Registers and verifies `email`. Registrations come from one IP (5 an hour): each starts an hour on. */
async function registerVerified(email: string): Promise<string> {
  h.clock.advance(HOUR);
  const anyone = caller();
  const { recordid } = ok(await anyone.api.POST("/auth/register-password", { body: { email, name: "Member", password: STRONG_PASSWORD } }));
  const link = await emailed("verify_email", "verificationLink", email);
  ok(await anyone.api.POST("/auth/verify-email", { body: { recordId: link.recordId, token: link.token } }));
  return recordid;
}

async function loggedIn(email: string, password = STRONG_PASSWORD): Promise<Caller> {
  const member = caller();
  const answer = ok(await member.api.POST("/auth/login", { body: { email, password } }));
  assert.ok(answer.authorized && member.jar.session);
  return member;
}

test("the committed generated types are what openapi-typescript makes of docs/openapi.json", async () => {
  const fresh = await generateOpenApiTypes(checker.document);
  assert.ok(fresh === readFileSync(OPENAPI_TYPES_FILE, "utf8"), "test/support/openapi-types.ts is stale: run `npm run openapi` and commit the result");
});

test("health, registration, verification and password login", async () => {
  const anyone = caller();
  ok(await anyone.api.GET("/healthz"));
  ok(await anyone.api.GET("/readyz"));

  refused(await anyone.api.POST("/auth/register-password", { body: { email: "weak@example.org", name: "Weak", password: "short" } }), 400, "weak_password");
  await registerVerified("ada@example.org");
  // A repeat registration of a verified address: the owner gets account_exists.
  ok(await anyone.api.POST("/auth/register-password", { body: { email: "ada@example.org", name: "Again", password: STRONG_PASSWORD } }));
  refused(await anyone.api.POST("/auth/register-magic-link", { body: { email: "not-an-email", name: "Nobody" } }), 400, "validation_failed");
  ok(await anyone.api.POST("/auth/register-magic-link", { body: { email: "grace@example.org", name: "Grace" } }));
  refused(await anyone.api.POST("/auth/verify-email", { body: { recordId: "1", token: "not-a-token" } }), 400, "invalid_token");
  const grace = await emailed("verify_email", "verificationLink", "grace@example.org");
  ok(await anyone.api.POST("/auth/verify-email", { body: { recordId: grace.recordId, token: grace.token } }));

  ok(await anyone.api.POST("/auth/register-password", { body: { email: "pending@example.org", name: "Pending", password: STRONG_PASSWORD } }));
  h.clock.advance(6 * MINUTE);
  ok(await anyone.api.POST("/auth/resend-verification", { body: { email: "pending@example.org" } }));
  refused(await anyone.api.POST("/auth/resend-verification", { body: { email: "x" } }), 400, "validation_failed");

  refused(await anyone.api.POST("/auth/login", { body: { email: "ada@example.org", password: OTHER_STRONG_PASSWORD } }), 401, "invalid_credentials");
  const ada = await loggedIn("ada@example.org");
  ok(await ada.api.GET("/auth/session"));
  refused(await anyone.api.GET("/auth/session"), 401, "unauthorized");
});

test("the member's own account: profile, sessions, password, email, logout", async () => {
  const anyone = caller();
  const ada = await loggedIn("ada@example.org");
  const other = await loggedIn("ada@example.org");
  ok(await ada.api.GET("/auth/me"));
  refused(await anyone.api.GET("/auth/me"), 401, "unauthorized");
  ok(await ada.api.PATCH("/auth/me", { body: { name: "Ada Lovelace" } }));
  refused(await ada.api.PATCH("/auth/me", { body: { name: "" } }), 400, "validation_failed");

  const { sessions } = ok(await ada.api.GET("/auth/sessions"));
  refused(await anyone.api.GET("/auth/sessions"), 401, "unauthorized");
  const otherId = sessions.find((s) => !s.current)!.id;
  ok(await ada.api.DELETE("/auth/sessions/{id}", { params: { path: { id: otherId } } }));
  refused(await ada.api.DELETE("/auth/sessions/{id}", { params: { path: { id: "no-such-session" } } }), 404, "not_found");
  assert.equal((await other.api.GET("/auth/session")).response.status, 401);
  ok(await ada.api.POST("/auth/sessions/revoke-others"));
  refused(await anyone.api.POST("/auth/sessions/revoke-others"), 401, "unauthorized");
  const { token, expiresAt } = ok(await ada.api.POST("/auth/session/token"));
  assert.equal(token.split(".").length, 3);
  assert.equal(expiresAt, new Date(h.clock.now() + 5 * MINUTE).toISOString());
  refused(await anyone.api.POST("/auth/session/token"), 401, "unauthorized");

  refused(
    await ada.api.POST("/auth/change-password", { body: { currentPassword: OTHER_STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD } }),
    401,
    "invalid_credentials",
  );
  ok(await ada.api.POST("/auth/change-password", { body: { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD } }));

  refused(await ada.api.POST("/auth/change-email", { body: { newEmail: "ada.new@example.org", password: STRONG_PASSWORD } }), 401, "invalid_credentials");
  ok(await ada.api.POST("/auth/change-email", { body: { newEmail: "ada.new@example.org", password: OTHER_STRONG_PASSWORD } }));
  const change = await emailed("email_change", "verificationLink", "ada.new@example.org");
  refused(await anyone.api.POST("/auth/confirm-email-change", { body: { recordId: change.recordId, token: "wrong-token" } }), 400, "invalid_token");
  ok(await anyone.api.POST("/auth/confirm-email-change", { body: { recordId: change.recordId, token: change.token } }));

  // Logout needs no body: none at all, or an empty JSON object; a tenant that doesn't exist is refused.
  ok(await ada.api.POST("/auth/logout", { body: {} }));
  ok(await ada.api.POST("/auth/logout"));
  refused(await caller({ domain: "unknown.example.net" }).api.POST("/auth/logout"), 404, "unknown_tenant");
});

test("forgot and reset password, magic links and email codes", async () => {
  const anyone = caller();
  await registerVerified("bob@example.org");
  ok(await anyone.api.POST("/auth/forgot-password", { body: { email: "bob@example.org" } }));
  refused(await anyone.api.POST("/auth/forgot-password", { body: { email: "x" } }), 400, "validation_failed");
  const reset = await emailed("password_reset", "resetLink", "bob@example.org");
  refused(
    await anyone.api.POST("/auth/reset-password", { body: { recordId: reset.recordId, token: "wrong-token", newPassword: OTHER_STRONG_PASSWORD } }),
    400,
    "invalid_token",
  );
  ok(await anyone.api.POST("/auth/reset-password", { body: { recordId: reset.recordId, token: reset.token, newPassword: OTHER_STRONG_PASSWORD } }));

  ok(await anyone.api.POST("/auth/request-magic-link", { body: { email: "grace@example.org" } }));
  refused(await anyone.api.POST("/auth/request-magic-link", { body: { email: "x" } }), 400, "validation_failed");
  const magic = await emailed("magic_login", "magicLoginLink", "grace@example.org");
  const grace = caller();
  refused(
    await grace.api.POST("/auth/verify-magic-link/{recordId}/{token}", { params: { path: { recordId: magic.recordId, token: "wrong-token" } }, body: {} }),
    400,
    "invalid_token",
  );
  const viaLink = ok(
    await grace.api.POST("/auth/verify-magic-link/{recordId}/{token}", { params: { path: { recordId: magic.recordId, token: magic.token } }, body: {} }),
  );
  assert.ok(viaLink.success && grace.jar.session);

  h.clock.advance(4 * MINUTE);
  ok(await anyone.api.POST("/auth/request-magic-link", { body: { email: "grace@example.org" } }));
  const { body } = await emailed("magic_login", "magicLoginLink", "grace@example.org");
  const wrong = body.code === "000000" ? "111111" : "000000";
  refused(await anyone.api.POST("/auth/verify-login-code", { body: { email: "grace@example.org", code: wrong } }), 400, "invalid_token");
  ok(await anyone.api.POST("/auth/verify-login-code", { body: { email: "grace@example.org", code: body.code! } }));
});

test("two-factor enrolment, recovery codes and disabling", async () => {
  const anyone = caller();
  const ada = await loggedIn("ada.new@example.org", OTHER_STRONG_PASSWORD);
  refused(await anyone.api.POST("/auth/2fa/setup"), 401, "unauthorized");
  const { secret } = ok(await ada.api.POST("/auth/2fa/setup", { body: { password: OTHER_STRONG_PASSWORD } }));
  const wrongCode = (code: string) => (code === "000000" ? "111111" : "000000");
  refused(await ada.api.POST("/auth/2fa/enable", { body: { code: wrongCode(totpAt(secret, h.clock.now())) } }), 401, "invalid_2fa_code");
  ok(await ada.api.POST("/auth/2fa/enable", { body: { code: totpAt(secret, h.clock.now()) } }));
  h.clock.advance(30 * SECOND);
  refused(await ada.api.POST("/auth/2fa/recovery-codes", { body: { code: wrongCode(totpAt(secret, h.clock.now())) } }), 401, "invalid_2fa_code");
  ok(await ada.api.POST("/auth/2fa/recovery-codes", { body: { code: totpAt(secret, h.clock.now()) } }));
  refused(await ada.api.POST("/auth/2fa/disable", { body: { password: STRONG_PASSWORD } }), 401, "invalid_credentials");
  // The document requires the password or a code; so does the server, before anything else.
  refused(await ada.api.POST("/auth/2fa/disable", { body: {} as { password: string } }), 400, "validation_failed");
  ok(await ada.api.POST("/auth/2fa/disable", { body: { password: OTHER_STRONG_PASSWORD } }));
});

test("passkeys: add, list, rename, log in, remove", async () => {
  const anyone = caller();
  const ada = await loggedIn("ada.new@example.org", OTHER_STRONG_PASSWORD);
  const origin = `https://${h.tenant.domain}`;
  const authenticator = new SoftAuthenticator();
  refused(await anyone.api.POST("/auth/passkeys/register/options", { body: {} }), 401, "unauthorized");
  const creation = ok(await ada.api.POST("/auth/passkeys/register/options", { body: { password: OTHER_STRONG_PASSWORD } }));
  type RegistrationAnswer = paths["/auth/passkeys/register/verify"]["post"]["requestBody"]["content"]["application/json"]["response"];
  const answer = authenticator.createCredential(creation as unknown as PublicKeyCredentialCreationOptionsJSON, origin) as unknown as RegistrationAnswer;
  const { passkey } = ok(await ada.api.POST("/auth/passkeys/register/verify", { body: { response: answer, name: "Laptop" } }));
  refused(await ada.api.POST("/auth/passkeys/register/verify", { body: { response: answer } }), 400, "invalid_token");
  ok(await ada.api.GET("/auth/passkeys"));
  refused(await anyone.api.GET("/auth/passkeys"), 401, "unauthorized");
  ok(await ada.api.PATCH("/auth/passkeys/{id}", { params: { path: { id: passkey.id } }, body: { name: "Work laptop" } }));
  refused(await ada.api.PATCH("/auth/passkeys/{id}", { params: { path: { id: "no-such-passkey" } }, body: { name: "x" } }), 404, "not_found");

  const request = ok(await anyone.api.POST("/auth/passkeys/login/options", { body: {} }));
  refused(await anyone.api.POST("/auth/passkeys/login/options", { body: { "bot-challenge-response": "x".repeat(5000) } }), 400, "validation_failed");
  type AssertionAnswer = paths["/auth/passkeys/login/verify"]["post"]["requestBody"]["content"]["application/json"]["response"];
  const assertion = authenticator.getAssertion(request as unknown as PublicKeyCredentialRequestOptionsJSON, origin) as unknown as AssertionAnswer;
  ok(await caller().api.POST("/auth/passkeys/login/verify", { body: { response: assertion } }));
  refused(await caller().api.POST("/auth/passkeys/login/verify", { body: { response: assertion } }), 400, "invalid_token");

  ok(await ada.api.DELETE("/auth/passkeys/{id}", { params: { path: { id: passkey.id } } }));
  refused(await ada.api.DELETE("/auth/passkeys/{id}", { params: { path: { id: passkey.id } } }), 404, "not_found");
});

test("admin calls with the internal API key", async () => {
  const admin = caller({ key: internalApiKeyOf(h) });
  const keyless = caller();
  const bob = (await admin.api.GET("/auth/admin/members", { params: { query: { email: "bob@example.org" } } })).data!.members[0]!.recordid;
  refused(await admin.api.GET("/auth/admin/members", { params: { query: { cursor: "not-a-cursor" } } }), 400, "validation_failed");
  ok(await admin.api.GET("/auth/admin/members/{recordId}", { params: { path: { recordId: bob } } }));
  refused(await admin.api.GET("/auth/admin/members/{recordId}", { params: { path: { recordId: "999999" } } }), 404, "not_found");
  ok(await admin.api.GET("/auth/admin/members/{recordId}/export", { params: { path: { recordId: bob } } }));
  refused(await keyless.api.GET("/auth/admin/members/{recordId}/export", { params: { path: { recordId: bob } } }), 401, "unauthorized");
  const { events } = ok(await admin.api.GET("/auth/admin/audit-log", { params: { query: { recordId: bob, limit: 5 } } }));
  assert.ok(events.length > 0 && events.length <= 5);
  refused(await admin.api.GET("/auth/admin/audit-log", { params: { query: { recordId: bob, limit: -1 } } }), 400, "validation_failed");

  ok(await admin.api.POST("/auth/lock-account", { body: { recordId: bob, action: "lock" } }));
  ok(await admin.api.POST("/auth/lock-account", { body: { recordId: bob, action: "unlock" } }));
  refused(await keyless.api.POST("/auth/lock-account", { body: { recordId: bob, action: "lock" } }), 401, "unauthorized");
  ok(await admin.api.POST("/auth/admin/require-password-change", { body: { recordId: bob } }));
  refused(await admin.api.POST("/auth/admin/require-password-change", { body: { recordId: "999999" } }), 404, "not_found");
  ok(await admin.api.POST("/auth/admin/revoke-sessions", { body: { recordId: bob } }));
  refused(await admin.api.POST("/auth/admin/revoke-sessions", { body: { recordId: "999999" } }), 404, "not_found");

  const pending = (await admin.api.GET("/auth/admin/members", { params: { query: { email: "pending@example.org" } } })).data!.members[0]!;
  h.clock.advance(6 * MINUTE);
  ok(await admin.api.POST("/auth/admin/resend-verification-email", { body: { recordId: pending.recordid, email: "pending@example.org" } }));
  refused(await admin.api.POST("/auth/admin/resend-verification-email", { body: { recordId: bob, email: "bob@example.org" } }), 409, "invalid_state");

  const eve = await registerVerified("eve@example.org");
  ok(await admin.api.DELETE("/auth/admin/members/{recordId}", { params: { path: { recordId: eve } } }));
  refused(await admin.api.DELETE("/auth/admin/members/{recordId}", { params: { path: { recordId: eve } } }), 404, "not_found");

  // D30: support turns a member's 2FA off; a member without it is 409.
  const fay = await registerVerified("fay@example.org");
  const faySession = await loggedIn("fay@example.org");
  const { secret: faySecret } = ok(await faySession.api.POST("/auth/2fa/setup", { body: { password: STRONG_PASSWORD } }));
  ok(await faySession.api.POST("/auth/2fa/enable", { body: { code: totpAt(faySecret, h.clock.now()) } }));
  ok(await admin.api.POST("/auth/admin/members/{recordId}/reset-2fa", { params: { path: { recordId: fay } } }));
  refused(await admin.api.POST("/auth/admin/members/{recordId}/reset-2fa", { params: { path: { recordId: fay } } }), 409, "invalid_state");

  // D27: connections to identity providers.
  const connection = { id: "google", type: "google", displayName: "Google", clientId: "cid", clientSecret: "connection-secret" } as const;
  ok(await admin.api.POST("/auth/admin/connections", { body: connection }));
  refused(await admin.api.POST("/auth/admin/connections", { body: connection }), 409, "conflict");
  ok(await admin.api.GET("/auth/admin/connections"));
  refused(await keyless.api.GET("/auth/admin/connections"), 401, "unauthorized");
  ok(await admin.api.PATCH("/auth/admin/connections/{id}", { params: { path: { id: "google" } }, body: { allowSignup: false } }));
  refused(await admin.api.PATCH("/auth/admin/connections/{id}", { params: { path: { id: "nope" } }, body: { allowSignup: false } }), 404, "not_found");
  ok(await admin.api.DELETE("/auth/admin/connections/{id}", { params: { path: { id: "google" } } }));
  refused(await admin.api.DELETE("/auth/admin/connections/{id}", { params: { path: { id: "google" } } }), 404, "not_found");

  // D28: OAuth clients; the secret comes back in the creation's answer only.
  const oauthClient = { name: "Shop", type: "confidential" as const, redirectUris: ["https://shop.example.com/cb"] };
  const { client } = ok(await admin.api.POST("/auth/admin/oauth-clients", { body: oauthClient }));
  assert.equal(typeof client.clientSecret, "string");
  refused(
    await admin.api.POST("/auth/admin/oauth-clients", { body: { ...oauthClient, redirectUris: ["http://shop.example.com/cb"] } }),
    400,
    "validation_failed",
  );
  ok(await admin.api.GET("/auth/admin/oauth-clients"));
  refused(await keyless.api.GET("/auth/admin/oauth-clients"), 401, "unauthorized");
  const clientPath = { params: { path: { clientId: client.clientId } } };
  ok(await admin.api.GET("/auth/admin/oauth-clients/{clientId}", clientPath));
  ok(await admin.api.PATCH("/auth/admin/oauth-clients/{clientId}", { ...clientPath, body: { firstParty: false } }));
  refused(
    await admin.api.PATCH("/auth/admin/oauth-clients/{clientId}", { params: { path: { clientId: "nope" } }, body: { firstParty: false } }),
    404,
    "not_found",
  );
  ok(await admin.api.DELETE("/auth/admin/oauth-clients/{clientId}", clientPath));
  refused(await admin.api.GET("/auth/admin/oauth-clients/{clientId}", clientPath), 404, "not_found");
  refused(await admin.api.DELETE("/auth/admin/oauth-clients/{clientId}", clientPath), 404, "not_found");

  await registerVerified("dan@example.org");
  const dan = await loggedIn("dan@example.org");
  refused(await dan.api.POST("/auth/delete-account", { body: { password: OTHER_STRONG_PASSWORD } }), 401, "invalid_credentials");
  ok(await dan.api.POST("/auth/delete-account", { body: { password: STRONG_PASSWORD } }));
});

test("operator calls, and the ALTCHA challenge of a tenant that uses it", async () => {
  const operator = caller({ key: OPERATOR_KEY });
  const settings = { ...(await tenantSettings()), botProtection: { provider: "altcha" as const } };
  const { securityAlertWebhook: _alerts, eventsWebhook: _events, ...newSettings } = settings;
  const created = ok(await operator.api.POST("/operator/tenants", { body: { domain: ALTCHA_DOMAIN, settings: newSettings } }));
  refused(await operator.api.POST("/operator/tenants", { body: { domain: ALTCHA_DOMAIN, settings: newSettings } }), 409, "conflict");
  ok(await caller({ domain: ALTCHA_DOMAIN }).api.GET("/auth/bot-challenge"));
  refused(await caller().api.GET("/auth/bot-challenge"), 404, "not_found");

  ok(await operator.api.GET("/operator/tenants", { params: { query: { limit: 1 } } }));
  refused(await operator.api.GET("/operator/tenants", { params: { query: { limit: 1000 } } }), 400, "validation_failed");
  ok(await operator.api.GET("/operator/tenants/{domain}", { params: { path: { domain: ALTCHA_DOMAIN } } }));
  refused(await operator.api.GET("/operator/tenants/{domain}", { params: { path: { domain: "nope.example.net" } } }), 404, "unknown_tenant");
  ok(await operator.api.PATCH("/operator/tenants/{domain}", { params: { path: { domain: ALTCHA_DOMAIN } }, body: { settings: { sessionTier: "1h" } } }));
  refused(
    await operator.api.PATCH("/operator/tenants/{domain}", { params: { path: { domain: "nope.example.net" } }, body: { settings: { sessionTier: "1h" } } }),
    404,
    "unknown_tenant",
  );
  ok(await operator.api.POST("/operator/applications/{applicationId}/rotate-key", { params: { path: { applicationId: created.applicationId } } }));
  refused(
    await caller().api.POST("/operator/applications/{applicationId}/rotate-key", { params: { path: { applicationId: created.applicationId } } }),
    401,
    "unauthorized",
  );
  ok(await operator.api.POST("/operator/tenants/{domain}/rotate-webhook-secret", { params: { path: { domain: ALTCHA_DOMAIN } } }));
  refused(
    await operator.api.POST("/operator/tenants/{domain}/rotate-webhook-secret", { params: { path: { domain: "nope.example.net" } } }),
    404,
    "unknown_tenant",
  );
  ok(await operator.api.GET("/operator/tenants/{domain}/webhook-deliveries", { params: { path: { domain: h.tenant.domain }, query: { limit: 5 } } }));
  refused(await operator.api.GET("/operator/tenants/{domain}/webhook-deliveries", { params: { path: { domain: "nope.example.net" } } }), 404, "unknown_tenant");
  refused(
    await operator.api.DELETE("/operator/tenants/{domain}", { params: { path: { domain: ALTCHA_DOMAIN }, query: { confirm: "other.example.net" } } }),
    400,
    "validation_failed",
  );
  ok(await operator.api.DELETE("/operator/tenants/{domain}", { params: { path: { domain: ALTCHA_DOMAIN }, query: { confirm: ALTCHA_DOMAIN } } }));
});

test("'this wasn't me' from a security alert", async () => {
  const alert = await emailed("security_alert", "secureAccountLink", "ada.new@example.org");
  const anyone = caller();
  refused(await anyone.api.POST("/auth/secure-account", { body: { recordId: alert.recordId, token: "wrong-token" } }), 400, "invalid_token");
  ok(await anyone.api.POST("/auth/secure-account", { body: { recordId: alert.recordId, token: alert.token } }));
});

/** A browser's caller: every cookie kept (the session, `latch_fed`, `__Host-latch_fed_pending`), redirects not followed. */
function browser(): Caller & { cookies: Map<string, string> } {
  const cookies = new Map<string, string>();
  const jar: Caller["jar"] = {};
  const api = createClient<paths>({
    baseUrl,
    headers: { "x-tenant-domain": h.tenant.domain },
    fetch: async (request: Request) => {
      if (jar.session) cookies.set("session_id", jar.session);
      if (cookies.size) request.headers.set("cookie", [...cookies].map(([name, value]) => `${name}=${value}`).join("; "));
      const response = await fetch(new Request(request, { redirect: "manual" }));
      for (const line of response.headers.getSetCookie()) {
        const [, name, value] = /^([^=]+)=([^;]*)/.exec(line) ?? [];
        if (!name) continue;
        if (value) cookies.set(name, value);
        else cookies.delete(name);
        if (name === "session_id") jar.session = value || undefined;
      }
      return response;
    },
  });
  api.use({
    async onResponse({ request, response, schemaPath }) {
      await checker.checkAnswer(request.method, schemaPath, response);
      await settle(h);
      return undefined;
    },
  });
  return { api, jar, cookies };
}

test("federated sign-in through a real provider: connections, start, callback, second factor, proof before a link, identities", async (t) => {
  const idp = await startUpstreamIdp({ redirectUri: `https://${h.tenant.domain}/auth/federated/up/callback`, tokenEndpointAuthMethod: "client_secret_basic" });
  t.after(() => idp.close());
  const admin = caller({ key: internalApiKeyOf(h) });
  ok(
    await admin.api.POST("/auth/admin/connections", {
      body: { id: "up", type: "oidc", displayName: "Upstream", issuer: idp.issuer, clientId: idp.client.client_id, clientSecret: idp.client.client_secret },
    }),
  );
  const anyone = caller();
  ok(await anyone.api.GET("/auth/federated/connections"));
  refused(await caller({ domain: "unknown.example.com" }).api.GET("/auth/federated/connections"), 404, "unknown_tenant");
  refused(await anyone.api.GET("/auth/federated/{connection}/start", { params: { path: { connection: "nope" } } }), 404, "not_found");
  refused(
    await caller({ domain: "unknown.example.com" }).api.GET("/auth/federated/{connection}/callback", { params: { path: { connection: "up" }, query: {} } }),
    404,
    "unknown_tenant",
  );

  // A provider's form post (Apple's response_mode=form_post): 303 to the GET callback; JSON is no provider's answer.
  const posted = await browser().api.POST("/auth/federated/{connection}/callback", {
    params: { path: { connection: "up" } },
    body: { code: "a-code", state: "a-state" },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  assert.equal(posted.response.status, 303);
  assert.equal(posted.response.headers.get("location"), "/auth/federated/up/callback?code=a-code&state=a-state");
  refused(
    await browser().api.POST("/auth/federated/{connection}/callback", { params: { path: { connection: "up" } }, body: { code: "c" } }),
    415,
    "unsupported_media_type",
  );

  /** Start, the provider's page, the callback: as a browser would. */
  async function roundTrip(who: ReturnType<typeof browser>, person: { email: string; verified: boolean }): Promise<Response> {
    const start = await who.api.GET("/auth/federated/{connection}/start", { params: { path: { connection: "up" } } });
    assert.equal(start.response.status, 302);
    const back = await idp.signIn(start.response.headers.get("location")!, person);
    const callback = await who.api.GET("/auth/federated/{connection}/callback", {
      params: { path: { connection: "up" }, query: Object.fromEntries(back.searchParams) },
    });
    assert.equal(callback.response.status, 302);
    return callback.response;
  }

  // A newcomer signs up, turns on 2FA, and then signs in with the second step.
  const grace = browser();
  await roundTrip(grace, { email: "grace.federated@example.org", verified: true });
  ok(await grace.api.GET("/auth/identities"));
  refused(await anyone.api.GET("/auth/identities"), 401, "unauthorized");
  const { secret } = ok(await grace.api.POST("/auth/2fa/setup", { body: {} }));
  ok(await grace.api.POST("/auth/2fa/enable", { body: { code: totpAt(secret, h.clock.now()) } }));
  h.clock.advance(30 * SECOND);
  const again = browser();
  assert.equal((await roundTrip(again, { email: "grace.federated@example.org", verified: true })).headers.get("location"), "/ui/federated-second-factor");
  refused(await again.api.POST("/auth/federated/second-factor", { body: { twoFACode: "000000" } }), 401, "invalid_2fa_code");
  ok(await again.api.POST("/auth/federated/second-factor", { body: { twoFACode: totpAt(secret, h.clock.now()) } }));

  // An existing member's email: proof first (a sign-in in this browser after the callback), then the link.
  await registerVerified("linda@example.org");
  const linda = browser();
  h.clock.advance(SECOND);
  assert.equal((await roundTrip(linda, { email: "linda@example.org", verified: true })).headers.get("location"), "/ui/federated-link");
  refused(await linda.api.POST("/auth/federated/link", { body: {} }), 401, "unauthorized");
  h.clock.advance(SECOND);
  ok(await linda.api.POST("/auth/login", { body: { email: "linda@example.org", password: STRONG_PASSWORD } }));
  ok(await linda.api.POST("/auth/federated/link", { body: {} }));

  // Self-service: start another link (re-authenticated), unlink the first.
  refused(await anyone.api.POST("/auth/identities/link/{connection}", { params: { path: { connection: "up" } }, body: {} }), 401, "unauthorized");
  ok(await linda.api.POST("/auth/identities/link/{connection}", { params: { path: { connection: "up" } }, body: { password: STRONG_PASSWORD } }));
  const { identities } = ok(await linda.api.GET("/auth/identities"));
  refused(
    await linda.api.DELETE("/auth/identities/{id}", { params: { path: { id: "no-such-identity" } }, body: { password: STRONG_PASSWORD } }),
    404,
    "not_found",
  );
  ok(await linda.api.DELETE("/auth/identities/{id}", { params: { path: { id: identities[0]!.id } }, body: { password: STRONG_PASSWORD } }));
});

test("every webhook Latch sent matches the document, and each documented one was sent", async () => {
  await deliverWebhooks(h);
  assert.ok(h.receiver.received.length > 0);
  for (const { body } of h.receiver.received) checker.checkWebhook(body);
  assert.deepStrictEqual([...checker.webhooksSeen].sort(), Object.keys(checker.document.webhooks as object).sort(), "webhooks never sent");
});

test("every operation of the document was called, with a success and (health aside) an error", () => {
  const missing: string[] = [];
  for (const operation of checker.operations) {
    const statuses = [...(checker.seen.get(operation.key) ?? [])];
    // A success is a 2xx, or the 302/303 of a browser navigation (the federated start and callbacks).
    if (!statuses.some((s) => s < 400)) missing.push(`${operation.key}: no success`);
    if (!operation.path.startsWith("/healthz") && !operation.path.startsWith("/readyz") && !statuses.some((s) => s >= 400))
      missing.push(`${operation.key}: no error`);
  }
  assert.deepStrictEqual(missing, []);
  assert.ok(checker.operations.length >= 50, `only ${checker.operations.length} operations`);
});
