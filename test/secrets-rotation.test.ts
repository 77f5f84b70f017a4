/**
 * SECRETS_KEY rotation end to end (docs/operations.md#secrets-key): values sealed under key A keep
 * working when the service restarts with SECRETS_KEY=B and SECRETS_KEY_PREVIOUS=A; `resealSecrets`
 * (the code of `latch secrets reseal`) moves them all to B, so B alone then works; a value no key
 * opens is reported and left in place. Real store, real HTTP flows, a local siteverify server.
 */
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { Writable } from "node:stream";
import { test } from "node:test";
import { buildApp } from "../src/app.js";
import { resealSecrets, type ResealReport } from "../src/cli/reseal.js";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { seededRandom } from "../src/core/random.js";
import { createDeps } from "../src/create-deps.js";
import { createConnection } from "../src/flows/federation/connections.js";
import { rotateWebhookSecret } from "../src/flows/tenants/tenants.js";
import { createLogger } from "../src/logging.js";
import { createSecretBox, keyId } from "../src/security/secret-box.js";
import { addOtherTenant, OTHER_DOMAIN, sessionStatus } from "./support/flows.js";
import {
  CHEAP_ALTCHA,
  createHarness,
  deliverWebhooks,
  login,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
  type ReceivedWebhook,
} from "./support/harness.js";
import { startLocalServer, type LocalServer } from "./support/local-servers.js";
import { totpAt } from "./support/totp.js";

const KEY_A = Buffer.from("11".repeat(32), "hex"); // the harness's SECRETS_KEY
const KEY_B = Buffer.from("22".repeat(32), "hex");
const KEY_UNKNOWN = Buffer.from("33".repeat(32), "hex");
const BOT_SECRET = "turnstile-secret-for-rotation";

/** A siteverify that passes only requests carrying the tenant's real secret. */
function startSiteverify(): Promise<LocalServer> {
  return startLocalServer((request, response) => {
    const ok = new URLSearchParams(request.body).get("secret") === BOT_SECRET;
    response
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify(ok ? { success: true } : { success: false, "error-codes": ["invalid-input-secret"] }));
  });
}

/** As harness.restart, with other keys: the operator's restart of every instance. */
async function restartWithKeys(h: Harness, current: Buffer, previous: Buffer[]): Promise<void> {
  await h.deps.background.drain();
  await h.app.close();
  await h.deps.store.close();
  await h.deps.redis?.close();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      h.logs.push(chunk.toString("utf8"));
      done();
    },
  });
  const config = { ...h.config, secretsKey: current, secretsKeyPrevious: previous };
  h.deps = await createDeps(config, {
    clock: h.clock,
    random: seededRandom(`rotation-${keyId(current)}-${previous.length}`),
    log: createLogger("info", sink),
    altchaDifficulty: CHEAP_ALTCHA,
  });
  h.app = await buildApp(h.deps);
}

