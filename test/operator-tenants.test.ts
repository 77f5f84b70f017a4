/**
 * D23: the operator lists tenants and deletes one with everything it holds. Runs on SQLite and
 * PostgreSQL (LATCH_TEST_STORE). Erasure is proven by reading every table for the tenant's id and
 * domain afterwards; the races (two deletions, a deletion and a tenant joining the application)
 * are interleaved at the store seam.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { createTenant } from "../src/flows/tenants.js";
import { enqueueWebhook } from "../src/events/outbox.js";
import { assertErrorNoExtras } from "./support/assertions.js";
import { blockedOnLock, rowsHolding } from "./support/database.js";
import { enrolTwoFactor, forgotPassword, internalApiKeyOf, nextIp, operatorHeaders, receiverSettings, WRONG_PASSWORD } from "./support/flows.js";
import { createHarness, deliverWebhooks, get, login, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";

const SAME_APP_DOMAIN = "second.example.com";
const OTHER_APP_DOMAIN = "elsewhere.example.net";

function operator(h: Harness, method: "GET" | "DELETE" | "POST", url: string, payload?: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return h.app.inject({ method, url, headers: operatorHeaders(), ...(payload && { payload }) });
}

function ok<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  assert.equal(response.statusCode, 200, response.body);
  return response.json<T>();
}

async function tenantIdOf(h: Harness, domain: string): Promise<string> {
  const tenant = await h.deps.store.tenants.findTenantByDomain(domain);
  assert.ok(tenant, domain);
  return tenant.id;
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
