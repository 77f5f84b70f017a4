/**
 * The operator API (D3, D23), the family of src/flows/tenants/tenants.ts: create, show, update, rotate keys
 * and secrets, webhook deliveries, the operator key; list tenants and delete one with everything it holds. Runs on SQLite and
 * PostgreSQL (LATCH_TEST_STORE). Erasure is proven by reading every table for the tenant's id and
 * domain afterwards; the races (two deletions, a deletion and a tenant joining the application)
 * are interleaved at the store seam.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createTenant, updateTenantSettings } from "../src/flows/tenants/tenants.js";
import { enqueueWebhook } from "../src/events/outbox.js";
import { assertErrorNoExtras, ok } from "./support/assertions.js";
import { blockedOnLock, rowsHolding } from "./support/database.js";
import {
  adminPost,
  enrolTwoFactor,
  forgotPassword,
  internalApiKeyOf,
  nextIp,
  operatorHeaders,
  receiverSettings,
  storeTenantSettings,
  tenantIdOf,
  WRONG_PASSWORD,
} from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  OPERATOR_KEY,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";

const SAME_APP_DOMAIN = "second.example.com";
const OTHER_APP_DOMAIN = "elsewhere.example.net";

function operator(h: Harness, method: "GET" | "DELETE" | "POST", url: string, payload?: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return h.app.inject({ method, url, headers: operatorHeaders(), ...(payload && { payload }) });
}

async function applicationExists(h: Harness, id: string): Promise<boolean> {
  return (await h.db.selectFrom("applications").select("id").where("id", "=", id).executeTakeFirst()) !== undefined;
}

function deleteUrl(domain: string, confirm = domain): string {
  return `/operator/tenants/${domain}?confirm=${encodeURIComponent(confirm)}`;
}

test("D23 list: every tenant once, in domain order, a page at a time; no key or secret; bad cursor 400", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const domains = ["d.example.com", "a.example.com", "c.example.com", "b.example.com"];
  for (const domain of domains) await createTenant(h.deps, { domain, settings: receiverSettings(h) });
  const expected = [...domains, h.tenant.domain].sort();

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: { tenants: { domain: string; applicationId: string; createdAt: string }[]; nextCursor: string | null } = ok(
      await operator(h, "GET", `/operator/tenants?limit=2${cursor === null ? "" : `&cursor=${cursor}`}`),
    );
    assert.ok(page.tenants.length <= 2);
    for (const tenant of page.tenants) {
      assert.deepEqual(Object.keys(tenant).sort(), ["applicationId", "createdAt", "domain"]);
      assert.equal(tenant.createdAt, new Date(h.clock.now()).toISOString());
    }
    seen.push(...page.tenants.map((tenant) => tenant.domain));
    cursor = page.nextCursor;
    pages++;
  } while (cursor !== null);
  assert.deepEqual(seen, expected);
  assert.equal(pages, 3);

  const all = await operator(h, "GET", "/operator/tenants");
  assert.doesNotMatch(all.body, /whsec_|latch_|secret/i);
  assert.equal(ok<{ tenants: unknown[] }>(all).tenants.length, expected.length);

  assertErrorNoExtras(await operator(h, "GET", "/operator/tenants?cursor=bm90IGEgZG9tYWluIQ"), 400, "validation_failed");
  assertErrorNoExtras(await operator(h, "GET", "/operator/tenants?limit=-1"), 400, "validation_failed");
  assertErrorNoExtras(await h.app.inject({ method: "GET", url: "/operator/tenants" }), 401, "unauthorized");
});

test("D23 delete: every row of the tenant goes from every table, other tenants keep theirs, the application goes with its last tenant", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const domain = h.tenant.domain;
  const applicationId = h.tenant.applicationId;
  await createTenant(h.deps, { domain: SAME_APP_DOMAIN, applicationId, settings: receiverSettings(h) });
  const otherApp = await createTenant(h.deps, { domain: OTHER_APP_DOMAIN, settings: receiverSettings(h) });
  const tenantId = await tenantIdOf(h, domain);

  // The tenant to delete holds a member with 2FA, a lockout row, a waiting reset, deliveries and audit events.
  const email = "member@example.org";
  await registerVerifiedMember(h, email);
  const cookie = sessionCookieOf(await login(h, email))!;
  await enrolTwoFactor(h, cookie);
  assert.equal((await login(h, "member@example.org", WRONG_PASSWORD)).statusCode, 401);
  assert.equal((await forgotPassword(h, email)).statusCode, 200);
  // The same email in the two other tenants.
  for (const other of [SAME_APP_DOMAIN, OTHER_APP_DOMAIN]) {
    const res = await post(h, "/auth/register-password", { email, name: "Other", password: STRONG_PASSWORD }, { domain: other, ip: nextIp() });
    assert.equal(res.statusCode, 200, res.body);
  }
  await h.deps.background.drain();
  const held = await rowsHolding(h, { exact: [tenantId], contained: [domain] });
  assert.ok(held.length >= 12, held.join("\n"));
  const others = async () => ({
    same: await rowsHolding(h, { exact: [await tenantIdOf(h, SAME_APP_DOMAIN)] }),
    other: await rowsHolding(h, { exact: [await tenantIdOf(h, OTHER_APP_DOMAIN)] }),
  });
  const othersBefore = await others();
  assert.ok(othersBefore.same.length >= 2 && othersBefore.other.length >= 2);

  // A wrong or missing confirmation deletes nothing.
  assertErrorNoExtras(await operator(h, "DELETE", deleteUrl(domain, SAME_APP_DOMAIN)), 400, "validation_failed");
  assertErrorNoExtras(await operator(h, "DELETE", `/operator/tenants/${domain}`), 400, "validation_failed");
  assert.deepEqual(await rowsHolding(h, { exact: [tenantId], contained: [domain] }), held);

  const deleted = ok(await operator(h, "DELETE", deleteUrl(domain, domain.toUpperCase())));
  assert.deepEqual(deleted, { success: true, domain, applicationId, applicationDeleted: false });
  assert.deepEqual(await rowsHolding(h, { exact: [tenantId], contained: [domain] }), []);
  assert.deepEqual(await others(), othersBefore);
  assert.ok(await applicationExists(h, applicationId), "the second tenant still uses the application");

  // The tenant is gone for every caller; the application's key still works for its other tenant.
  const refused = await login(h, email);
  assert.equal(refused.statusCode, 404);
  assert.equal(refused.json<{ code: string }>().code, "unknown_tenant");
  assertErrorNoExtras(await get(h, "/auth/session", { cookie }), 404, "unknown_tenant");
  assertErrorNoExtras(await operator(h, "GET", `/operator/tenants/${domain}`), 404, "unknown_tenant");
  assertErrorNoExtras(await operator(h, "DELETE", deleteUrl(domain)), 404, "unknown_tenant");
  const listed = await h.app.inject({
    method: "GET",
    url: "/auth/admin/members",
    headers: { "x-tenant-domain": SAME_APP_DOMAIN, authorization: `Bearer ${internalApiKeyOf(h)}` },
  });
  assert.equal(listed.statusCode, 200, listed.body);

  // The application's last tenant takes the application and its key with it.
  assert.deepEqual(ok(await operator(h, "DELETE", deleteUrl(SAME_APP_DOMAIN))), {
    success: true,
    domain: SAME_APP_DOMAIN,
    applicationId,
    applicationDeleted: true,
  });
  assert.equal(await applicationExists(h, applicationId), false);
  assert.ok(await applicationExists(h, otherApp.applicationId));
  assert.deepEqual(
    ok<{ tenants: { domain: string }[] }>(await operator(h, "GET", "/operator/tenants")).tenants.map((x) => x.domain),
    [OTHER_APP_DOMAIN],
  );
  // The domain can be onboarded again, as a new tenant.
  const again = await operator(h, "POST", "/operator/tenants", { domain, settings: receiverSettings(h) });
  assert.equal(again.statusCode, 201, again.body);
  assert.notEqual(await tenantIdOf(h, domain), tenantId);
});

test("D23 delete: an event queued for the tenant by an instance that still had it cached is dropped by the dispatcher, not retried", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const tenant = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!;
  ok(await operator(h, "DELETE", deleteUrl(tenant.domain)));
  await h.deps.store.transaction((tx) =>
    enqueueWebhook(tx, h.deps, tenant, "member.deleted", `${h.receiver.url}/events`, { recordid: "1", at: "x" }, h.clock.now()),
  );
  const received = h.receiver.received.length;
  await deliverWebhooks(h);
  assert.equal(h.receiver.received.length, received);
  assert.deepEqual(await rowsHolding(h, { exact: [tenant.id] }), []);
  assert.ok(h.logs.some((line) => line.includes("webhook dropped: its tenant was deleted")));
});

test("D23 race: the same tenant deleted twice at once: one success, one 404, never two", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "member@example.org");
  const seam = installStoreSeam(h);
  // The second call has found the tenant and waits before its transaction; the first runs to the end.
  const held = seam.pause("tenants.findTenantByDomain", { when: "after" });
  const second = operator(h, "DELETE", deleteUrl(h.tenant.domain));
  await held.reached;
  ok(await operator(h, "DELETE", deleteUrl(h.tenant.domain)));
  held.release();
  assertErrorNoExtras(await second, 404, "unknown_tenant");
});

test("D23 race: the last two tenants of an application deleted at once take the application with them", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const applicationId = h.tenant.applicationId;
  await createTenant(h.deps, { domain: SAME_APP_DOMAIN, applicationId, settings: receiverSettings(h) });
  const seam = installStoreSeam(h);
  // The first deletion has deleted its tenant and decided, uncommitted, that the application is still shared.
  const first = seam.pause("tenants.deleteTenant", { when: "after" });
  const firstDone = operator(h, "DELETE", deleteUrl(h.tenant.domain));
  await first.reached;
  // The second is let go when it waits on the application's lock (PostgreSQL) or has decided too
  // (what a store without the lock would do); on SQLite it waits for the one writer.
  const second = seam.pause("tenants.deleteTenant", { when: "after" });
  const secondDone = operator(h, "DELETE", deleteUrl(SAME_APP_DOMAIN));
  if (h.storeKind === "postgres") await Promise.race([second.reached, blockedOnLock(h)]);
  first.release();
  second.release();
  const answers = [ok<{ applicationDeleted: boolean }>(await firstDone), ok<{ applicationDeleted: boolean }>(await secondDone)];
  assert.deepEqual(answers.map((a) => a.applicationDeleted).sort(), [false, true]);
  assert.equal(await applicationExists(h, applicationId), false, "no application is left without tenants");
});

test("D23 race: a tenant joining an application while its last tenant is deleted gets 404, never a 500 or a tenant without application", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const applicationId = h.tenant.applicationId;
  const seam = installStoreSeam(h);
  const deletion = seam.pause("tenants.deleteTenant", { when: "after" });
  const deleted = operator(h, "DELETE", deleteUrl(h.tenant.domain));
  await deletion.reached;
  const joined = operator(h, "POST", "/operator/tenants", { domain: SAME_APP_DOMAIN, applicationId, settings: receiverSettings(h) });
  if (h.storeKind === "postgres") await blockedOnLock(h);
  deletion.release();
  assert.equal(ok<{ applicationDeleted: boolean }>(await deleted).applicationDeleted, true);
  assertErrorNoExtras(await joined, 404, "not_found");
  assert.equal(await h.deps.store.tenants.findTenantByDomain(SAME_APP_DOMAIN), undefined);
  assert.equal(await applicationExists(h, applicationId), false);
});

/** An operator call with any method, and the key given (null: none), for the checks of the key itself. */
function operatorCall(
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

test("operator: create tenant 201 with secrets once; duplicate 409; show leaves secrets out", async () => {
  const h = await createHarness();
  try {
    const settings = {
      ...receiverSettings(h),
      botProtection: { provider: "turnstile", secretKey: "turnstile-secret-DO-NOT-SHOW", siteKey: "site-key-public" },
    };
    const created = await operatorCall(h, "POST", "/operator/tenants", { domain: "New.Example.com", settings });
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

    assertErrorNoExtras(await operatorCall(h, "POST", "/operator/tenants", { domain: "new.example.com", settings: receiverSettings(h) }), 409, "conflict");
    assertErrorNoExtras(await operatorCall(h, "POST", "/operator/tenants", { domain: h.tenant.domain, settings: receiverSettings(h) }), 409, "conflict");

    // Joining an existing application: no new key.
    const joined = await operatorCall(h, "POST", "/operator/tenants", {
      domain: "join.example.com",
      applicationId: body.applicationId,
      settings: receiverSettings(h),
    });
    assert.equal(joined.statusCode, 201, joined.body);
    assert.equal(joined.json().applicationId, body.applicationId);
    assert.equal(joined.json().internalApiKey, undefined);
    assert.match(joined.json<Record<string, string>>().webhookSecret!, /^whsec_/);
    assert.notEqual(joined.json().webhookSecret, body.webhookSecret);

    const shown = await operatorCall(h, "GET", "/operator/tenants/new.example.com");
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

    assertErrorNoExtras(await operatorCall(h, "GET", "/operator/tenants/absent.example.com"), 404, "unknown_tenant");
  } finally {
    await h.close();
  }
});

test("operator: PATCH changes settings (sessionTier reaches the cookie) and rejects invalid ones", async () => {
  const h = await createHarness();
  try {
    await registerVerifiedMember(h, "tier@example.org");
    const patched = await operatorCall(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings: { sessionTier: "15m" } });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal(patched.json().settings.sessionTier, "15m");
    assert.equal(patched.json().settings.emailVerificationWebhook, `${h.receiver.url}/verify`, "a partial patch keeps the other settings");
    assert.equal((await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}`)).json().settings.sessionTier, "15m");
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
      assertErrorNoExtras(await operatorCall(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings }), 400, "validation_failed");
    }
    assert.equal((await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}`)).json().settings.sessionTier, "15m", "refused patches change nothing");
    assertErrorNoExtras(await operatorCall(h, "PATCH", "/operator/tenants/absent.example.com", { settings: { sessionTier: "1h" } }), 404, "unknown_tenant");
  } finally {
    await h.close();
  }
});

