// Admin endpoints (spec 4.5, 5.1, D3, D5, D15) and the operator API (D3), through the real app on a real SQLite file.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createTenant } from "../src/flows/tenants.js";
import { assertErrorNoExtras, assertMessageSuccess } from "./support/assertions.js";
import { forgotPassword, internalApiKeyOf, receiverSettings, resetPassword } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  OPERATOR_KEY,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";

interface AdminOptions {
  key?: string | null;
  domain?: string;
}

function adminRequestHeaders(h: Harness, options: AdminOptions): Record<string, string> {
  const key = options.key === undefined ? internalApiKeyOf(h) : options.key;
  return {
    "x-tenant-domain": options.domain ?? h.tenant.domain,
    ...(key === null ? {} : { authorization: `Bearer ${key}` }),
  };
}

function adminPost(h: Harness, url: string, body: unknown, options: AdminOptions = {}): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method: "POST",
    url,
    payload: body as Record<string, unknown>,
    remoteAddress: "198.51.100.7",
    headers: adminRequestHeaders(h, options),
  });
}

function adminGet(h: Harness, url: string, options: AdminOptions = {}): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: "GET", url, remoteAddress: "198.51.100.7", headers: adminRequestHeaders(h, options) });
}

function operator(
  h: Harness,
  method: "GET" | "POST" | "PATCH",
  url: string,
  body?: unknown,
  key: string | null = OPERATOR_KEY,
): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method,
    url,
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
  });
}

async function registerPending(h: Harness, email: string, ip?: string): Promise<string> {
  const response = await post(h, "/auth/register-password", { email, name: "Grace Hopper", password: STRONG_PASSWORD, "bot-challenge-response": "x" }, { ip });
  assert.equal(response.statusCode, 200, response.body);
  await deliverWebhooks(h);
  const hook = h.receiver.last("verify_email");
  assert.equal(hook.body.email, email);
  return parseLink(hook.body.verificationLink!).recordId;
}

test("lock: 200 with status Locked; sessions end; login refused; forgot-password silent; older reset link void", async () => {
  const h = await createHarness();
  try {
    const email = "locked@example.org";
    const recordId = await registerVerifiedMember(h, email);
    // A reset link mailed before the lock (forgot-password ends sessions, so log in afterwards).
    assert.equal((await forgotPassword(h, email)).statusCode, 200);
    await deliverWebhooks(h);
    const resetLink = parseLink(h.receiver.last("password_reset").body.resetLink!);
    const loggedIn = await login(h, email);
    assert.equal(loggedIn.statusCode, 200, loggedIn.body);
    const cookie = sessionCookieOf(loggedIn)!;
    assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200);

    const locked = await adminPost(h, "/auth/lock-account", { recordId, action: "lock" });
    assert.equal(locked.statusCode, 200, locked.body);
    assert.deepEqual(locked.json(), { success: true, recordid: recordId, authentication_status: "Locked" });

    assertErrorNoExtras(await get(h, "/auth/session", { cookie }), 401, "unauthorized");

    const right = await login(h, email);
    assert.equal(right.statusCode, 403, right.body);
    assert.equal(right.json().code, "account_locked");
    assert.equal(right.json().authorized, false);
    assert.equal(sessionCookieOf(right), undefined);
    const wrong = await login(h, email, "Wrong-Password-99");
    assert.equal(wrong.statusCode, 401, wrong.body);
    assert.equal(wrong.json().code, "invalid_credentials");

    // Forgot-password for a locked account: the same generic success as for an unknown email, nothing sent.
    const resetsBefore = h.receiver.ofType("password_reset").length;
    const forLocked = await forgotPassword(h, email);
    const forUnknown = await forgotPassword(h, "nobody@example.org");
    assert.equal(forLocked.statusCode, 200, forLocked.body);
    assert.equal(forLocked.body, forUnknown.body);
    assert.equal(await deliverWebhooks(h), 0);
    assert.equal(h.receiver.ofType("password_reset").length, resetsBefore);

    // D15: lock voids every outstanding token, so the earlier reset link cannot undo the lock.
    const reset = await resetPassword(h, resetLink.recordId, resetLink.token, OTHER_STRONG_PASSWORD);
    assertErrorNoExtras(reset, 400, "invalid_token");
    assert.equal((await login(h, email, OTHER_STRONG_PASSWORD)).statusCode, 401);
    assert.equal((await login(h, email)).json().code, "account_locked");

    const unlocked = await adminPost(h, "/auth/lock-account", { recordId, action: "unlock", email });
    assert.equal(unlocked.statusCode, 200, unlocked.body);
    assert.deepEqual(unlocked.json(), { success: true, recordid: recordId, authentication_status: "Unlocked" });
    const again = await login(h, email);
    assert.equal(again.statusCode, 200, again.body);
    assert.ok(sessionCookieOf(again));
  } finally {
    await h.close();
  }
});

