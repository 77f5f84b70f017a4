// The client SDK (issue 7) against a real Latch on a real port: every flow goes through
// packages/client with cookies "memory", and failures come back as typed LatchErrors.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { createLatchClient, isLatchError, LatchError, type LatchClientOptions, type LatchErrorCode } from "../packages/client/src/index.js";
import { SECOND } from "../src/core/clock.js";
import { internalApiKeyOf, lastWebhookFor, WRONG_PASSWORD } from "./support/flows.js";
import { createHarness, deliverWebhooks, OPERATOR_KEY, OTHER_STRONG_PASSWORD, parseLink, settle, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { closedPortUrl, listenOnLoopback } from "./support/local-servers.js";
import { totpAt } from "./support/totp.js";
import { SoftAuthenticator } from "./support/webauthn-authenticator.js";
import type { PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";

let h: Harness;
let baseUrl: string;

before(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
after(() => h.close());

interface SentRequest {
  url: string;
  method: string;
  headers: Headers;
  credentials: RequestInit["credentials"];
  body: string | undefined;
}

/** A fetch that records what the client sends, then sends it (or answers with `answer`). */
function recordingFetch(sent: SentRequest[], answer?: () => Response): typeof fetch {
  return async (input, init) => {
    sent.push({
      url: input instanceof Request ? input.url : String(input),
      method: init?.method ?? "GET",
      headers: new Headers(init?.headers),
      credentials: init?.credentials,
      body: typeof init?.body === "string" ? init.body : undefined,
    });
    return answer ? answer() : fetch(input, init);
  };
}

function memberClient(sent: SentRequest[] = [], options: LatchClientOptions = {}) {
  return createLatchClient({ baseUrl, tenantDomain: h.tenant.domain, cookies: "memory", fetch: recordingFetch(sent), ...options });
}

/** The LatchError a call rejects with; fails unless it has `code` and `status`. */
async function rejection(promise: Promise<unknown>, code: LatchErrorCode, status: number): Promise<LatchError> {
  try {
    await promise;
  } catch (err) {
    if (!isLatchError(err, code)) assert.fail(`expected LatchError ${code}, got ${String(err)} (${String((err as LatchError).code)})`);
    assert.ok(err instanceof LatchError && err instanceof Error);
    assert.equal(err.status, status);
    return err;
  }
  assert.fail(`expected LatchError ${code}, the call succeeded`);
}

/** The last emailed link of that kind for `email`, after the outbox is delivered. */
async function emailedLink(eventType: string, field: string, email: string): Promise<{ recordId: string; token: string }> {
  await deliverWebhooks(h);
  return parseLink(lastWebhookFor(h, eventType, email).body[field]!);
}

async function registerVerified(email: string): Promise<string> {
  const client = memberClient();
  const registered = await client.registerWithPassword({ email, name: "Ada Lovelace", password: STRONG_PASSWORD });
  const link = await emailedLink("verify_email", "verificationLink", email);
  await client.verifyEmail(link);
  return registered.recordid;
}

test("a member's whole journey goes through the SDK, with the session kept by the memory cookie jar", async () => {
  const sent: SentRequest[] = [];
  const client = memberClient(sent);
  const email = "journey@example.com";

  const registered = await client.registerWithPassword({ email, name: "Ada Lovelace", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
  assert.equal(registered.success, true);
  const verification = await emailedLink("verify_email", "verificationLink", email);
  assert.equal(verification.recordId, registered.recordid);
  assert.equal((await client.verifyEmail(verification)).success, true);

  const login = await client.loginWithPassword({ email, password: STRONG_PASSWORD });
  assert.ok(login.authorized);
  assert.equal(login.recordid, registered.recordid);
  const session = await client.getSession();
  assert.equal(session.recordId, registered.recordid);
  assert.equal(session.is2FAEnabled, false);
  assert.match(sent.at(-1)!.headers.get("cookie") ?? "", /^session_id=[A-Za-z0-9_-]+$/, "the session cookie goes back");

  await client.changePassword({ currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD });
  assert.equal((await client.getSession()).recordId, registered.recordid, "this session survives the change");

  const setup = await client.setUpTwoFactor({ password: OTHER_STRONG_PASSWORD });
  const enabled = await client.enableTwoFactor({ code: totpAt(setup.secret, h.clock.now()) });
  assert.equal(enabled.recoveryCodes.length, 10);
  assert.equal((await client.getSession()).is2FAEnabled, true);

  await client.logout();
  const afterLogout = client.getSession();
  await rejection(afterLogout, "unauthorized", 401);
  assert.equal(sent.at(-1)!.headers.get("cookie"), null, "the cleared cookie is forgotten");

  h.clock.advance(30 * SECOND);
  const challenged = await client.loginWithPassword({ email, password: OTHER_STRONG_PASSWORD });
  assert.ok(!challenged.authorized && challenged.two_factor_required);
  await rejection(client.getSession(), "unauthorized", 401);
  const secondFactor = await client.loginWithPassword({ email, password: OTHER_STRONG_PASSWORD, twoFACode: totpAt(setup.secret, h.clock.now()) });
  assert.ok(secondFactor.authorized);
  assert.equal((await client.getSession()).recordId, registered.recordid);
  await client.logout();

  // Magic link: the first answer asks for the second factor and keeps the link valid.
  const magic = memberClient();
  await magic.requestMagicLink({ email });
  const link = await emailedLink("magic_login", "magicLoginLink", email);
  const needs2FA = await magic.verifyMagicLink(link.recordId, link.token);
  assert.ok(!needs2FA.success && needs2FA.requires2FA);
  h.clock.advance(30 * SECOND);
  const magicLogin = await magic.verifyMagicLink(link.recordId, link.token, { twoFACode: totpAt(setup.secret, h.clock.now()) });
  assert.ok(magicLogin.success);
  assert.equal((await magic.getSession()).recordId, registered.recordid);

  // An admin locks the member: the session ends and the password no longer lets them in.
  const admin = createLatchClient({ baseUrl, tenantDomain: h.tenant.domain, apiKey: internalApiKeyOf(h) });
  const locked = await admin.lockAccount({ recordId: registered.recordid, action: "lock" });
  assert.equal(locked.authentication_status, "Locked");
  await rejection(magic.getSession(), "unauthorized", 401);
  await rejection(client.loginWithPassword({ email, password: OTHER_STRONG_PASSWORD }), "account_locked", 403);
  const audit = await admin.listAuditEvents({ recordId: registered.recordid, limit: 5 });
  assert.ok(audit.events.length > 0 && audit.events.length <= 5);
  assert.ok(
    audit.events.some((event) => event.type === "account_locked"),
    "the lock is in the log",
  );

  // D22 through the SDK: find the member, read and export them, end their sessions, erase them.
  const found = await admin.listMembers({ email: `${email.slice(0, 3)}*` });
  assert.deepEqual(
    found.members.map((m) => m.recordid),
    [registered.recordid],
  );
  assert.equal(found.nextCursor, null);
  assert.equal((await admin.getMember(registered.recordid)).authentication_status, "Locked");
  assert.equal((await admin.exportMember(registered.recordid)).member.email, email);
  assert.equal((await admin.revokeMemberSessions({ recordId: registered.recordid })).recordid, registered.recordid);
  assert.deepEqual(await admin.deleteMember(registered.recordid), { success: true, recordid: registered.recordid });
  await rejection(admin.getMember(registered.recordid), "not_found", 404);

  // D29 through the SDK: a dry run writes nothing, then the import; the old bcrypt password signs in.
  const bcrypt = "$2b$05$0SCIlK2qOCGqqLsxqKIuj.859w8O7.0qEGM8iuWifZ.FThCYrcJMG"; // glibc's, test/fixtures/import
  const toImport = { members: [{ email: "moved@example.org", emailVerified: true, passwordHash: bcrypt }] };
  const dry = await admin.importMembers(toImport, { dryRun: true });
  assert.deepEqual([dry.dryRun, dry.imported, dry.formats.bcrypt], [true, 1, 1]);
  assert.equal((await admin.listMembers({ email: "moved@example.org" })).members.length, 0);
  assert.equal((await admin.importMembers(toImport)).imported, 1);
  assert.equal((await client.loginWithPassword({ email: "moved@example.org", password: "Old-Passw0rd!" })).authorized, true);

  assert.ok(
    sent.every((request) => request.headers.get("authorization") === null),
    "member calls never carry a key",
  );
  assert.ok(sent.every((request) => request.headers.get("x-tenant-domain") === h.tenant.domain));
});

test("D24 and D23 through the SDK: profile, sessions, email change, account deletion; the operator lists and deletes a tenant with its own key", async () => {
  const email = "sdk.self@example.org";
  await registerVerified(email);
  const sent: SentRequest[] = [];
  const member = memberClient(sent);
  await member.loginWithPassword({ email, password: STRONG_PASSWORD });
  assert.equal((await member.getMe()).email, email);
  assert.equal((await member.updateMe({ name: "Ada King" })).name, "Ada King");
  const other = memberClient();
  await other.loginWithPassword({ email, password: STRONG_PASSWORD });
  const { sessions } = await member.listSessions();
  assert.equal(sessions.length, 2);
  await member.revokeSession(sessions.find((s) => !s.current)!.id);
  await rejection(other.getSession(), "unauthorized", 401);
  await member.revokeOtherSessions();

  await member.changeEmail({ newEmail: "sdk.self.new@example.org", password: STRONG_PASSWORD });
  const link = await emailedLink("email_change", "verificationLink", "sdk.self.new@example.org");
  await member.confirmEmailChange(link);
  assert.equal((await member.getMe()).email, "sdk.self.new@example.org");
  await rejection(member.deleteAccount({}), "validation_failed", 400);
  await member.deleteAccount({ password: STRONG_PASSWORD });
  await rejection(member.getMe(), "unauthorized", 401);
  assert.ok(sent.some((r) => r.method === "PATCH") && sent.some((r) => r.method === "DELETE"));
  assert.ok(
    sent.every((request) => request.headers.get("authorization") === null),
    "member calls never carry a key",
  );

  const operatorSent: SentRequest[] = [];
  const operator = createLatchClient({
    baseUrl,
    tenantDomain: h.tenant.domain,
    operatorKey: OPERATOR_KEY,
    apiKey: "admin-key-that-must-not-go-to-the-operator-api",
    fetch: recordingFetch(operatorSent),
  });
  await operator.listTenants();
  const listed = await operator.listTenants({ limit: 1 });
  assert.equal(listed.tenants.length, 1);
  const created = await fetch(`${baseUrl}/operator/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${OPERATOR_KEY}` },
    body: JSON.stringify({
      domain: "sdk-gone.example.com",
      settings: {
        emailVerificationWebhook: "https://h.example/v",
        passwordResetWebhook: "https://h.example/r",
        magicLoginWebhook: "https://h.example/m",
        botProtection: { provider: "none" },
      },
    }),
  });
  assert.equal(created.status, 201);
  await rejection(operator.deleteTenant("sdk-gone.example.com", "other.example.com"), "validation_failed", 400);
  const deleted = await operator.deleteTenant("sdk-gone.example.com", "sdk-gone.example.com");
  assert.deepEqual({ ...deleted, applicationId: "-" }, { success: true, domain: "sdk-gone.example.com", applicationId: "-", applicationDeleted: true });
  await rejection(createLatchClient({ baseUrl, operatorKey: "not-the-operator-key-0123456789abcdef" }).listTenants(), "unauthorized", 401);
  for (const request of operatorSent) {
    assert.equal(request.headers.get("authorization"), `Bearer ${OPERATOR_KEY}`, "operator calls carry the operator key, never the admin key");
    assert.equal(request.headers.get("x-tenant-domain"), null, "operator calls name no tenant");
  }
});

test("D26 through the SDK: add a passkey, list, rename, log in with it, remove it; log in with an email code", async () => {
  const email = "sdk-passkey@example.org";
  const recordId = await registerVerified(email);
  const client = memberClient();
  assert.ok((await client.loginWithPassword({ email, password: STRONG_PASSWORD })).authorized);
  const auth = new SoftAuthenticator();
  const origin = `https://${h.tenant.domain}`;
  const creation = await client.startPasskeyRegistration({ password: STRONG_PASSWORD });
  const added = await client.finishPasskeyRegistration({
    response: auth.createCredential(creation as unknown as PublicKeyCredentialCreationOptionsJSON, origin),
    name: "Laptop",
  });
  assert.equal(added.passkey.name, "Laptop");
  assert.equal((await client.renamePasskey(added.passkey.id, { name: "Old laptop" })).passkey.name, "Old laptop");
  assert.deepEqual(
    (await client.listPasskeys()).passkeys.map((p) => p.name),
    ["Old laptop"],
  );

  const fresh = memberClient();
  const request = await fresh.startPasskeyLogin();
  const loggedIn = await fresh.finishPasskeyLogin({ response: auth.getAssertion(request as unknown as PublicKeyCredentialRequestOptionsJSON, origin) });
  assert.deepEqual(loggedIn, { authorized: true, recordid: recordId, redirectUrl: "/" });
  assert.equal((await fresh.getSession()).recordId, recordId);
  await fresh.deletePasskey(added.passkey.id);
  assert.deepEqual((await fresh.listPasskeys()).passkeys, []);
  await rejection(fresh.deletePasskey(added.passkey.id), "not_found", 404);

  const coded = memberClient();
  await coded.requestMagicLink({ email });
  await deliverWebhooks(h);
  const code = lastWebhookFor(h, "magic_login", email).body.code!;
  await rejection(coded.verifyLoginCode({ email, code: code === "000000" ? "111111" : "000000" }), "invalid_token", 400);
  assert.ok((await coded.verifyLoginCode({ email, code })).success);
  assert.equal((await coded.getSession()).recordId, recordId);
});

test("refusals are LatchErrors with the D4 code, status and request id", async () => {
  const email = "errors@example.com";
  await registerVerified(email);
  const client = memberClient();

  const wrong = await rejection(client.loginWithPassword({ email, password: WRONG_PASSWORD }), "invalid_credentials", 401);
  assert.equal(typeof wrong.requestId, "string");
  assert.ok(wrong.requestId!.length > 0);
  assert.ok(!wrong.message.includes(WRONG_PASSWORD), "no password in the message");

  const invalid = await rejection(client.registerWithPassword({ email: "", name: "Ada", password: STRONG_PASSWORD }), "validation_failed", 400);
  assert.ok(Array.isArray(invalid.details) && invalid.details.length > 0, `details: ${JSON.stringify(invalid.details)}`);

  await rejection(createLatchClient({ baseUrl, tenantDomain: "nobody.example.net" }).getSession(), "unknown_tenant", 404);
  await rejection(
    createLatchClient({ baseUrl, tenantDomain: h.tenant.domain, apiKey: "not-the-key" }).requirePasswordChange({ recordId: "x" }),
    "unauthorized",
    401,
  );
});

test("rate_limited carries Retry-After as retryAfterSeconds", async () => {
  const email = "pending@example.com";
  const registered = await memberClient().registerWithPassword({ email, name: "Grace Hopper", password: STRONG_PASSWORD });
  await settle(h); // the registration is an email request until the worker's pass (D19)
  const admin = createLatchClient({ baseUrl, tenantDomain: h.tenant.domain, apiKey: internalApiKeyOf(h) });
  await admin.resendVerificationAsAdmin({ recordId: registered.recordid, email });
  const limited = await rejection(admin.resendVerificationAsAdmin({ recordId: registered.recordid, email }), "rate_limited", 429);
  assert.ok(
    Number.isInteger(limited.retryAfterSeconds) && limited.retryAfterSeconds! > 0 && limited.retryAfterSeconds! <= 300,
    `retryAfterSeconds ${limited.retryAfterSeconds}`,
  );
});

test("an unreachable service is network_error with status 0, and the message names no link", async () => {
  const client = createLatchClient({ baseUrl: await closedPortUrl(), cookies: "memory" });
  const err = await rejection(client.verifyMagicLink("rec123", "secret-token-value"), "network_error", 0);
  assert.ok(!err.message.includes("secret-token-value") && !String(err.stack).includes("secret-token-value"));
  assert.equal(err.requestId, undefined);
});

test("a non-JSON error page becomes a LatchError from the status, without the page in it", async () => {
  const page = "<html><body>Bad gateway: upstream 10.0.0.7 token=abc123</body></html>";
  let status = 502;
  const stub = createServer((_req, res) => res.writeHead(status, { "content-type": "text/html", "retry-after": "7" }).end(page));
  const stubUrl = await listenOnLoopback(stub);
  after(() => new Promise<void>((resolve) => stub.close(() => resolve())));
  const client = createLatchClient({ baseUrl: stubUrl });

  const gateway = await rejection(client.getSession(), "unavailable", 502);
  assert.ok(!gateway.message.includes("Bad gateway") && !gateway.message.includes("abc123"), gateway.message);
  assert.equal(gateway.details, undefined);
  status = 503;
  assert.equal((await rejection(client.getSession(), "unavailable", 503)).retryAfterSeconds, 7);
  status = 500;
  await rejection(client.getSession(), "internal_error", 500);
  status = 200;
  await rejection(client.getSession(), "internal_error", 200);
});

test("a D4 body with a code newer than the SDK keeps its message and request id, and takes its code from the status", async () => {
  const body = { success: false, code: "brand_new_code", message: "Something new went wrong.", requestId: "req-1", details: { hint: 1 } };
  const client = createLatchClient({ fetch: async () => new Response(JSON.stringify(body), { status: 409, headers: { "content-type": "application/json" } }) });
  const err = await rejection(client.logout(), "conflict", 409);
  assert.deepEqual([err.message, err.requestId, err.details], [body.message, "req-1", { hint: 1 }]);
});

test("requests: browser credentials, JSON only with a body, the key only on admin calls, path params encoded", async () => {
  const sent: SentRequest[] = [];
  const answer = () =>
    new Response(JSON.stringify({ success: true, message: "ok" }), { headers: { "content-type": "application/json", "set-cookie": "session_id=abc; Path=/" } });
  const client = createLatchClient({
    baseUrl: "https://auth.example.com/",
    tenantDomain: "members.example.com",
    apiKey: "admin-key",
    fetch: recordingFetch(sent, answer),
  });

  await client.verifyMagicLink("a/b", "c?d#e", { twoFACode: "123456" });
  await client.getSession();
  await client.lockAccount({ recordId: "r1", action: "unlock" });
  await client.listAuditEvents({ recordId: "r 1&x", limit: undefined });
  await client.listMembers({ status: "Locked", limit: 20 });

  const [magic, session, lock, audit, members] = sent;
  assert.equal(magic!.url, "https://auth.example.com/auth/verify-magic-link/a%2Fb/c%3Fd%23e");
  assert.equal(magic!.method, "POST");
  assert.equal(magic!.headers.get("content-type"), "application/json");
  assert.deepEqual(JSON.parse(magic!.body!), { twoFACode: "123456" });
  assert.equal(session!.method, "GET");
  assert.equal(session!.headers.get("content-type"), null);
  assert.equal(session!.body, undefined);
  assert.equal(session!.headers.get("cookie"), null, "browser mode leaves cookies to the browser");
  assert.ok(sent.every((request) => request.credentials === "same-origin"));
  assert.ok(sent.every((request) => request.headers.get("x-tenant-domain") === "members.example.com"));
  assert.equal(magic!.headers.get("authorization"), null);
  assert.equal(session!.headers.get("authorization"), null);
  assert.equal(lock!.headers.get("authorization"), "Bearer admin-key");
  assert.equal(audit!.url, "https://auth.example.com/auth/admin/audit-log?recordId=r+1%26x");
  assert.equal(members!.url, "https://auth.example.com/auth/admin/members?status=Locked&limit=20", "a number goes as its digits");

  // A listed origin of the same site opts in to sending the cookie cross-origin.
  const included: SentRequest[] = [];
  await createLatchClient({ baseUrl: "https://auth.example.com", credentials: "include", fetch: recordingFetch(included, answer) }).getSession();
  assert.equal(included[0]!.credentials, "include");
});

test("the memory jar keeps the newest session_id and drops it on Max-Age=0 or a past Expires", async () => {
  const sent: SentRequest[] = [];
  const cookies = [
    "session_id=first; Max-Age=3600; Path=/; HttpOnly",
    "other=1",
    "session_id=second; Path=/",
    "session_id=; Max-Age=0; Path=/",
    "session_id=third",
    "session_id=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
  ];
  let next = 0;
  const answer = () => {
    const headers = new Headers({ "content-type": "application/json" });
    const cookie = cookies[next++];
    if (cookie !== undefined) headers.append("set-cookie", cookie);
    return new Response("{}", { headers });
  };
  const client = createLatchClient({ cookies: "memory", fetch: recordingFetch(sent, answer) });
  for (let i = 0; i <= cookies.length; i++) await client.getSession();
  assert.deepEqual(
    sent.map((request) => request.headers.get("cookie")),
    [null, "session_id=first", "session_id=first", "session_id=second", null, "session_id=third", null],
  );
});