test("operator: PATCH with an unknown setting name is refused, not silently dropped", async () => {
  const h = await createHarness();
  try {
    const response = await operatorCall(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings: { sesionTier: "15m" } });
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
    const rotated = await operatorCall(h, "POST", `/operator/applications/${h.tenant.applicationId}/rotate-key`);
    assert.equal(rotated.statusCode, 200, rotated.body);
    const newKey = rotated.json<{ applicationId: string; internalApiKey: string }>().internalApiKey;
    assert.equal(rotated.json().applicationId, h.tenant.applicationId);
    assert.ok(newKey && newKey !== oldKey);

    assertErrorNoExtras(await adminPost(h, "/auth/lock-account", { recordId, action: "lock" }, { key: oldKey }), 401, "unauthorized");
    assert.equal((await login(h, "rotate@example.org")).statusCode, 200, "the refused call locked nothing");
    const locked = await adminPost(h, "/auth/lock-account", { recordId, action: "lock" }, { key: newKey });
    assert.equal(locked.statusCode, 200, locked.body);
    assert.equal(locked.json().authentication_status, "Locked");

    assertErrorNoExtras(await operatorCall(h, "POST", "/operator/applications/app_nope/rotate-key"), 404, "not_found");
  } finally {
    await h.close();
  }
});

