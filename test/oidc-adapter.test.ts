/**
 * decisions.md#openid-provider-storage: oidc-provider's adapter over Latch's store, on SQLite and
 * PostgreSQL (LATCH_TEST_STORE). Ids hashed, expiry by Latch's clock, one conditional consume that
 * revokes the family of a second use, grants bound to (and gone with) the Latch session.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "../src/core/clock.js";
import { sha256Hex } from "../src/security/hashing.js";
import type { Store } from "../src/store/index.js";
import { OidcAdapter } from "../src/store/oidc.js";
import { TEST_STORE } from "./support/harness.js";
import { StoreSeam } from "./support/store-seam.js";
import { postgresStore, sqliteStore, type MadeStore } from "./support/stores.js";
import type { TenantSettings } from "../src/model.js";

class InvalidGrant extends Error {}
const invalidGrant = (description: string) => new InvalidGrant(description);

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

let made: MadeStore;
let tenants = 0;
const clock = new ManualClock();

before(async () => {
  made = TEST_STORE === "postgres" ? await postgresStore() : await sqliteStore();
});
after(() => made.dispose());

/** A tenant with one member and one live session: grants are findable only once bound to one. */
async function tenant(store: Store = made.store) {
  const n = ++tenants;
  const id = `ten_oidc_${n}`;
  await store.tenants.createApplication(`app_oidc_${n}`, sha256Hex(`key-${n}`), clock.now());
  await store.tenants.createTenant({ id, domain: `oidc${n}.example`, applicationId: `app_oidc_${n}`, settings, webhookSecretEnc: "x" }, clock.now());
  const memberId = 100000000000000 + n;
  await store.members.insertMember(
    id,
    { recordId: memberId, email: "m@example.org", name: "M", passwordHash: null, passwordSalt: null, authenticationType: "Password" },
    clock.now(),
  );
  const sessionIdHash = sha256Hex(`session-${n}`);
  await store.sessions.insertSession(
    id,
    sessionIdHash,
    memberId,
    { publicId: `pub${n}`, ip: null, userAgent: null, country: null },
    clock.now(),
    clock.now() + 86_400_000,
  );
  const adapter = (model: string, s: Store = store) => new (OidcAdapter.forTenant(id, () => s, clock, invalidGrant))(model);
  /** A grant saved and bound, as the interaction will. */
  async function grant(grantId: string) {
    await adapter("Grant").upsert(grantId, { jti: grantId, kind: "Grant", clientId: "app", accountId: String(memberId) }, 3600);
    assert.ok(await store.oauth.bindGrant(id, sha256Hex(grantId), sessionIdHash, memberId));
  }
  return { id, applicationId: `app_oidc_${n}`, memberId, sessionIdHash, adapter, grant };
}

