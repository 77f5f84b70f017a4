/**
 * decisions.md#openid-provider-signing-keys: each tenant's token signing keys on SQLite and
 * PostgreSQL (LATCH_TEST_STORE). Made once, one per algorithm however many instances race; the
 * private key is never stored in clear; after a rotation a token of the old key verifies against the
 * JWKS until MAX_TOKEN_LIFETIME_MS has passed, then no longer; tenants never share keys; `latch
 * secrets reseal` reseals them; `latch tenant rotate-signing-key` as a real child process.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { createLocalJWKSet, importJWK, jwtVerify, SignJWT, type JWK } from "jose";
import { resealSecrets } from "../src/cli/reseal.js";
import { seededRandom } from "../src/core/random.js";
import { ensureSigningKeys, publicJwks, rotateSigningKeys, signingKeySet } from "../src/flows/oidc/signing-keys.js";
import { MAX_TOKEN_LIFETIME_MS, RETIRED_SIGNING_KEY_KEPT_MS } from "../src/rules.js";
import { createSecretBox, keyId } from "../src/security/secret-box.js";
import { addOtherTenant, OTHER_DOMAIN, tenantIdOf } from "./support/flows.js";
import { createHarness, TEST_STORE, type Harness } from "./support/harness.js";

const KEY_A = Buffer.from("11".repeat(32), "hex"); // the harness's SECRETS_KEY
const KEY_B = Buffer.from("22".repeat(32), "hex");

async function tenantOf(h: Harness, domain = h.tenant.domain): Promise<{ id: string }> {
  return { id: await tenantIdOf(h, domain) };
}

/** A token signed with the tenant's first private key of `alg`, as oidc-provider picks it. */
async function signToken(h: Harness, tenant: { id: string }, alg: "ES256" | "RS256"): Promise<{ token: string; kid: string }> {
  const jwk = (await signingKeySet(h.deps, tenant)).keys.find((k) => k.alg === alg)!;
  const now = Math.floor(h.clock.now() / 1000);
  const token = await new SignJWT({ sub: "1" })
    .setProtectedHeader({ alg, kid: jwk.kid! })
    .setIssuedAt(now)
    .setExpirationTime(now + MAX_TOKEN_LIFETIME_MS / 1000)
    .sign(await importJWK(jwk, alg));
  return { token, kid: jwk.kid! };
}

/** True when `token` verifies against the tenant's published JWKS at the harness's time. */
async function verifies(h: Harness, tenant: { id: string }, token: string, clockToleranceSeconds = 0): Promise<boolean> {
  const jwks = createLocalJWKSet(await publicJwks(h.deps, tenant));
  try {
    await jwtVerify(token, jwks, { algorithms: ["ES256", "RS256"], currentDate: new Date(h.clock.now()), clockTolerance: clockToleranceSeconds });
    return true;
  } catch (err) {
    if (process.env.DEBUG_KEYS) console.log(err);
    return false;
  }
}

test("keys are made once, one ES256 and one RS256; concurrent instances end with one per algorithm; no private key in clear", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const tenant = await tenantOf(h);
  const first = await ensureSigningKeys(h.deps, tenant);
  assert.deepEqual(first.map((k) => k.alg).sort(), ["ES256", "RS256"]);
  const again = await ensureSigningKeys(h.deps, tenant);
  assert.deepEqual(again.map((k) => k.kid).sort(), first.map((k) => k.kid).sort(), "made once");

  await addOtherTenant(h);
  const other = await tenantOf(h, OTHER_DOMAIN);
  const raced = await Promise.all([1, 2, 3].map(() => ensureSigningKeys(h.deps, other)));
  const rows = await h.db.selectFrom("oidc_signing_keys").selectAll().where("tenant_id", "=", other.id).execute();
  assert.deepEqual(rows.map((r) => r.alg).sort(), ["ES256", "RS256"], "one key per algorithm");
  for (const keys of raced) assert.deepEqual(keys.map((k) => k.kid).sort(), rows.map((r) => r.kid).sort(), "every racer returns the kept keys");

  const all = await h.db.selectFrom("oidc_signing_keys").selectAll().execute();
  for (const row of all) {
    assert.match(row.private_jwk_enc, new RegExp(`^v2\\.${keyId(KEY_A)}\\.`), "sealed under SECRETS_KEY");
    assert.doesNotMatch(row.private_jwk_enc, /"d"|"p"|"kty"/);
    assert.equal((JSON.parse(row.public_jwk) as JWK).d, undefined);
  }
  const published = JSON.stringify(await publicJwks(h.deps, tenant));
  assert.doesNotMatch(published, /"(d|p|q|dp|dq|qi)":/, "the JWKS has no private part");
  const privateSet = await signingKeySet(h.deps, tenant);
  assert.ok(
    privateSet.keys.every((k) => typeof k.d === "string"),
    "oidc-provider gets the private keys",
  );
});