test("lock voids a pending verification link; unlock of a never-verified member gives Email Verification Pending", async () => {
  const h = await createHarness();
  try {
    const email = "pending@example.org";
    await registerPending(h, email);
    const link = parseLink(h.receiver.last("verify_email").body.verificationLink!);
    const locked = await adminPost(h, "/auth/lock-account", { recordId: link.recordId, action: "lock" });
    assert.equal(locked.json().authentication_status, "Locked");
    assertErrorNoExtras(await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token }), 400, "invalid_token");
    const unlocked = await adminPost(h, "/auth/lock-account", { recordId: link.recordId, action: "unlock" });
    assert.equal(unlocked.statusCode, 200, unlocked.body);
    assert.deepEqual(unlocked.json(), { success: true, recordid: link.recordId, authentication_status: "Email Verification Pending" });
    const refused = await login(h, email);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, "email_not_verified");
  } finally {
    await h.close();
  }
});

test("lock-account with an email that does not match the member is refused and locks nothing", async () => {
  const h = await createHarness();
  try {
    const recordId = await registerVerifiedMember(h, "match@example.org");
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", { recordId, action: "lock", email: "other@example.org" }), 404, "not_found");
    assert.equal((await login(h, "match@example.org")).statusCode, 200);
  } finally {
    await h.close();
  }
});

test("admin key checks: missing 401, wrong 401, other application's key 403, unknown tenant 404", async () => {
  const h = await createHarness();
  try {
    const recordId = await registerVerifiedMember(h, "keys@example.org");
    const body = { recordId, action: "lock" };
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", body, { key: null }), 401, "unauthorized");
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", body, { key: "latch_not-a-real-key-0000000000000000000000000" }), 401, "unauthorized");
    const basic = await h.app.inject({
      method: "POST",
      url: "/auth/lock-account",
      payload: body,
      headers: { "x-tenant-domain": h.tenant.domain, authorization: `Basic ${internalApiKeyOf(h)}` },
    });
    assertErrorNoExtras(basic, 401, "unauthorized");

    const other = await createTenant(h.deps, { domain: "b.example.com", settings: receiverSettings(h) });
    assert.ok(other.internalApiKey, "a new application gets its own key");
    assert.notEqual(other.applicationId, h.tenant.applicationId);
    assert.notEqual(other.internalApiKey, internalApiKeyOf(h));
    // spec 5.1 rule 4: a real key used with a domain of another application -> 403.
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", body, { key: other.internalApiKey }), 403, "forbidden");
    assertErrorNoExtras(
      await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email: "keys@example.org" }, { key: other.internalApiKey }),
      403,
      "forbidden",
    );
    assertErrorNoExtras(await adminPost(h, "/auth/admin/require-password-change", { recordId }, { key: other.internalApiKey }), 403, "forbidden");
    assertErrorNoExtras(await adminGet(h, `/auth/admin/audit-log?recordId=${recordId}`, { key: other.internalApiKey }), 403, "forbidden");
    // The other application's key works on its own domain (and finds no such member there).
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", body, { key: other.internalApiKey, domain: "b.example.com" }), 404, "not_found");

    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", body, { domain: "unknown.example.net" }), 404, "unknown_tenant");

    // The key is checked before the body is read: a caller without a key learns nothing from validation.
    const malformed = await h.app.inject({
      method: "POST",
      url: "/auth/lock-account",
      payload: '{"recordId":',
      headers: { "x-tenant-domain": h.tenant.domain, "content-type": "application/json" },
    });
    assertErrorNoExtras(malformed, 401, "unauthorized");
    const tooBig = await h.app.inject({
      method: "POST",
      url: "/auth/lock-account",
      payload: { recordId, action: "lock", pad: "p".repeat(20_000) },
      headers: { "x-tenant-domain": h.tenant.domain },
    });
    assertErrorNoExtras(tooBig, 401, "unauthorized");

    // None of the refused calls locked the member.
    assert.equal((await login(h, "keys@example.org")).statusCode, 200);
  } finally {
    await h.close();
  }
});

