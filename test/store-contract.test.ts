/**
 * The store contract: what every store implementation must guarantee, above all that no read,
 * update or consume crosses tenants (STYLE habit 4). Written as a suite over a store factory so
 * the PostgreSQL twin runs the same cases.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { TenantSettings } from "../src/model.js";
import { noLockout } from "../src/security/lockout.js";
import { TEST_DATABASE_URL } from "./support/postgres.js";
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

export function storeContract(name: string, makeStore: () => Promise<MadeStore>): void {
  describe(`store contract: ${name}`, () => {
    const now = 1_000_000;
    async function twoTenants() {
      const made = await makeStore();
      const { store } = made;
      await store.tenants.createApplication("app_a", "a".repeat(64), now);
      await store.tenants.createApplication("app_b", "b".repeat(64), now);
      await store.tenants.createTenant({ id: "ten_a", domain: "a.example", applicationId: "app_a", settings, webhookSecretEnc: "x" }, now);
      await store.tenants.createTenant({ id: "ten_b", domain: "b.example", applicationId: "app_b", settings, webhookSecretEnc: "x" }, now);
      const member = {
        recordId: 100000000000001,
        email: "same@example.org",
        name: "A",
        passwordHash: null,
        passwordSalt: null,
        authenticationType: "Password" as const,
      };
      assert.ok(await store.members.insertMember("ten_a", member, now));
      assert.ok(await store.members.insertMember("ten_b", { ...member, name: "B" }, now), "the same email and id in another tenant is another member");
      return made;
    }

    test("members: email unique per tenant, reads and updates scoped to the tenant", async (t) => {
      const { store, dispose } = await twoTenants();
      t.after(dispose);
      assert.equal(
        await store.members.insertMember(
          "ten_a",
          { recordId: 100000000000002, email: "same@example.org", name: "dup", passwordHash: null, passwordSalt: null, authenticationType: "Password" },
          now,
        ),
        false,
      );
      assert.equal((await store.members.findMemberByEmail("ten_a", "same@example.org"))!.name, "A");
      assert.equal((await store.members.findMemberByEmail("ten_b", "same@example.org"))!.name, "B");
      assert.equal(await store.members.updateStatus("ten_a", 100000000000001, "Unlocked", "Locked", now), false, "only from the state it was decided on (D20)");
      assert.equal(await store.members.updateStatus("ten_a", 100000000000001, "Email Verification Pending", "Locked", now), true);
      assert.equal((await store.members.findMemberById("ten_a", 100000000000001))!.status, "Locked");
      assert.equal((await store.members.findMemberById("ten_b", 100000000000001))!.status, "Email Verification Pending");
    });

    test("tokens: consumed once, never across tenants, never after expiry", async (t) => {
      const { store, dispose } = await twoTenants();
      t.after(dispose);
      await store.tokens.replaceToken("ten_a", 100000000000001, "verify_email", "h1", now, now + 1000);
      assert.equal(await store.tokens.consumeToken("ten_b", 100000000000001, "verify_email", "h1", now), false, "other tenant");
      assert.equal(await store.tokens.consumeToken("ten_a", 100000000000001, "password_reset", "h1", now), false, "other kind");
      assert.equal(await store.tokens.consumeToken("ten_a", 100000000000001, "verify_email", "h1", now + 1000), false, "expired");
      const results = await Promise.all(Array.from({ length: 10 }, () => store.tokens.consumeToken("ten_a", 100000000000001, "verify_email", "h1", now)));
      assert.equal(results.filter(Boolean).length, 1, "exactly one of ten concurrent consumers wins");
      await store.tokens.replaceToken("ten_a", 100000000000001, "verify_email", "h2", now, now + 1000);
      await store.tokens.replaceToken("ten_a", 100000000000001, "verify_email", "h3", now, now + 1000);
      assert.equal(await store.tokens.isTokenValid("ten_a", 100000000000001, "verify_email", "h2", now), false, "issuing voids the older token");
      assert.equal(await store.tokens.isTokenValid("ten_a", 100000000000001, "verify_email", "h3", now), true);
    });

    test("sessions: found only in their tenant, revoked per member, swept after expiry", async (t) => {
      const { store, dispose } = await twoTenants();
      t.after(dispose);
      const origin = (publicId: string) => ({ publicId, ip: "203.0.113.9", userAgent: "UA", country: null });
      await store.sessions.insertSession("ten_a", "s1", 100000000000001, origin("p1"), now, now + 1000);
      await store.sessions.insertSession("ten_a", "s2", 100000000000001, origin("p2"), now, now + 1000);
      await store.sessions.insertSession("ten_b", "s3", 100000000000001, origin("p3"), now, now + 1000);
      assert.equal(await store.sessions.findLiveSession("ten_b", "s1", now), undefined);
      assert.equal((await store.sessions.findLiveSession("ten_a", "s1", now))!.memberId, 100000000000001);
      await store.sessions.deleteMemberSessions("ten_a", 100000000000001, "s2");
      assert.equal(await store.sessions.findLiveSession("ten_a", "s1", now), undefined);
      assert.ok(await store.sessions.findLiveSession("ten_a", "s2", now), "the kept session stays");
      assert.ok(await store.sessions.findLiveSession("ten_b", "s3", now), "the other tenant's session is untouched");
      assert.equal(await store.sessions.findLiveSession("ten_a", "s2", now + 1000), undefined, "expired");
      // D24: last seen moves only once its minute is up; a public id ends only its own tenant's session.
      store.sessions.touchSession("ten_a", "s2", now + 59_999);
      assert.equal((await store.sessions.findLiveSession("ten_a", "s2", now))!.lastSeenAt, now);
      store.sessions.touchSession("ten_a", "s2", now + 60_000);
      assert.equal((await store.sessions.findLiveSession("ten_a", "s2", now))!.lastSeenAt, now + 60_000);
      await store.flushPending(); // issue 17: written behind; after the flush the row itself holds it
      assert.equal((await store.sessions.findLiveSession("ten_a", "s2", now))!.lastSeenAt, now + 60_000);
      store.sessions.touchSession("ten_a", "s2", now + 60_001);
      await store.flushPending();
      assert.equal((await store.sessions.findLiveSession("ten_a", "s2", now))!.lastSeenAt, now + 60_000, "a minute after the written one, not the kept one");
      assert.equal(await store.sessions.deleteSessionByPublicId("ten_a", 100000000000001, "p3"), false, "another tenant's public id");
      assert.deepEqual(
        (await store.sessions.listMemberSessions("ten_a", 100000000000001, now)).map((x) => [x.publicId, x.ip, x.userAgent]),
        [["p2", "203.0.113.9", "UA"]],
      );
      assert.equal(await store.sessions.deleteSessionByPublicId("ten_a", 100000000000001, "p2"), true);
      assert.equal(await store.sessions.findLiveSession("ten_a", "s2", now), undefined);
      await store.sessions.insertSession("ten_a", "s2", 100000000000001, origin("p2"), now, now + 1000);
      await store.tokens.replaceToken("ten_a", 100000000000001, "verify_email", "t1", now, now + 1000);
      await store.limits.hitCounter("ten_a", "k", 1000, now);
      await store.sweepExpired(now + 1000);
      assert.equal(await store.sessions.findLiveSession("ten_b", "s3", now), undefined, "swept");
      assert.equal(await store.tokens.isTokenValid("ten_a", 100000000000001, "verify_email", "t1", now), false, "swept");
      assert.equal((await store.limits.hitCounter("ten_a", "k", 1000, now + 1000)).count, 1, "counter swept");
    });

    test("lockout rows: locked and read in one statement, created when absent", async (t) => {
      const { store, dispose } = await twoTenants();
      t.after(dispose);
      assert.deepEqual(await store.limits.lockLockout("ten_a", "x@example.org", now), noLockout);
      const saved = { failures: 2, level: 1, lockedUntil: now + 5, inFlight: 1, inFlightUntil: now + 7 };
      await store.limits.saveLockout("ten_a", "x@example.org", saved, now);
      assert.deepEqual(await store.limits.lockLockout("ten_a", "x@example.org", now), saved);
      assert.deepEqual(await store.limits.lockLockout("ten_b", "x@example.org", now), noLockout, "per tenant");
    });

    test("outbox: a due row is claimed once until its lease ends", async (t) => {
      const { store, dispose } = await twoTenants();
      t.after(dispose);
      await store.outbox.insertDelivery({ id: "msg_1", tenantId: "ten_a", eventType: "verify_email", url: "https://h.example/v", payloadEnc: "p" }, now);
      const [first, second] = await Promise.all([store.outbox.claimDueDeliveries(now, 10, 500), store.outbox.claimDueDeliveries(now, 10, 500)]);
      assert.equal(first.length + second.length, 1);
      assert.equal((await store.outbox.claimDueDeliveries(now + 499, 10, 500)).length, 0);
      assert.equal((await store.outbox.claimDueDeliveries(now + 500, 10, 500)).length, 1, "a crashed sender's lease expires");
      assert.equal((await store.outbox.listRecentDeliveries("ten_b", 10)).length, 0);
    });

    test("outbox: the pending count covers every tenant and drops when a row finishes", async (t) => {
      const { store, dispose } = await twoTenants();
      t.after(dispose);
      assert.equal(await store.outbox.countPendingDeliveries(), 0);
      await store.outbox.insertDelivery({ id: "msg_a", tenantId: "ten_a", eventType: "verify_email", url: "https://h.example/v", payloadEnc: "p" }, now);
      await store.outbox.insertDelivery({ id: "msg_b", tenantId: "ten_b", eventType: "verify_email", url: "https://h.example/v", payloadEnc: "p" }, now);
      await store.outbox.insertDelivery({ id: "msg_c", tenantId: "ten_b", eventType: "password_reset", url: "https://h.example/r", payloadEnc: "p" }, now);
      assert.equal(await store.outbox.countPendingDeliveries(), 3);
      await store.outbox.scheduleRetry("msg_c", 1, "http 500", now + 10_000, now);
      assert.equal(await store.outbox.countPendingDeliveries(), 3, "a row waiting for its retry is still pending");
      await store.outbox.finishDelivery("msg_a", "delivered", 1, null, now);
      await store.outbox.finishDelivery("msg_b", "failed", 30, "http 500", now);
      assert.equal(await store.outbox.countPendingDeliveries(), 1);
    });
  });
}

storeContract("sqlite", sqliteStore);
if (TEST_DATABASE_URL) storeContract("postgres", postgresStore);
