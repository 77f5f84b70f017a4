/**
 * D25 lifecycle events: with `eventsWebhook` set, a member's life reaches the tenant as signed
 * webhooks through the outbox: member.created when the email is verified (or a reset proves it),
 * member.updated when the status, name or email changes (with `changes`), member.deleted, and
 * session.created with the session's public id. No body holds a secret or an email; a tenant
 * without the setting gets none of them. And the retention of pending accounts.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { DAY } from "../src/core/clock.js";
import { signWebhook } from "../src/events/webhook-sender.js";
import { erasePendingAccounts } from "../src/flows/kernel/erasure.js";
import { rowsHolding } from "./support/database.js";
import { installStoreSeam } from "./support/store-seam.js";
import { adminHeaders, lockMember, nextIp, registerPending, requestResetLink, storeTenantSettings } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  OTHER_STRONG_PASSWORD,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  type Harness,
} from "./support/harness.js";

const EMAIL = "events@example.org";

async function withEvents(t: { after(fn: () => Promise<void>): void }): Promise<Harness> {
  const h = await createHarness();
  t.after(() => h.close());
  await storeTenantSettings(h, { eventsWebhook: `${h.receiver.url}/events` });
  return h;
}

async function eventsSince(h: Harness, from: number): Promise<Record<string, unknown>[]> {
  await deliverWebhooks(h);
  return h.receiver.received
    .slice(from)
    .filter((w) => w.path === "/events")
    .map((w) => w.body as Record<string, unknown>);
}

test("D25: created on verification, session.created on login, updated on each status change, deleted on erasure; signed; no email or secret in any body", async (t) => {
  const h = await withEvents(t);
  const recordId = await registerVerifiedMember(h, EMAIL);
  let seen = 0;
  const next = async () => {
    const events = await eventsSince(h, seen);
    seen = h.receiver.received.length;
    return events;
  };
  assert.deepEqual(await next(), [{ event_type: "member.created", recordid: recordId, at: new Date(h.clock.now()).toISOString() }]);

  const cookie = sessionCookieOf(await login(h, EMAIL, undefined, { ip: nextIp() }))!;
  const [created] = await next();
  const publicId = (await get(h, "/auth/sessions", { cookie })).json<{ sessions: { id: string }[] }>().sessions[0]!.id;
  assert.deepEqual(created, { event_type: "session.created", recordid: recordId, at: new Date(h.clock.now()).toISOString(), session: publicId });

  await lockMember(h, recordId);
  assert.deepEqual((await post(h, "/auth/lock-account", { recordId, action: "unlock" }, { headers: adminHeaders(h) })).statusCode, 200);
  assert.equal((await post(h, "/auth/admin/require-password-change", { recordId }, { headers: adminHeaders(h) })).statusCode, 200);
  const reset = await requestResetLink(h, EMAIL);
  assert.equal((await post(h, "/auth/reset-password", { recordId, token: reset.token, newPassword: OTHER_STRONG_PASSWORD })).statusCode, 200);
  const updates = await next();
  assert.deepEqual(
    updates.map((e) => [e.event_type, e.changes]),
    [
      ["member.updated", ["status"]], // locked
      ["member.updated", ["status"]], // unlocked
      ["member.updated", ["status"]], // password change pending
      ["member.updated", ["status"]], // the reset made it active again
    ],
  );
  // A lock of a locked account changes nothing and says nothing.
  await lockMember(h, recordId);
  await lockMember(h, recordId);
  assert.equal((await next()).length, 1);
  const erased = await h.app.inject({
    method: "DELETE",
    url: `/auth/admin/members/${recordId}`,
    headers: { "x-tenant-domain": h.tenant.domain, ...adminHeaders(h) },
  });
  assert.equal(erased.statusCode, 200, erased.body);
  assert.deepEqual(
    (await next()).map((e) => [e.event_type, e.recordid]),
    [["member.deleted", recordId]],
  );

  const deliveries = h.receiver.received.filter((w) => w.path === "/events");
  for (const hook of deliveries) {
    assert.ok(!hook.rawBody.includes(EMAIL) && !hook.rawBody.includes(cookie), "no email, no cookie");
    const [id, ts] = [String(hook.headers["webhook-id"]), Number(hook.headers["webhook-timestamp"])];
    assert.equal(hook.headers["webhook-signature"], signWebhook(h.tenant.webhookSecret, id, ts, hook.rawBody), "signed like every webhook (D9)");
  }
});

test("D25: a reset link that verifies a pending account creates the member; a tenant without eventsWebhook gets no lifecycle event", async (t) => {
  const h = await withEvents(t);
  const res = await post(
    h,
    "/auth/register-password",
    { email: EMAIL, name: "Pending", password: OTHER_STRONG_PASSWORD, "bot-challenge-response": "x" },
    { ip: nextIp() },
  );
  assert.equal(res.statusCode, 200, res.body);
  const reset = await requestResetLink(h, EMAIL);
  const before = h.receiver.received.length;
  assert.equal((await post(h, "/auth/reset-password", { recordId: reset.recordId, token: reset.token, newPassword: OTHER_STRONG_PASSWORD })).statusCode, 200);
  assert.deepEqual(
    (await eventsSince(h, before)).map((e) => e.event_type),
    ["member.created"],
  );

  const plain = await createHarness();
  t.after(() => plain.close());
  await registerVerifiedMember(plain, EMAIL);
  await login(plain, EMAIL);
  await deliverWebhooks(plain);
  assert.deepEqual(
    plain.receiver.received.map((w) => w.body.event_type),
    ["verify_email"],
  );
});

test("D25 retention: a pending account is erased once its last link has been expired PENDING_RETENTION_DAYS; a resend extends it; a verified member stays; decided again on the locked row", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const retention = 7 * DAY;
  const register = async (email: string) => (await registerPending(h, email, OTHER_STRONG_PASSWORD, { name: "Pending" })).recordId;
  const stale = await register("stale@example.org");
  const resent = await register("resent@example.org");
  const raced = await register("raced@example.org");
  const member = await registerVerifiedMember(h, "member@example.org");
  const exists = async (recordId: string) =>
    (await h.db.selectFrom("members").select("id").where("id", "=", Number(recordId)).executeTakeFirst()) !== undefined;

  // Day 5: a resend for one of them (a new 24 h link).
  h.clock.advance(5 * DAY);
  assert.equal((await post(h, "/auth/resend-verification", { email: "resent@example.org", "bot-challenge-response": "x" }, { ip: nextIp() })).statusCode, 200);

  // The first links expire at day 1: a minute short of day 8, nothing goes.
  h.clock.advance(3 * DAY - 60_000);
  assert.equal(await erasePendingAccounts(h.deps, h.clock.now(), retention), 0);

  // Day 8: the link of `raced` is resent while the sweep has listed it and not yet erased it.
  h.clock.advance(60_000);
  const seam = installStoreSeam(h);
  const listed = seam.pause("members.listExpiredPending", { when: "after" });
  const sweeping = erasePendingAccounts(h.deps, h.clock.now(), retention);
  await listed.reached;
  assert.equal((await post(h, "/auth/resend-verification", { email: "raced@example.org", "bot-challenge-response": "x" }, { ip: nextIp() })).statusCode, 200);
  listed.release();
  assert.equal(await sweeping, 1, "only the stale account goes");
  assert.deepEqual([await exists(stale), await exists(resent), await exists(raced), await exists(member)], [false, true, true, true]);
  assert.deepEqual(await rowsHolding(h, { exact: [stale], contained: ["stale@example.org"] }), [], "no row keeps the stale account");

  // The resent link expired at day 6; its account goes at day 13.
  h.clock.advance(5 * DAY - 60_000);
  assert.equal(await erasePendingAccounts(h.deps, h.clock.now(), retention), 0);
  h.clock.advance(60_000);
  assert.equal(await erasePendingAccounts(h.deps, h.clock.now(), retention), 1);
  assert.equal(await exists(resent), false);
  assert.equal(await exists(member), true, "a verified member is never a pending account");
});

test("D25: lockout and limit rows key an email (and an IP) by a keyed hash: neither the value nor its plain SHA-256 is stored; lockouts kept in clear by an older version are re-keyed", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const email = "keyed@example.org";
  const ip = "198.51.100.77";
  await registerVerifiedMember(h, email);
  assert.equal((await login(h, email, "Wrong-Guess-99-Pass", { ip })).statusCode, 401);
  assert.equal((await post(h, "/auth/forgot-password", { email, "bot-challenge-response": "x" }, { ip })).statusCode, 200);
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  const plain = [email, ip].flatMap((v) => [v, createHash("sha256").update(v).digest("hex").slice(0, 32)]);
  const found = await rowsHolding(h, { contained: plain });
  const lockoutsAndLimits = found.filter((row) => /^(login_lockouts|rate_limit_counters|rate_limit_sets):/.test(row));
  assert.deepEqual(lockoutsAndLimits, [], "no lockout or limit row names the email or the IP, hashed plainly or not");
  assert.equal((await h.deps.store.limits.findLockout(tenantId, email))?.failures, 1, "the lockout is still found by email");

  const now = h.clock.now();
  await h.db
    .insertInto("login_lockouts")
    .values({ tenant_id: tenantId, subject: "legacy@example.org", failures: 2, level: 0, locked_until: 0, in_flight: 0, in_flight_until: 0, updated_at: now })
    .execute();
  assert.equal(await h.deps.store.limits.rekeyClearLockouts(), 1);
  assert.equal((await h.deps.store.limits.findLockout(tenantId, "legacy@example.org"))?.failures, 2, "the running count survives the re-keying");
  assert.deepEqual(await rowsHolding(h, { contained: ["legacy@example.org"] }), []);
  assert.equal(await h.deps.store.limits.rekeyClearLockouts(), 0, "nothing left to re-key");
});