test("two domains of one application share the key; a recordId of the sibling domain is 404 not_found", async () => {
  const h = await createHarness();
  try {
    const sibling = await createTenant(h.deps, { domain: "c.example.com", applicationId: h.tenant.applicationId, settings: receiverSettings(h) });
    assert.equal(sibling.internalApiKey, undefined, "joining an application issues no new key");
    assert.equal(sibling.applicationId, h.tenant.applicationId);

    const mainMember = await registerVerifiedMember(h, "main@example.org");
    // Register on the sibling domain.
    const reg = await post(
      h,
      "/auth/register-password",
      { email: "sib@example.org", name: "Sib", password: STRONG_PASSWORD, "bot-challenge-response": "x" },
      { domain: "c.example.com" },
    );
    assert.equal(reg.statusCode, 200, reg.body);
    await deliverWebhooks(h);
    const sibLink = parseLink(h.receiver.last("verify_email").body.verificationLink!);
    assert.equal(sibLink.domain, "c.example.com");
    assert.equal((await post(h, "/auth/verify-email", { recordId: sibLink.recordId, token: sibLink.token }, { domain: "c.example.com" })).statusCode, 200);

    // spec 5.1 rule 2: X-Tenant-Domain must own the recordId, even inside one application.
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", { recordId: sibLink.recordId, action: "lock" }), 404, "not_found");
    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", { recordId: mainMember, action: "lock" }, { domain: "c.example.com" }), 404, "not_found");
    assertErrorNoExtras(await adminGet(h, `/auth/admin/audit-log?recordId=${sibLink.recordId}`), 404, "not_found");
    assert.equal((await login(h, "sib@example.org", STRONG_PASSWORD, { domain: "c.example.com" })).statusCode, 200);

    // spec 5.1 rule 3: the one key works with either domain.
    const lockSib = await adminPost(h, "/auth/lock-account", { recordId: sibLink.recordId, action: "lock" }, { domain: "c.example.com" });
    assert.equal(lockSib.statusCode, 200, lockSib.body);
    assert.equal(lockSib.json().authentication_status, "Locked");
    const lockMain = await adminPost(h, "/auth/lock-account", { recordId: mainMember, action: "lock" });
    assert.equal(lockMain.statusCode, 200, lockMain.body);
    assert.equal((await login(h, "sib@example.org", STRONG_PASSWORD, { domain: "c.example.com" })).json().code, "account_locked");
  } finally {
    await h.close();
  }
});

test("admin resend-verification-email: pending -> new verify_email; 1 per 5 min with Retry-After; verified -> 409", async () => {
  const h = await createHarness();
  try {
    const email = "resend@example.org";
    const recordId = await registerPending(h, email);
    const firstLink = h.receiver.last("verify_email").body.verificationLink!;
    const before = h.receiver.ofType("verify_email").length;

    assertMessageSuccess(await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email }));
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.ofType("verify_email").length, before + 1);
    const newLink = h.receiver.last("verify_email").body.verificationLink!;
    assert.notEqual(newLink, firstLink);
    assert.equal(parseLink(newLink).recordId, recordId);

    const tooSoon = await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email });
    assertErrorNoExtras(tooSoon, 429, "rate_limited");
    const retryAfter = Number(tooSoon.headers["retry-after"]);
    assert.ok(Number.isInteger(retryAfter) && retryAfter > 0 && retryAfter <= 300, `Retry-After ${String(tooSoon.headers["retry-after"])}`);
    assert.equal(await deliverWebhooks(h), 0);

    h.clock.advance(5 * 60 * 1000);
    const later = await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email });
    assert.equal(later.statusCode, 200, later.body);
    assert.equal(await deliverWebhooks(h), 1);
    const latest = parseLink(h.receiver.last("verify_email").body.verificationLink!);
    // D7: the newest link works.
    assert.equal((await post(h, "/auth/verify-email", { recordId: latest.recordId, token: latest.token })).statusCode, 200);

    h.clock.advance(5 * 60 * 1000);
    assertErrorNoExtras(await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email }), 409, "invalid_state");
    assert.equal(await deliverWebhooks(h), 0);
  } finally {
    await h.close();
  }
});