/** Password + TOTP login through the tenant's siteverify bot check: true when authorized. */
async function loginWithTotp(h: Harness, email: string, secret: string): Promise<boolean> {
  h.clock.advance(31 * SECOND); // a fresh time step: the last accepted one would be a replay
  const res = await post(h, "/auth/login", { email, password: STRONG_PASSWORD, "bot-challenge-response": "x", twoFACode: totpAt(secret, h.clock.now()) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ authorized: boolean }>().authorized;
}

/** Standard Webhooks v1 signature by hand (the library would check the timestamp against the real clock). */
function assertSignedWith(secret: string, hook: ReceivedWebhook, message = "signed with the tenant's webhook secret"): void {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const signed = `${String(hook.headers["webhook-id"])}.${String(hook.headers["webhook-timestamp"])}.${hook.rawBody}`;
  const expected = `v1,${createHmac("sha256", key).update(signed).digest("base64")}`;
  assert.ok(String(hook.headers["webhook-signature"]).split(" ").includes(expected), message);
}

async function storedValues(h: Harness): Promise<string[]> {
  const tenants = await h.db
    .selectFrom("tenants")
    .select(["webhook_secret_enc", "webhook_previous_secret_enc", "settings"])
    .where("domain", "=", h.tenant.domain)
    .execute();
  const members = await h.db.selectFrom("members").select(["totp_secret_enc", "totp_pending_secret_enc"]).execute();
  const payloads = await h.db.selectFrom("webhook_deliveries").select("payload_enc").execute();
  const connections = await h.db.selectFrom("connections").select("client_secret_enc").execute();
  return [
    ...tenants.flatMap((t) => [
      t.webhook_secret_enc,
      t.webhook_previous_secret_enc,
      (JSON.parse(t.settings) as { botProtection: { secretKey: string } }).botProtection.secretKey,
    ]),
    ...members.flatMap((m) => [m.totp_secret_enc, m.totp_pending_secret_enc]),
    ...payloads.map((p) => p.payload_enc),
    ...connections.map((c) => c.client_secret_enc),
  ].filter((v): v is string => v !== null);
}

const counts = (resealed: number, current: number, unreadable = 0) => ({ resealed, current, unreadable, changedMeanwhile: 0 });

test("rotation: A sealed -> B with A previous still opens everything -> reseal -> B alone works; an unknown key's value is reported and kept", async (t) => {
  const siteverify = await startSiteverify();
  t.after(() => siteverify.close());
  const h = await createHarness({
    settings: { botProtection: { provider: "turnstile", secretKey: BOT_SECRET, siteKey: "site", verifyUrl: `${siteverify.url}/siteverify` } },
  });
  t.after(() => h.close());

  // Under key A: an enrolled member, a member half-way through setup, two verify_email payloads pending.
  await registerVerifiedMember(h, "totp@example.org");
  const totpCookie = sessionCookieOf(await login(h, "totp@example.org"))!;
  const { secret: totpSecret } = (await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie: totpCookie })).json<{ secret: string }>();
  assert.equal((await post(h, "/auth/2fa/enable", { code: totpAt(totpSecret, h.clock.now()) }, { cookie: totpCookie })).statusCode, 200);
  await registerVerifiedMember(h, "pending@example.org");
  const pendingCookie = sessionCookieOf(await login(h, "pending@example.org"))!;
  const { secret: pendingSecret } = (await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie: pendingCookie })).json<{ secret: string }>();
  for (const email of ["late1@example.org", "late2@example.org"]) {
    const res = await post(h, "/auth/register-password", { email, name: "Late", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
    assert.equal(res.statusCode, 200, res.body);
  }
  // A rotated webhook secret: the old one is kept, sealed under A too, and still signs (decisions.md#webhook-secret-rotation).
  const rotated = await rotateWebhookSecret(h.deps, h.tenant.domain);
  // A connection's client secret (decisions.md#federated-connections).
  const tenant = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!;
  const connectionInput = { id: "google", type: "google", displayName: "Google", clientId: "cid", clientSecret: "connection-secret" } as const;
  await createConnection(h.deps, tenant, connectionInput);
  // Another tenant whose webhook secret was sealed under a key nobody configured any more.
  await addOtherTenant(h);
  const lost = createSecretBox(KEY_UNKNOWN, seededRandom("lost")).seal("whsec_lost");
  await h.db.updateTable("tenants").set({ webhook_secret_enc: lost }).where("domain", "=", OTHER_DOMAIN).execute();

  // Restart with B, A as previous: everything sealed under A still opens.
  await restartWithKeys(h, KEY_B, [KEY_A]);
  const before = h.receiver.ofType("verify_email").length;
  h.receiver.failNext = 1; // one payload delivers now, the other stays pending under A for the reseal
  await deliverWebhooks(h);
  const delivered = h.receiver.ofType("verify_email").slice(before);
  assert.equal(delivered.length, 1, "one pending payload sealed under A delivered");
  assertSignedWith(h.tenant.webhookSecret, delivered[0]!);
  assertSignedWith(rotated.webhookSecret, delivered[0]!);
  assert.ok(await loginWithTotp(h, "totp@example.org", totpSecret), "TOTP secret and bot secret sealed under A open");
  const pendingRow = await h.db.selectFrom("members").select("totp_pending_secret_enc").where("email", "=", "pending@example.org").executeTakeFirstOrThrow();
  assert.equal(h.deps.secrets.open(pendingRow.totp_pending_secret_enc!), pendingSecret);

  const report: ResealReport = await resealSecrets(h.deps);
  assert.deepEqual(report, {
    webhookSecrets: counts(1, 0, 1),
    previousWebhookSecrets: counts(1, 0),
    botSecrets: counts(1, 0),
    totpSecrets: counts(1, 0),
    pendingTotpSecrets: counts(1, 0),
    outboxPayloads: counts(1, 0),
    connectionSecrets: counts(1, 0),
    signingKeys: counts(0, 0), // test/oidc-signing-keys.test.ts reseals them
    importedHashParams: counts(0, 0), // test/import.test.ts visits them
  });
  assert.ok(
    (await storedValues(h)).every((v) => v.startsWith(`v2.${keyId(KEY_B)}.`)),
    "all under B now",
  );
  const otherRow = await h.db.selectFrom("tenants").select("webhook_secret_enc").where("domain", "=", OTHER_DOMAIN).executeTakeFirstOrThrow();
  assert.equal(otherRow.webhook_secret_enc, lost, "the unreadable value is left in place");
  assert.equal(await sessionStatus(h, pendingCookie), 200, "reseal ends no session");
  const again = await resealSecrets(h.deps);
  assert.deepEqual(again.totpSecrets, counts(0, 1), "idempotent");
  assert.deepEqual(again.webhookSecrets, counts(0, 1, 1));
  assert.deepEqual(again.previousWebhookSecrets, counts(0, 1));
  assert.deepEqual(again.connectionSecrets, counts(0, 1));

  // B alone: the resealed values work.
  await restartWithKeys(h, KEY_B, []);
  h.clock.advance(5 * MINUTE); // past the failed attempt's retry delay
  await deliverWebhooks(h);
  const rest = h.receiver.ofType("verify_email").slice(before + 1);
  assert.equal(rest.length, 1, "the resealed payload delivers");
  assertSignedWith(h.tenant.webhookSecret, rest[0]!, "the resealed previous secret still signs in its window");
  assertSignedWith(rotated.webhookSecret, rest[0]!);
  assert.notEqual(rest[0]!.body.email, delivered[0]!.body.email);
  assert.ok(await loginWithTotp(h, "totp@example.org", totpSecret), "TOTP and bot secrets open under B alone");
  const connection = await h.deps.store.connections.findConnection(tenant.id, "google");
  assert.equal(h.deps.secrets.open(connection!.clientSecretSealed), "connection-secret", "the connection's secret opens under B alone");
  const enabled = await post(h, "/auth/2fa/enable", { code: totpAt(pendingSecret, h.clock.now()) }, { cookie: pendingCookie });
  assert.equal(enabled.statusCode, 200, enabled.body);
});