function signatureMatches(secret: string, id: string, timestamp: string, body: string, header: string): boolean {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
  return header.split(" ").some((part) => part === `v1,${expected}`);
}

test("operator: rotate-webhook-secret -> the next delivery is signed with the new secret, and with the old one while its window lasts", async () => {
  const h = await createHarness();
  try {
    const oldSecret = h.tenant.webhookSecret;
    // Queued before the rotation, delivered after it.
    const reg = await post(h, "/auth/register-password", { email: "sig@example.org", name: "Sig", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
    assert.equal(reg.statusCode, 200);
    const rotated = await operatorCall(h, "POST", `/operator/tenants/${h.tenant.domain}/rotate-webhook-secret`);
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
    assert.ok(signatureMatches(oldSecret, id, ts, hook.rawBody, sig), "and with the old one: the rotation window (test/webhook-rotation.test.ts)");
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

    const listed = await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}/webhook-deliveries`);
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
    const again = await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}/webhook-deliveries`);
    assert.ok(!again.body.includes(resetToken));
    assertErrorNoExtras(await operatorCall(h, "GET", "/operator/tenants/absent.example.com/webhook-deliveries"), 404, "unknown_tenant");
  } finally {
    await h.close();
  }
});

test("operator: wrong or missing operator key -> 401; member/admin keys are not operator keys", async () => {
  const h = await createHarness();
  try {
    for (const key of [null, "wrong-operator-key-0123456789abcdef-xyz", `${OPERATOR_KEY}x`, OPERATOR_KEY.slice(0, -1), internalApiKeyOf(h)]) {
      assertErrorNoExtras(await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}`, undefined, key), 401, "unauthorized");
      assertErrorNoExtras(
        await operatorCall(h, "POST", "/operator/tenants", { domain: "sneaky.example.com", settings: receiverSettings(h) }, key),
        401,
        "unauthorized",
      );
      assertErrorNoExtras(await operatorCall(h, "POST", `/operator/applications/${h.tenant.applicationId}/rotate-key`, undefined, key), 401, "unauthorized");
    }
    // Nothing was created or rotated.
    assertErrorNoExtras(await operatorCall(h, "GET", "/operator/tenants/sneaky.example.com"), 404, "unknown_tenant");
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
      assertErrorNoExtras(await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}`, undefined, key), 404, "not_found");
      assertErrorNoExtras(
        await operatorCall(h, "POST", "/operator/tenants", { domain: "x.example.com", settings: receiverSettings(h) }, key),
        404,
        "not_found",
      );
      assertErrorNoExtras(await operatorCall(h, "PATCH", `/operator/tenants/${h.tenant.domain}`, { settings: { sessionTier: "1h" } }, key), 404, "not_found");
      assertErrorNoExtras(await operatorCall(h, "POST", `/operator/applications/${h.tenant.applicationId}/rotate-key`, undefined, key), 404, "not_found");
      assertErrorNoExtras(await operatorCall(h, "POST", `/operator/tenants/${h.tenant.domain}/rotate-webhook-secret`, undefined, key), 404, "not_found");
      assertErrorNoExtras(await operatorCall(h, "GET", `/operator/tenants/${h.tenant.domain}/webhook-deliveries`, undefined, key), 404, "not_found");
    }
  } finally {
    await h.close();
  }
});