describe(`oidc adapter (${TEST_STORE})`, () => {
  test("upsert then find answers the payload with its jti, for every model", async () => {
    const t = await tenant();
    await t.grant("grant-1");
    const grant = await t.adapter("Grant").find("grant-1");
    assert.equal(grant?.jti, "grant-1");
    assert.equal(grant?.accountId, String(t.memberId));
    for (const model of ["AuthorizationCode", "RefreshToken", "AccessToken", "Session", "Interaction", "ReplayDetection"]) {
      const payload = { jti: `${model}-id`, kind: model, ...(model === "Session" || model === "Interaction" ? {} : { grantId: "grant-1" }), scope: "openid" };
      await t.adapter(model).upsert(`${model}-id`, payload, 60);
      assert.deepEqual(await t.adapter(model).find(`${model}-id`), payload, model);
      assert.equal(await t.adapter(model === "Session" ? "Interaction" : "Session").find(`${model}-id`), undefined, "models are apart");
    }
  });

  test("rows past expires_at (Latch's clock) are not found, and the sweep deletes them", async () => {
    const t = await tenant();
    await t.adapter("Interaction").upsert("int-1", { kind: "Interaction", uid: "u1" }, 60);
    clock.advance(59_999);
    assert.ok(await t.adapter("Interaction").find("int-1"));
    clock.advance(1);
    assert.equal(await t.adapter("Interaction").find("int-1"), undefined);
    assert.equal(await t.adapter("Interaction").findByUid("u1"), undefined);
    await made.store.sweepExpired(clock.now());
    assert.equal((await rows(t.id)).length, 0);
  });

  test("findByUid and findByUserCode", async () => {
    const t = await tenant();
    await t.adapter("Session").upsert("sess-cookie", { kind: "Session", uid: "uid-9", accountId: "1" }, 60);
    assert.equal((await t.adapter("Session").findByUid("uid-9"))?.accountId, "1");
    assert.equal(await t.adapter("Session").findByUid("uid-8"), undefined);
    await t.adapter("DeviceCode").upsert("dc-1", { kind: "DeviceCode", userCode: "ABCD-EFGH" }, 60);
    assert.equal((await t.adapter("DeviceCode").findByUserCode("ABCD-EFGH"))?.kind, "DeviceCode");
    assert.equal(await t.adapter("DeviceCode").findByUserCode("ABCD-EFGX"), undefined);
  });

  test("destroy deletes one row; consume marks it and a consumed row stays findable (reuse detection reads it)", async () => {
    const t = await tenant();
    await t.grant("g");
    await t.adapter("RefreshToken").upsert("rt-1", { kind: "RefreshToken", grantId: "g" }, 60);
    await t.adapter("RefreshToken").upsert("rt-2", { kind: "RefreshToken", grantId: "g" }, 60);
    await t.adapter("RefreshToken").consume("rt-1");
    assert.ok((await t.adapter("RefreshToken").find("rt-1"))?.consumed);
    await t.adapter("RefreshToken").destroy("rt-1");
    assert.equal(await t.adapter("RefreshToken").find("rt-1"), undefined);
    assert.ok(await t.adapter("RefreshToken").find("rt-2"));
    await t.adapter("Grant").destroy("g");
    assert.equal(await t.adapter("RefreshToken").find("rt-2"), undefined, "a grant's artefacts go with it");
  });

  test("revokeByGrantId removes every artefact of the grant, nothing of another grant or tenant", async () => {
    const a = await tenant();
    const b = await tenant();
    for (const t of [a, b]) {
      await t.grant("g1");
      await t.grant("g2");
      for (const model of ["AuthorizationCode", "RefreshToken", "AccessToken"]) {
        await t.adapter(model).upsert(`${model}-1`, { kind: model, grantId: "g1" }, 60);
        await t.adapter(model).upsert(`${model}-2`, { kind: model, grantId: "g2" }, 60);
      }
    }
    await a.adapter("AccessToken").revokeByGrantId("g1");
    assert.equal(await a.adapter("Grant").find("g1"), undefined);
    for (const model of ["AuthorizationCode", "RefreshToken", "AccessToken"]) {
      assert.equal(await a.adapter(model).find(`${model}-1`), undefined, model);
      assert.ok(await a.adapter(model).find(`${model}-2`), `${model} of another grant`);
      assert.ok(await b.adapter(model).find(`${model}-1`), `${model} of the same grant id in another tenant`);
    }
  });

  test("tenant B never finds, consumes or destroys tenant A's rows", async () => {
    const a = await tenant();
    const b = await tenant();
    await a.grant("g");
    await a.adapter("AuthorizationCode").upsert("code", { kind: "AuthorizationCode", grantId: "g" }, 60);
    await a.adapter("Session").upsert("s", { kind: "Session", uid: "uid-a" }, 60);
    assert.equal(await b.adapter("Grant").find("g"), undefined);
    assert.equal(await b.adapter("AuthorizationCode").find("code"), undefined);
    assert.equal(await b.adapter("Session").findByUid("uid-a"), undefined);
    await assert.rejects(b.adapter("AuthorizationCode").consume("code"), InvalidGrant);
    await b.adapter("AuthorizationCode").destroy("code");
    await b.adapter("AuthorizationCode").revokeByGrantId("g");
    const code = await a.adapter("AuthorizationCode").find("code");
    assert.ok(code && !code.consumed);
    assert.ok(await a.adapter("Grant").find("g"));
  });

  test("two concurrent consumes of one code: exactly one wins, the other throws and the family is revoked", async () => {
    const t = await tenant();
    await t.grant("g");
    await t.adapter("AuthorizationCode").upsert("code", { kind: "AuthorizationCode", grantId: "g" }, 60);
    await t.adapter("RefreshToken").upsert("rt-earlier", { kind: "RefreshToken", grantId: "g" }, 60);
    const seam = new StoreSeam();
    const seen = seam.wrap(made.store);
    // Both exchanges have read the code unconsumed (the library's check) and are held at the update.
    const { held, answers } = await seam.holdEach("oauth.consumeArtifact", 2, async () => {
      const code = await t.adapter("AuthorizationCode", seen).find("code");
      assert.ok(code && !code.consumed);
      return t
        .adapter("AuthorizationCode", seen)
        .consume("code")
        .then(
          () => "won",
          (error: unknown) => (error instanceof InvalidGrant ? "refused" : Promise.reject(error)),
        );
    });
    for (const pause of held) pause.release();
    assert.deepEqual((await answers).sort(), ["refused", "won"]);
    assert.equal(await t.adapter("Grant").find("g"), undefined, "the family is revoked");
    assert.equal(await t.adapter("RefreshToken").find("rt-earlier"), undefined, "the first exchange's tokens die with it");
    await assert.rejects(
      t.adapter("RefreshToken").upsert("rt-late", { kind: "RefreshToken", grantId: "g" }, 60),
      InvalidGrant,
      "the winner can't save a token into a revoked family",
    );
  });

  test("the raw id is nowhere in the tables", async () => {
    const t = await tenant();
    const secret = "raw-secret-refresh-token-value";
    await t.grant("grant-secret-id");
    await t.adapter("RefreshToken").upsert(secret, { jti: secret, kind: "RefreshToken", grantId: "grant-secret-id" }, 60);
    await t.adapter("DeviceCode").upsert("device-secret", { jti: "device-secret", kind: "DeviceCode", userCode: "USER-CODE" }, 60);
    const dump = JSON.stringify([...(await rows(t.id)), ...(await grants(t.id))]);
    // A grant id is never sent by a client (not a bearer secret) and tokens' payloads keep it: the library looks the Grant up by it.
    for (const raw of [secret, "device-secret"]) assert.ok(!dump.includes(raw), raw);
    assert.ok(!JSON.stringify(await grants(t.id)).includes("grant-secret-id"), "the grant's own row is keyed by its hash");
    assert.ok(dump.includes(sha256Hex(secret)));
  });

  test("a grant is found only while its Latch session lives: deleting the session (logout) revokes the family", async () => {
    const t = await tenant();
    await t.adapter("Grant").upsert("unbound", { kind: "Grant", clientId: "app", accountId: "1" }, 3600);
    assert.equal(await t.adapter("Grant").find("unbound"), undefined, "an unbound grant fails closed");
    await t.grant("g");
    await t.adapter("RefreshToken").upsert("rt", { kind: "RefreshToken", grantId: "g" }, 60);
    await made.store.sessions.deleteSession(t.id, t.sessionIdHash);
    assert.equal(await t.adapter("Grant").find("g"), undefined);
    assert.equal(await t.adapter("RefreshToken").find("rt"), undefined, "cascaded from the grant");
    assert.equal((await grants(t.id)).length, 1, "only the unbound grant is left");
    assert.equal(await made.store.oauth.revokeMemberGrants(t.id, t.memberId), 0);
  });
});

test(`erasing a tenant empties its OpenID provider rows (${TEST_STORE})`, async () => {
  const t = await tenant();
  await t.grant("g");
  await t.adapter("RefreshToken").upsert("rt", { kind: "RefreshToken", grantId: "g" }, 60);
  await t.adapter("Interaction").upsert("i", { kind: "Interaction" }, 60);
  assert.ok(await made.store.transaction((tx) => tx.tenants.deleteTenant(t.id, t.applicationId)));
  assert.equal((await rows(t.id)).length + (await grants(t.id)).length, 0);
});

function rows(tenantId: string) {
  return dbOf().selectFrom("oauth_artifacts").selectAll().where("tenant_id", "=", tenantId).execute();
}
function grants(tenantId: string) {
  return dbOf().selectFrom("oauth_grants").selectAll().where("tenant_id", "=", tenantId).execute();
}
function dbOf() {
  return (made.store as unknown as { db: import("kysely").Kysely<import("../src/store/schema.js").Database> }).db;
}