test("D21: admin calls with an email no member could have (255 characters, malformed) -> 400 validation_failed, not 404", async () => {
  const h = await createHarness();
  try {
    const recordId = await registerPending(h, "long@example.org");
    const tooLong = `${"a".repeat(243)}@example.org`; // 255 characters: inside the schema's bound, over the 254 of an address
    assert.equal(tooLong.length, 255);
    for (const email of [tooLong, "not an email"]) {
      assertErrorNoExtras(await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email }), 400, "validation_failed");
      assertErrorNoExtras(await adminPost(h, "/auth/lock-account", { recordId, action: "lock", email }), 400, "validation_failed");
    }
    // The member's own email, spelled with capitals and spaces, is still the member's.
    assertMessageSuccess(await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email: " Long@Example.org " }));
  } finally {
    await h.close();
  }
});

test("admin resend-verification-email with an email that is not the member's is refused and sends nothing", async () => {
  const h = await createHarness();
  try {
    const recordId = await registerPending(h, "right@example.org");
    assertErrorNoExtras(await adminPost(h, "/auth/admin/resend-verification-email", { recordId, email: "wrong@example.org" }), 404, "not_found");
    assertErrorNoExtras(
      await adminPost(h, "/auth/admin/resend-verification-email", { recordId: "123456789012345", email: "right@example.org" }),
      404,
      "not_found",
    );
    assert.equal(await deliverWebhooks(h), 0);
  } finally {
    await h.close();
  }
});

test("require-password-change: status, sessions revoked, password login refused, reset clears it", async () => {
  const h = await createHarness();
  try {
    const email = "change@example.org";
    const recordId = await registerVerifiedMember(h, email);
    const cookie = sessionCookieOf(await login(h, email))!;
    assert.ok(cookie);

    const required = await adminPost(h, "/auth/admin/require-password-change", { recordId });
    assert.equal(required.statusCode, 200, required.body);
    assert.deepEqual(required.json(), { success: true, recordid: recordId, authentication_status: "Password Change Pending" });
    assertErrorNoExtras(await get(h, "/auth/session", { cookie }), 401, "unauthorized");

    const refused = await login(h, email);
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, "password_change_required");
    assert.equal(sessionCookieOf(refused), undefined);
    // D4: a wrong password still gets invalid_credentials, revealing no status.
    assert.equal((await login(h, email, "Wrong-Password-99")).json().code, "invalid_credentials");

    assert.equal((await forgotPassword(h, email)).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    const link = parseLink(h.receiver.last("password_reset").body.resetLink!);
    const reset = await resetPassword(h, link.recordId, link.token, OTHER_STRONG_PASSWORD);
    assert.equal(reset.statusCode, 200, reset.body);
    const ok = await login(h, email, OTHER_STRONG_PASSWORD);
    assert.equal(ok.statusCode, 200, ok.body);
    const session = await get(h, "/auth/session", { cookie: sessionCookieOf(ok)! });
    assert.equal(session.json().passwordChangePending, false);
  } finally {
    await h.close();
  }
});

test("require-password-change cannot unlock a locked member", async () => {
  const h = await createHarness();
  try {
    const email = "stay-locked@example.org";
    const recordId = await registerVerifiedMember(h, email);
    assert.equal((await adminPost(h, "/auth/lock-account", { recordId, action: "lock" })).statusCode, 200);
    const response = await adminPost(h, "/auth/admin/require-password-change", { recordId });
    assert.ok(response.statusCode < 500, response.body);
    assert.notEqual(response.statusCode, 200, "a locked member is not moved to Password Change Pending");
    assert.equal((await login(h, email)).json().code, "account_locked");
  } finally {
    await h.close();
  }
});