const PLAIN_HTTP_ORIGINS = [
  "http://app.example.org",
  "http://members.example.com",
  "http://localhost.evil.example",
  "http://127.0.0.2",
  "http://127.0.0.1.evil.example",
  "http://[::2]",
  "http://localhost@evil.example",
  "ftp://app.example.org",
  "https://app.example.org/",
];
const LOOPBACK_ORIGINS = ["http://localhost", "http://localhost:5173", "http://127.0.0.1:8080", "http://[::1]", "http://[::1]:3000"];

test("D30: allowedOrigins are https, http only on localhost, 127.0.0.1 or [::1] (any port): refused at create and update by the operator API and by the flows the CLI calls", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const url = `/operator/tenants/${h.tenant.domain}`;
  for (const origin of PLAIN_HTTP_ORIGINS) {
    const created = await operatorCall(h, "POST", "/operator/tenants", {
      domain: "fresh.example.com",
      settings: { ...receiverSettings(h), allowedOrigins: ["https://app.example.org", origin] },
    });
    const body = assertErrorNoExtras(created, 400, "validation_failed");
    assert.deepEqual(
      (body.details as { field: string }[]).map((d) => d.field),
      ["settings.allowedOrigins.1"],
      `${origin}: ${created.body}`,
    );
    assertErrorNoExtras(await operatorCall(h, "PATCH", url, { settings: { allowedOrigins: [origin] } }), 400, "validation_failed");
    // The CLI's `tenant create` and `tenant update` call these flows, which check the same schema.
    await assert.rejects(
      createTenant(h.deps, { domain: "cli.example.com", settings: { ...receiverSettings(h), allowedOrigins: [origin] } }),
      (error: { code?: string }) => error.code === "validation_failed",
      origin,
    );
    await assert.rejects(
      updateTenantSettings(h.deps, h.tenant.domain, { allowedOrigins: [origin] }),
      (error: { code?: string }) => error.code === "validation_failed",
      origin,
    );
  }
  assert.equal((await operatorCall(h, "GET", "/operator/tenants/fresh.example.com")).statusCode, 404, "no tenant was created");
  assert.deepEqual((await operatorCall(h, "GET", url)).json().settings.allowedOrigins, [], "no refused update changed anything");

  const allowed = ["https://app.example.org", "https://app.example.org:8443", ...LOOPBACK_ORIGINS];
  const patched = await operatorCall(h, "PATCH", url, { settings: { allowedOrigins: allowed } });
  assert.equal(patched.statusCode, 200, patched.body);
  assert.deepEqual(patched.json().settings.allowedOrigins, allowed);
});

