// Admin endpoints (spec 4.5, 5.1, D3, D5, D15), through the real app on a real SQLite file. The operator API is in tenants.test.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTenant } from "../src/flows/tenants/tenants.js";
import { assertErrorNoExtras, assertMessageSuccess } from "./support/assertions.js";
import { adminGet, adminPost, forgotPassword, internalApiKeyOf, receiverSettings, registerPending, resetPassword } from "./support/flows.js";
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
} from "./support/harness.js";

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

test("D30: the Bearer scheme is matched case-insensitively (RFC 9110), for the admin and the operator API alike", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "scheme@example.org");
  for (const scheme of ["bearer", "BEARER", "bEaReR"]) {
    const res = await h.app.inject({
      method: "GET",
      url: `/auth/admin/audit-log?recordId=${recordId}`,
      headers: { "x-tenant-domain": h.tenant.domain, authorization: `${scheme} ${internalApiKeyOf(h)}` },
    });
    assert.equal(res.statusCode, 200, `${scheme}: ${res.body}`);
    const operator = await h.app.inject({
      method: "GET",
      url: `/operator/tenants/${h.tenant.domain}`,
      headers: { authorization: `${scheme} ${OPERATOR_KEY}` },
    });
    assert.equal(operator.statusCode, 200, `${scheme}: ${operator.body}`);
  }
  // Only the scheme's case is free: another scheme, or the key's case changed, is still refused.
  for (const authorization of [`Basic ${internalApiKeyOf(h)}`, `bearer ${internalApiKeyOf(h).toUpperCase()}`, `Bearer${internalApiKeyOf(h)}`]) {
    const res = await h.app.inject({
      method: "GET",
      url: `/auth/admin/audit-log?recordId=${recordId}`,
      headers: { "x-tenant-domain": h.tenant.domain, authorization },
    });
    assertErrorNoExtras(res, 401, "unauthorized");
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
    const { recordId } = await registerPending(h, email);
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
    const { recordId } = await registerPending(h, "long@example.org");
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
    const { recordId } = await registerPending(h, "right@example.org");
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