test("audit log: the member's events, newest first, with no secrets", async () => {
  const h = await createHarness();
  try {
    const email = "audit@example.org";
    const response = await post(h, "/auth/register-password", { email, name: "Audit Me", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
    assert.equal(response.statusCode, 200);
    await deliverWebhooks(h);
    const verifyLink = h.receiver.last("verify_email").body.verificationLink!;
    const { recordId, token: verifyToken } = parseLink(verifyLink);
    assert.equal((await post(h, "/auth/verify-email", { recordId, token: verifyToken })).statusCode, 200);
    h.clock.advance(1000);
    const loggedIn = await login(h, email);
    const sessionId = sessionCookieOf(loggedIn)!;
    h.clock.advance(1000);
    assert.equal((await login(h, email, "Wrong-Password-99")).statusCode, 401);
    h.clock.advance(1000);
    assert.equal((await forgotPassword(h, email)).statusCode, 200);
    await deliverWebhooks(h);
    const resetLink = h.receiver.last("password_reset").body.resetLink!;
    h.clock.advance(1000);
    assert.equal((await adminPost(h, "/auth/lock-account", { recordId, action: "lock" })).statusCode, 200);
    h.clock.advance(1000);
    assert.equal((await adminPost(h, "/auth/lock-account", { recordId, action: "unlock" })).statusCode, 200);

    const audit = await adminGet(h, `/auth/admin/audit-log?recordId=${recordId}`);
    assert.equal(audit.statusCode, 200, audit.body);
    const body = audit.json<{ success: boolean; recordid: string; events: { id: number; type: string; at: string }[] }>();
    assert.equal(body.success, true);
    assert.equal(body.recordid, recordId);
    const types = body.events.map((e) => e.type);
    assert.deepEqual(types, [
      "account_unlocked",
      "account_locked",
      "password_reset_requested",
      "login_failed",
      "login_succeeded",
      "email_verified",
      "registered",
    ]);
    // Newest first by id and by time.
    for (let i = 1; i < body.events.length; i++) {
      assert.ok(body.events[i - 1]!.id > body.events[i]!.id);
      assert.ok(Date.parse(body.events[i - 1]!.at) >= Date.parse(body.events[i]!.at));
    }
    for (const secret of [
      STRONG_PASSWORD,
      "Wrong-Password-99",
      verifyToken,
      verifyLink,
      parseLink(resetLink).token,
      resetLink,
      sessionId,
      internalApiKeyOf(h),
      h.tenant.webhookSecret,
    ]) {
      assert.ok(!audit.body.includes(secret), `audit log leaks a secret: ${secret.slice(0, 8)}...`);
    }

    const limited = await adminGet(h, `/auth/admin/audit-log?recordId=${recordId}&limit=2`);
    assert.deepEqual(
      limited.json<{ events: { type: string }[] }>().events.map((e) => e.type),
      ["account_unlocked", "account_locked"],
    );
    assertErrorNoExtras(await adminGet(h, "/auth/admin/audit-log"), 400, "validation_failed");
    assertErrorNoExtras(await adminGet(h, `/auth/admin/audit-log?recordId=${recordId}`, { key: null }), 401, "unauthorized");
  } finally {
    await h.close();
  }
});

test("operator: create tenant 201 with secrets once; duplicate 409; show leaves secrets out", async () => {
  const h = await createHarness();
  try {
    const settings = {
      ...receiverSettings(h),
      botProtection: { provider: "turnstile", secretKey: "turnstile-secret-DO-NOT-SHOW", siteKey: "site-key-public" },
    };
    const created = await operator(h, "POST", "/operator/tenants", { domain: "New.Example.com", settings });
    assert.equal(created.statusCode, 201, created.body);
    const body = created.json<Record<string, string>>();
    assert.equal(body.domain, "new.example.com");
    assert.equal(typeof body.applicationId, "string");
    assert.ok(body.applicationId!.length > 0);
    assert.match(body.webhookSecret!, /^whsec_[A-Za-z0-9+/=]+$/);
    assert.ok(Buffer.from(body.webhookSecret!.slice("whsec_".length), "base64").length >= 24);
    assert.match(body.internalApiKey!, /^\S{32,}$/);

    // The new key is an admin key for the new tenant (and finds no such member there).
    const adminCall = await adminPost(
      h,
      "/auth/lock-account",
      { recordId: "123456789012345", action: "lock" },
      { key: body.internalApiKey!, domain: "new.example.com" },
    );
    assertErrorNoExtras(adminCall, 404, "not_found");
    assertErrorNoExtras(
      await adminPost(h, "/auth/lock-account", { recordId: "123456789012345", action: "lock" }, { key: body.internalApiKey! }),
      403,
      "forbidden",
    );

    assertErrorNoExtras(await operator(h, "POST", "/operator/tenants", { domain: "new.example.com", settings: receiverSettings(h) }), 409, "conflict");
    assertErrorNoExtras(await operator(h, "POST", "/operator/tenants", { domain: h.tenant.domain, settings: receiverSettings(h) }), 409, "conflict");

    // Joining an existing application: no new key.
    const joined = await operator(h, "POST", "/operator/tenants", {
      domain: "join.example.com",
      applicationId: body.applicationId,
      settings: receiverSettings(h),
    });
    assert.equal(joined.statusCode, 201, joined.body);
    assert.equal(joined.json().applicationId, body.applicationId);
    assert.equal(joined.json().internalApiKey, undefined);
    assert.match(joined.json<Record<string, string>>().webhookSecret!, /^whsec_/);
    assert.notEqual(joined.json().webhookSecret, body.webhookSecret);

    const shown = await operator(h, "GET", "/operator/tenants/new.example.com");
    assert.equal(shown.statusCode, 200, shown.body);
    const view = shown.json<{ domain: string; applicationId: string; settings: { botProtection: Record<string, unknown>; sessionTier: string } }>();
    assert.equal(view.domain, "new.example.com");
    assert.equal(view.applicationId, body.applicationId);
    assert.equal(view.settings.botProtection.provider, "turnstile");
    assert.equal(view.settings.botProtection.siteKey, "site-key-public");
    assert.equal("secretKey" in view.settings.botProtection, false);
    assert.equal(view.settings.sessionTier, "1d");
    for (const secret of ["turnstile-secret-DO-NOT-SHOW", body.webhookSecret!, body.internalApiKey!]) assert.ok(!shown.body.includes(secret));
    assert.ok(!/webhookSecret|internalApiKey|apiKey/i.test(shown.body), shown.body);

    assertErrorNoExtras(await operator(h, "GET", "/operator/tenants/absent.example.com"), 404, "unknown_tenant");
  } finally {
    await h.close();
  }
});

test("operator: PATCH changes settings (sessionTier reaches the cookie) and rejects invalid ones", async () => {
  const h = await createHarness();
  try {
    await registerVerifiedMember(h, "tier@example.org");
    const patched = await operator(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings: { sessionTier: "15m" } });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(patched.json().settings.sessionTier, "15m");
    assert.equal(patched.json().settings.emailVerificationWebhook, `${h.receiver.url}/verify`, "a partial patch keeps the other settings");
    assert.equal((await operator(h, "GET", `/operator/tenants/${h.tenant.domain}`)).json().settings.sessionTier, "15m");
    const loggedIn = await login(h, "tier@example.org");
    assert.equal(loggedIn.cookies.find((c) => c.name === "session_id")?.maxAge, 15 * 60);

    for (const settings of [
      { sessionTier: "2h" },
      { sessionTier: 7 },
      { loginSuccessRedirect: "//evil.example" },
      { resetTokenTtlMinutes: 5 },
      { emailVerificationWebhook: "not a url" },
      { botProtection: { provider: "nope" } },
    ]) {
      assertErrorNoExtras(await operator(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings }), 400, "validation_failed");
    }
    assert.equal((await operator(h, "GET", `/operator/tenants/${h.tenant.domain}`)).json().settings.sessionTier, "15m", "refused patches change nothing");
    assertErrorNoExtras(await operator(h, "PATCH", "/operator/tenants/absent.example.com", { settings: { sessionTier: "1h" } }), 404, "unknown_tenant");
  } finally {
    await h.close();
  }
});

