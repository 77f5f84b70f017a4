/**
 * What the session-check hot path may and may not do (issue 6, docs/performance.md): the tenant
 * cache sees a change made through this instance at once and one made elsewhere within 5 s; the
 * SQLite snapshot reader never sees uncommitted writes; prepared queries put every value in its
 * place.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { SECOND } from "../src/core/clock.js";
import { sha256Hex } from "../src/security/hashing.js";
import { PreparedQuery } from "../src/store/prepared.js";
import { operatorHeaders, sessionData, sessionStatus, signedInMember } from "./support/flows.js";
import { createHarness } from "./support/harness.js";
import { sqliteStore } from "./support/stores.js";

test("tenant cache: a change through this instance is seen at once, one made elsewhere within 5 s", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await signedInMember(h, "hot@example.org");
  assert.equal((await sessionData(h, cookie)).require2FASetup, false);

  const patched = await h.app.inject({
    method: "PATCH",
    url: `/operator/tenants/${h.tenant.domain}`,
    headers: operatorHeaders(),
    payload: { settings: { require2FA: true } },
  });
  assert.equal(patched.statusCode, 200, patched.body);
  assert.equal((await sessionData(h, cookie)).require2FASetup, true, "seen at once after a change through this instance");

  // Another instance or the CLI turns it off again: this instance answers from its cache for at most 5 s.
  const row = await h.db.selectFrom("tenants").select(["id", "settings"]).where("domain", "=", h.tenant.domain).executeTakeFirstOrThrow();
  await h.db
    .updateTable("tenants")
    .set({ settings: JSON.stringify({ ...JSON.parse(row.settings), require2FA: false }) })
    .where("id", "=", row.id)
    .execute();
  assert.equal((await sessionData(h, cookie)).require2FASetup, true, "still the cached settings");
  h.clock.advance(5 * SECOND);
  assert.equal((await sessionData(h, cookie)).require2FASetup, false, "the change arrives within the cache's 5 s");
});

test("the session check never sees an uncommitted revocation, and sees a committed one at once", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { cookie } = await signedInMember(h, "hot@example.org");
  const tenant = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let revoked!: () => void;
  const inside = new Promise<void>((resolve) => (revoked = resolve));
  const revocation = h.deps.store.transaction(async (tx) => {
    await tx.sessions.deleteSession(tenant.id, sha256Hex(cookie));
    revoked();
    await held; // the transaction stays open while the check below runs
  });
  await inside;
  if (h.storeKind === "sqlite") {
    // On SQLite the check reads through the snapshot connection, beside the open write transaction.
    assert.equal(await sessionStatus(h, cookie), 200, "an uncommitted delete is not visible");
  }
  release();
  await revocation;
  assert.equal(await sessionStatus(h, cookie), 401, "committed: the very next check refuses");
});

test("prepared queries: each named value lands in its place, in any order, and an unnamed value is refused", async (t) => {
  const { store, dispose } = await sqliteStore();
  t.after(dispose);
  await store.tenants.createApplication("app_a", "a".repeat(64), 1);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the test reaches the store's handle
  const db = (store as any).db;
  await store.tenants.createTenant({ id: "ten_a", domain: "a.example", applicationId: "app_a", settings: {} as never, webhookSecretEnc: "x" }, 5);
  const query = new PreparedQuery(["domain", "after"], (v: { domain: string; after: number }) =>
    db.selectFrom("tenants").select("id").where("created_at", ">", v.after).where("domain", "=", v.domain),
  );
  assert.deepEqual(await query.execute(db, { after: 4, domain: "a.example" }), [{ id: "ten_a" }]);
  assert.deepEqual(await query.execute(db, { after: 5, domain: "a.example" }), []);
  assert.deepEqual(await query.execute(db, { after: 4, domain: "b.example" }), []);
  const inlined = new PreparedQuery(["domain"], (v: { domain: string }) =>
    db.selectFrom("tenants").select("id").where("domain", "=", v.domain).where("created_at", ">", 0),
  );
  assert.throws(() => inlined.execute(db, { domain: "a.example" }), /not one of the named values/);
});