test("rotation: old tokens verify until the longest token lifetime has passed, new tokens carry the new kid; tenants never share keys", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const tenant = await tenantOf(h);
  await addOtherTenant(h);
  const other = await tenantOf(h, OTHER_DOMAIN);
  const oldEs = await signToken(h, tenant, "ES256");
  const oldRs = await signToken(h, tenant, "RS256");
  const foreign = await signToken(h, other, "ES256");
  assert.ok(await verifies(h, tenant, oldEs.token));
  assert.ok(await verifies(h, tenant, oldRs.token));
  assert.equal(await verifies(h, tenant, foreign.token), false, "tenant B's token against tenant A's JWKS");
  assert.equal(await verifies(h, other, oldEs.token), false, "tenant A's token against tenant B's JWKS");

  const { current, retired } = await rotateSigningKeys(h.deps, tenant);
  assert.deepEqual(retired.map((k) => k.kid).sort(), [oldEs.kid, oldRs.kid].sort());
  assert.ok(retired.every((k) => k.expiresAt === h.clock.now() + RETIRED_SIGNING_KEY_KEPT_MS));
  assert.deepEqual(current.map((k) => k.alg).sort(), ["ES256", "RS256"]);
  const newEs = await signToken(h, tenant, "ES256");
  assert.notEqual(newEs.kid, oldEs.kid, "new tokens are signed with the new key");
  assert.ok(current.some((k) => k.kid === newEs.kid));
  assert.equal((await publicJwks(h.deps, tenant)).keys.length, 4, "old and new published");
  assert.ok(await verifies(h, other, foreign.token), "the other tenant's keys are untouched");

  h.clock.advance(RETIRED_SIGNING_KEY_KEPT_MS - 1000);
  assert.ok(await verifies(h, tenant, oldEs.token, RETIRED_SIGNING_KEY_KEPT_MS / 1000), "the old key is published until just before it expires");
  assert.ok(await verifies(h, tenant, oldRs.token, RETIRED_SIGNING_KEY_KEPT_MS / 1000));
  h.clock.advance(1000);
  const kids = (await publicJwks(h.deps, tenant)).keys.map((k) => k.kid);
  assert.ok(!kids.includes(oldEs.kid) && !kids.includes(oldRs.kid), "the old keys leave the JWKS once their tokens have expired");
  // A verifier lenient on `exp` (an hour's tolerance) still refuses it: the key itself is gone.
  assert.equal(await verifies(h, tenant, oldEs.token, 3600), false);
  assert.ok(await verifies(h, tenant, newEs.token, 3600), "the new key still verifies");
  assert.ok(await verifies(h, tenant, (await signToken(h, tenant, "RS256")).token));

  await h.deps.store.sweepExpired(h.clock.now());
  const left = await h.db.selectFrom("oidc_signing_keys").select("kid").where("tenant_id", "=", tenant.id).execute();
  assert.deepEqual(left.map((r) => r.kid).sort(), current.map((k) => k.kid).sort(), "the sweeper deletes the expired keys");
});

test("latch secrets reseal reseals current and retired private keys; they still sign after", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const tenant = await tenantOf(h);
  await ensureSigningKeys(h.deps, tenant);
  await rotateSigningKeys(h.deps, tenant);
  const underB = { ...h.deps, secrets: createSecretBox(KEY_B, seededRandom("reseal-keys"), [KEY_A]) };
  const report = await resealSecrets(underB);
  assert.deepEqual(report.signingKeys, { resealed: 4, current: 0, unreadable: 0, changedMeanwhile: 0 });
  const rows = await h.db.selectFrom("oidc_signing_keys").select("private_jwk_enc").execute();
  assert.ok(
    rows.every((r) => r.private_jwk_enc.startsWith(`v2.${keyId(KEY_B)}.`)),
    "all under the new key",
  );
  assert.deepEqual((await resealSecrets(underB)).signingKeys, { resealed: 0, current: 4, unreadable: 0, changedMeanwhile: 0 }, "idempotent");
  const onlyB = { ...h.deps, secrets: createSecretBox(KEY_B, seededRandom("only-b")) };
  assert.equal((await signingKeySet(onlyB, tenant)).keys.length, 4, "the new key alone opens them");
});

const run = promisify(execFile);

test(
  "latch tenant rotate-signing-key prints the new kids and when the old keys leave the JWKS",
  { skip: TEST_STORE === "postgres" && "the CLI test runs on SQLite" },
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), "latch-keys-"));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const latch = async (args: string[]) => {
      const env = {
        ...process.env,
        DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`,
        SECRETS_KEY: "11".repeat(32),
        SECRETS_KEY_PREVIOUS: "",
        LOG_LEVEL: "warn",
      };
      try {
        const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { env });
        return { code: 0, stdout, stderr };
      } catch (err) {
        return err as { code: number; stdout: string; stderr: string };
      }
    };
    const settings = JSON.stringify({
      emailVerificationWebhook: "https://hooks.example.net/v",
      passwordResetWebhook: "https://hooks.example.net/r",
      magicLoginWebhook: "https://hooks.example.net/m",
    });
    assert.equal((await latch(["tenant", "create", "--domain", "shop.example.com", "--settings", settings])).code, 0);
    const first = await latch(["tenant", "rotate-signing-key", "shop.example.com"]);
    assert.equal(first.code, 0, first.stderr);
    const made = JSON.parse(first.stdout) as { keys: { kid: string }[]; retiredKeys: unknown[] };
    assert.equal(made.keys.length, 2);
    assert.deepEqual(made.retiredKeys, [], "no keys before: nothing to retire");

    const second = await latch(["tenant", "rotate-signing-key", "shop.example.com"]);
    const answer = JSON.parse(second.stdout) as {
      domain: string;
      keys: { kid: string; alg: string }[];
      retiredKeys: { kid: string; createdAt: string; expiresAt: string }[];
    };
    assert.equal(answer.domain, "shop.example.com");
    assert.deepEqual(answer.retiredKeys.map((k) => k.kid).sort(), made.keys.map((k) => k.kid).sort());
    assert.deepEqual(answer.keys.map((k) => k.alg).sort(), ["ES256", "RS256"]);
    for (const k of answer.retiredKeys) assert.match(k.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.doesNotMatch(second.stdout, /"d"|v2\./, "no key material");

    const unknown = await latch(["tenant", "rotate-signing-key", "nowhere.example.com"]);
    assert.equal(unknown.code, 1);
    assert.equal((JSON.parse(unknown.stderr.trim().split("\n").pop()!) as { code: string }).code, "unknown_tenant");
  },
);