test("D30: an http allowedOrigins entry stored before the rule is ignored (no CORS grant, the cookie's origin check refuses it) until an update replaces it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "stale@example.org");
  const cookie = sessionCookieOf(await login(h, "stale@example.org", undefined, { ip: nextIp() }))!;
  await storeTenantSettings(h, { allowedOrigins: ["http://app.example.org", "https://app.example.org"] });
  const preflight = (origin: string) =>
    h.app.inject({
      method: "OPTIONS",
      url: "/auth/session",
      headers: { host: h.tenant.domain, origin, "access-control-request-method": "GET" },
    });

  const stale = await preflight("http://app.example.org");
  assertErrorNoExtras(stale, 403, "origin_mismatch");
  assert.equal(stale.headers["access-control-allow-origin"], undefined);
  const session = await get(h, "/auth/session", { cookie, headers: { origin: "http://app.example.org" } });
  assertErrorNoExtras(session, 403, "origin_mismatch");
  assert.equal(session.headers["access-control-allow-origin"], undefined);
  // The https entry beside it works as before.
  assert.equal((await preflight("https://app.example.org")).statusCode, 204);
  const listed = await get(h, "/auth/session", { cookie, headers: { origin: "https://app.example.org" } });
  assert.equal(listed.statusCode, 200, listed.body);
  assert.equal(listed.headers["access-control-allow-origin"], "https://app.example.org");

  // Any settings update validates the whole settings, so it names the stale entry until it is replaced.
  const url = `/operator/tenants/${h.tenant.domain}`;
  const refused = assertErrorNoExtras(await operatorCall(h, "PATCH", url, { settings: { sessionTier: "1h" } }), 400, "validation_failed");
  assert.deepEqual(
    (refused.details as { field: string }[]).map((d) => d.field),
    ["settings.allowedOrigins.0"],
  );
  const replaced = await operatorCall(h, "PATCH", url, { settings: { sessionTier: "1h", allowedOrigins: ["https://app.example.org"] } });
  assert.equal(replaced.statusCode, 200, replaced.body);
});