test("operator: PATCH with an unknown setting name is refused, not silently dropped", async () => {
  const h = await createHarness();
  try {
    const response = await operator(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings: { sesionTier: "15m" } });
    assertErrorNoExtras(response, 400, "validation_failed");
  } finally {
    await h.close();
  }
});

test("operator: rotate-key -> old key 401 at once, new key works", async () => {
  const h = await createHarness();
  try {
    const recordId = await registerVerifiedMember(h, "rotate@example.org");
    const oldKey = internalApiKeyOf(h);
    const rotated = await operator(h, "POST", `/operator/applications/${h.tenant.applicationId}/rotate-key`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const newKey = rotated.json<{ applicationId: string; internalApiKey: string }>().internalApiKey;
    assert.equal(rotated.json().applicationId, h.tenant.applicationId);
    assert.ok(newKey && newKey !== oldKey);

    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", { recordId, action: "lock" }, { key: oldKey }), 401, "unauthorized");
    assert.equal((await login(h, "rotate@example.org")).statusCode, 200, "the refused call locked nothing");
    const locked = await adminPost(h, "/auth/lock-account", { recordId, action: "lock" }, { key: newKey });
    assert.equal(locked.statusCode, 200, locked.body);
    assert.equal(locked.json().authentication_status, "Locked");

    assertErrorNoExtras(await operator(h, "POST", "/operator/applications/app_nope/rotate-key"), 404, "not_found");
  } finally {
    await h.close();
  }
});

function signatureMatches(secret: string, id: string, timestamp: string, body: string, header: string): boolean {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return header.split(" ").some((part) => part === `v1,${expected}`);
}

test("operator: rotate-webhook-secret -> the next delivery is signed with the new secret", async () => {
  const h = await createHarness();
  try {
    const oldSecret = h.tenant.webhookSecret;
    // Queued before the rotation, delivered after it.
    const reg = await post(h, "/auth/register-password", { email: "sig@example.org", name: "Sig", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
    assert.equal(reg.statusCode, 200);
    const rotated = await operator(h, "POST", `/operator/tenants/${h.tenant.domain}/rotate-webhook-secret`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const newSecret = rotated.json<{ webhookSecret: string }>().webhookSecret;
    assert.match(newSecret, /^whsec_/);
    assert.notEqual(newSecret, oldSecret);

    assert.equal(await deliverWebhooks(h), 1);
    const hook = h.receiver.last("verify_email");
    const [id, ts, sig] = [hook.headers["webhook-id"], hook.headers["webhook-timestamp"], hook.headers["webhook-signature"]].map(String) as [
      string,
      string,
      string,
    ];
    assert.ok(signatureMatches(newSecret, id, ts, hook.rawBody, sig), "signed with the new secret");
    assert.ok(!signatureMatches(oldSecret, id, ts, hook.rawBody, sig), "not with the old one");
  } finally {
    await h.close();
  }
});

test("operator: webhook-deliveries lists outcomes and never a link or token", async () => {
  const h = await createHarness();
  try {
    h.receiver.failNext = 1;
    const reg = await post(h, "/auth/register-password", { email: "list@example.org", name: "List", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
    assert.equal(reg.statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    h.clock.advance(60_000);
    assert.equal(await deliverWebhooks(h), 1);
    const hook = h.receiver.last("verify_email");
    const link = hook.body.verificationLink!;
    const { token } = parseLink(link);
    // A second, still pending row (forgot-password after verification).
    assert.equal((await post(h, "/auth/verify-email", { recordId: reg.json().recordid, token })).statusCode, 200);
    assert.equal((await forgotPassword(h, "list@example.org")).statusCode, 200);

    const listed = await operator(h, "GET", `/operator/tenants/${h.tenant.domain}/webhook-deliveries`);
    assert.equal(listed.statusCode, 200, listed.body);
    const deliveries = listed.json<{ deliveries: Record<string, unknown>[] }>().deliveries;
    assert.equal(deliveries.length, 2);
    for (const d of deliveries) {
      for (const field of ["id", "eventType", "status", "attempts", "lastError", "nextAttemptAt"]) assert.ok(field in d, `missing ${field}`);
    }
    const [reset, verify] = deliveries as [Record<string, unknown>, Record<string, unknown>];
    assert.equal(reset.eventType, "password_reset");
    assert.equal(reset.status, "pending");
    assert.equal(reset.attempts, 0);
    assert.equal(reset.lastError, null);
    assert.equal(typeof reset.nextAttemptAt, "string");
    assert.equal(verify.eventType, "verify_email");
    assert.equal(verify.id, hook.headers["webhook-id"]);
    assert.equal(verify.status, "delivered");
    assert.equal(verify.attempts, 2);
    assert.equal(verify.nextAttemptAt, null);

    assert.ok(!listed.body.includes(token), "no token");
    assert.ok(!listed.body.includes(`https://${h.tenant.domain}/`), "no link");
    assert.ok(!/(email-verified|reset-password|verify-magic-link)\//.test(listed.body), "no link path");
    assert.ok(!listed.body.includes("list@example.org"), "no payload fields");
    // The pending reset link never appears either.
    await deliverWebhooks(h);
    const resetToken = parseLink(h.receiver.last("password_reset").body.resetLink!).token;
    const again = await operator(h, "GET", `/operator/tenants/${h.tenant.domain}/webhook-deliveries`);
    assert.ok(!again.body.includes(resetToken));
    assertErrorNoExtras(await operator(h, "GET", "/operator/tenants/absent.example.com/webhook-deliveries"), 404, "unknown_tenant");
  } finally {
    await h.close();
  }
});

test("operator: wrong or missing operator key -> 401; member/admin keys are not operator keys", async () => {
  const h = await createHarness();
  try {
    for (const key of [null, "wrong-operator-key-0123456789abcdef-xyz", `${OPERATOR_KEY}x`, OPERATOR_KEY.slice(0, -1), internalApiKeyOf(h)]) {
      assertErrorNoExtras(await operator(h, "GET", `/operator/tenants/${h.tenant.domain}`, undefined, key), 401, "unauthorized");
      assertErrorNoExtras(
        await operator(h, "POST", "/operator/tenants", { domain: "sneaky.example.com", settings: receiverSettings(h) }, key),
        401,
        "unauthorized",
      );
      assertErrorNoExtras(await operator(h, "POST", `/operator/applications/${h.tenant.applicationId}/rotate-key`, undefined, key), 401, "unauthorized");
    }
    // Nothing was created or rotated.
    assertErrorNoExtras(await operator(h, "GET", "/operator/tenants/sneaky.example.com"), 404, "unknown_tenant");
    const recordId = await registerVerifiedMember(h, "still@example.org");
    assert.equal((await adminPost(h, "/auth/lock-account", { recordId, action: "lock" })).statusCode, 200, "the original key still works");
  } finally {
    await h.close();
  }
});

test("operator: without OPERATOR_API_KEY the operator API answers 404", async () => {
  const h = await createHarness({ env: { OPERATOR_API_KEY: "" } });
  try {
    assert.equal(h.config.operatorApiKey, undefined);
    for (const key of [OPERATOR_KEY, null, ""]) {
      assertErrorNoExtras(await operator(h, "GET", `/operator/tenants/${h.tenant.domain}`, undefined, key), 404, "not_found");
      assertErrorNoExtras(await operator(h, "POST", "/operator/tenants", { domain: "x.example.com", settings: receiverSettings(h) }, key), 404, "not_found");
      assertErrorNoExtras(await operator(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings: { sessionTier: "1h" } }, key), 404, "not_found");
      assertErrorNoExtras(await operator(h, "POST", `/operator/applications/${h.tenant.applicationId}/rotate-key`, undefined, key), 404, "not_found");
      assertErrorNoExtras(await operator(h, "POST", `/operator/tenants/${h.tenant.domain}/rotate-webhook-secret`, undefined, key), 404, "not_found");
      assertErrorNoExtras(await operator(h, "GET", `/operator/tenants/${h.tenant.domain}/webhook-deliveries`, undefined, key), 404, "not_found");
    }
  } finally {
    await h.close();
  }
});
