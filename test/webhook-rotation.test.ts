/**
 * Webhook secret rotation without loss (issue 29, docs/decisions.md#webhook-secret-rotation), on the
 * store of the run (SQLite; PostgreSQL in the pass of scripts/test-backends.mjs). The tenant's
 * receiver is a real HTTP server that verifies with the official `standardwebhooks` package, holding
 * one secret at a time, as an integrator's does, and refuses (401) what does not verify.
 *
 * That package checks `webhook-timestamp` against the real time (5 minutes), so these tests set the
 * injected clock to the real time first and move it by seconds only; the window's end is reached by
 * rotating a window (and a minute) in the past and moving the clock forward to now.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { Webhook } from "standardwebhooks";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { seededRandom } from "../src/core/random.js";
import { WEBHOOK_SECRET_ROTATION_WINDOW_MS as WINDOW_MS } from "../src/rules.js";
import { createSecretBox } from "../src/security/secret-box.js";
import { operatorHeaders, register, tenantIdOf } from "./support/flows.js";
import { createHarness, deliverWebhooks, type Harness } from "./support/harness.js";
import { startLocalServer, type LocalServer, type RecordedRequest } from "./support/local-servers.js";

interface Delivery {
  id: string;
  email: string;
  headers: Record<string, string>;
  body: string;
  /** What the receiver answered: 204 verified with the secret it held, 401 not, 503 while down for this email. */
  status: number;
}

interface VerifyingReceiver extends LocalServer {
  /** The one secret the receiver holds. */
  held: string;
  /** Emails whose deliveries it answers 503 (down for them), so they are retried later. */
  down: Set<string>;
  deliveries: Delivery[];
  /** Keeps the answers back until the returned release is called: the attempts stay in flight. */
  holdAnswers(): () => void;
  /** Resolves once `count` requests have arrived. */
  arrivals(count: number): Promise<void>;
}

function signedHeaders(request: RecordedRequest): Record<string, string> {
  return Object.fromEntries(["webhook-id", "webhook-timestamp", "webhook-signature"].map((name) => [name, String(request.headers[name])]));
}

async function startVerifyingReceiver(t: TestContext): Promise<VerifyingReceiver> {
  let gate: Promise<void> | undefined;
  const waiting: { count: number; resolve: () => void }[] = [];
  const receiver: VerifyingReceiver = Object.assign(
    await startLocalServer((request, response) => {
      const email = (JSON.parse(request.body) as { email: string }).email;
      let status = 204;
      if (receiver.down.has(email)) status = 503;
      else
        try {
          new Webhook(receiver.held).verify(request.body, signedHeaders(request));
        } catch {
          status = 401;
        }
      receiver.deliveries.push({ id: String(request.headers["webhook-id"]), email, headers: signedHeaders(request), body: request.body, status });
      for (const w of waiting.filter((w) => receiver.requests.length >= w.count)) w.resolve();
      void (gate ?? Promise.resolve()).then(() => response.writeHead(status).end());
    }),
    {
      held: "",
      down: new Set<string>(),
      deliveries: [] as Delivery[],
      holdAnswers() {
        let release!: () => void;
        gate = new Promise<void>((resolve) => (release = resolve));
        return () => {
          gate = undefined;
          release();
        };
      },
      arrivals(count: number) {
        return receiver.requests.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ count, resolve }));
      },
    },
  );
  t.after(() => receiver.close());
  return receiver;
}

async function harnessSendingTo(t: TestContext, receiver: VerifyingReceiver): Promise<Harness> {
  const h = await createHarness({ settings: { emailVerificationWebhook: `${receiver.url}/verify` } });
  t.after(() => h.close());
  h.clock.set(Date.now());
  receiver.held = h.tenant.webhookSecret;
  return h;
}

async function rotate(h: Harness): Promise<{ webhookSecret: string; previousSecretExpiresAt: string | null; body: string }> {
  const response = await h.app.inject({ method: "POST", url: `/operator/tenants/${h.tenant.domain}/rotate-webhook-secret`, headers: operatorHeaders() });
  assert.equal(response.statusCode, 200, response.body);
  return { ...response.json<{ webhookSecret: string; previousSecretExpiresAt: string | null }>(), body: response.body };
}

async function registered(h: Harness, email: string): Promise<void> {
  const response = await register(h, email);
  assert.equal(response.statusCode, 200, response.body);
}

/** The signature the official package computes for this delivery with `secret` (its `sign`, no clock involved). */
function officialSignature(secret: string, delivery: Delivery): string {
  return new Webhook(secret).sign(delivery.id, new Date(Number(delivery.headers["webhook-timestamp"]) * 1000), delivery.body);
}

function verifiesWith(secret: string, delivery: Delivery): boolean {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers);
    return true;
  } catch (error) {
    assert.match((error as Error).message, /No matching signature/, "refused for its signature, not its timestamp");
    return false;
  }
}

async function deliveryStatuses(h: Harness): Promise<string[]> {
  const rows = await h.db
    .selectFrom("webhook_deliveries")
    .select("status")
    .where("tenant_id", "=", await tenantIdOf(h))
    .execute();
  return rows.map((r) => r.status);
}

test("rotation while deliveries are queued, in flight and being retried: a receiver with the old secret, then one with the new, verifies every one; none is lost", async (t) => {
  const receiver = await startVerifyingReceiver(t);
  const h = await harnessSendingTo(t, receiver);
  const oldSecret = h.tenant.webhookSecret;

  // Before the rotation: delivered and verified with the old secret.
  await registered(h, "before@example.org");
  assert.equal(await deliverWebhooks(h), 1);
  // Failing for the receiver since before the rotation: retried during the window, after the receiver switched.
  receiver.down.add("late@example.org");
  await registered(h, "late@example.org");
  assert.equal(await deliverWebhooks(h), 1);
  // In flight: signed and sent, the answer still to come when the secret is rotated.
  const release = receiver.holdAnswers();
  await registered(h, "in-flight@example.org");
  const inFlight = deliverWebhooks(h);
  await receiver.arrivals(3);
  // Queued: written before the rotation, not yet sent.
  await registered(h, "queued@example.org");

  const rotatedAt = h.clock.now();
  const rotated = await rotate(h);
  assert.equal(rotated.previousSecretExpiresAt, new Date(rotatedAt + WINDOW_MS).toISOString(), "the answer says until when the old secret signs");
  assert.ok(!rotated.body.includes(oldSecret), "the old secret is never shown again");
  const newSecret = rotated.webhookSecret;
  release();
  assert.equal(await inFlight, 1);

  // During the window, the receiver still on the old secret: what was queued and what came after verify.
  await registered(h, "after@example.org");
  h.clock.advance(15 * SECOND);
  assert.equal(await deliverWebhooks(h), 3, "queued, after, and the retry of late");
  // The integrator installs the new secret: the retry of what was refused before the rotation verifies with it.
  receiver.held = newSecret;
  receiver.down.clear();
  await registered(h, "switched@example.org");
  h.clock.advance(45 * SECOND);
  assert.equal(await deliverWebhooks(h), 2, "switched, and late's next retry");

  const accepted = receiver.deliveries.filter((d) => d.status === 204);
  assert.deepEqual(
    receiver.deliveries.filter((d) => d.status === 401),
    [],
    "no delivery refused for its signature",
  );
  assert.deepEqual(
    accepted.map((d) => d.email).sort(),
    ["after", "before", "in-flight", "late", "queued", "switched"].map((n) => `${n}@example.org`),
  );
  assert.deepEqual(await deliveryStatuses(h), Array(6).fill("delivered"), "none lost");
  const acceptedWith = (email: string) => accepted.find((d) => d.email === email)!;
  for (const email of ["before@example.org", "in-flight@example.org"]) {
    assert.equal(
      acceptedWith(email).headers["webhook-signature"],
      officialSignature(oldSecret, acceptedWith(email)),
      `${email}: signed before the rotation, old only`,
    );
  }
  for (const email of ["queued@example.org", "after@example.org", "late@example.org", "switched@example.org"]) {
    const delivery = acceptedWith(email);
    assert.equal(
      delivery.headers["webhook-signature"],
      `${officialSignature(oldSecret, delivery)} ${officialSignature(newSecret, delivery)}`,
      `${email}: sent in the window, v1,<old> v1,<new>`,
    );
    assert.ok(verifiesWith(oldSecret, delivery) && verifiesWith(newSecret, delivery), `${email}: a receiver with either secret verifies it`);
  }
  const logs = h.logs.join("");
  for (const secret of [oldSecret, newSecret]) assert.ok(!logs.includes(secret.slice("whsec_".length)), "no secret in the logs");
});

test("after the window (the clock moved past it) only the new secret signs, events queued during it included; the sweeper then drops the old one", async (t) => {
  const receiver = await startVerifyingReceiver(t);
  const h = await harnessSendingTo(t, receiver);
  const oldSecret = h.tenant.webhookSecret;
  h.clock.set(Date.now() - WINDOW_MS - MINUTE);
  const rotatedAt = h.clock.now();
  const rotated = await rotate(h);
  assert.equal(rotated.previousSecretExpiresAt, new Date(rotatedAt + WINDOW_MS).toISOString());
  await registered(h, "queued-in-window@example.org");

  h.clock.advance(WINDOW_MS + MINUTE); // back to the real time, the window a minute over
  receiver.held = rotated.webhookSecret;
  assert.equal(await deliverWebhooks(h), 1);
  const [delivery] = receiver.deliveries;
  assert.equal(delivery!.status, 204, "verified with the new secret");
  assert.equal(delivery!.headers["webhook-signature"], officialSignature(rotated.webhookSecret, delivery!), "one signature, the new secret's");
  assert.equal(verifiesWith(oldSecret, delivery!), false, "a receiver still on the old secret refuses it");

  const columns = () =>
    h.db
      .selectFrom("tenants")
      .select(["webhook_previous_secret_enc", "webhook_previous_secret_expires_at"])
      .where("domain", "=", h.tenant.domain)
      .executeTakeFirstOrThrow();
  assert.notEqual((await columns()).webhook_previous_secret_enc, null, "kept until the sweeper runs");
  await h.deps.store.sweepExpired(h.clock.now());
  assert.deepEqual(await columns(), { webhook_previous_secret_enc: null, webhook_previous_secret_expires_at: null });
});

test("a rotation within the window keeps one previous secret: the one it replaced, for a new window", async (t) => {
  const receiver = await startVerifyingReceiver(t);
  const h = await harnessSendingTo(t, receiver);
  const first = h.tenant.webhookSecret;
  const second = (await rotate(h)).webhookSecret;
  h.clock.advance(MINUTE);
  const thirdAt = h.clock.now();
  const third = await rotate(h);
  assert.equal(third.previousSecretExpiresAt, new Date(thirdAt + WINDOW_MS).toISOString(), "a new window from the second rotation");
  receiver.held = second;
  await registered(h, "twice@example.org");
  assert.equal(await deliverWebhooks(h), 1);
  const [delivery] = receiver.deliveries;
  assert.equal(delivery!.status, 204);
  assert.equal(delivery!.headers["webhook-signature"], `${officialSignature(second, delivery!)} ${officialSignature(third.webhookSecret, delivery!)}`);
  assert.equal(verifiesWith(first, delivery!), false, "the first secret stopped signing at the second rotation");
});

test("a secret no configured key opens is not kept (previousSecretExpiresAt null); a previous one the dispatcher can't open is left out of the header", async (t) => {
  const receiver = await startVerifyingReceiver(t);
  const h = await harnessSendingTo(t, receiver);
  const lost = createSecretBox(Buffer.from("33".repeat(32), "hex"), seededRandom("lost-key")).seal("whsec_" + Buffer.alloc(32, 9).toString("base64"));
  await h.db.updateTable("tenants").set({ webhook_secret_enc: lost }).where("domain", "=", h.tenant.domain).execute();
  const rotated = await rotate(h);
  assert.equal(rotated.previousSecretExpiresAt, null);
  receiver.held = rotated.webhookSecret;
  await registered(h, "first@example.org");
  assert.equal(await deliverWebhooks(h), 1);
  assert.equal(receiver.deliveries[0]!.headers["webhook-signature"], officialSignature(rotated.webhookSecret, receiver.deliveries[0]!));

  // A previous secret sealed under a key dropped since (a reseal skipped): the current one still signs.
  await h.db
    .updateTable("tenants")
    .set({ webhook_previous_secret_enc: lost, webhook_previous_secret_expires_at: h.clock.now() + WINDOW_MS })
    .where("domain", "=", h.tenant.domain)
    .execute();
  await registered(h, "second@example.org");
  assert.equal(await deliverWebhooks(h), 1);
  const delivery = receiver.deliveries[1]!;
  assert.equal(delivery.status, 204);
  assert.equal(delivery.headers["webhook-signature"], officialSignature(rotated.webhookSecret, delivery));
  assert.match(h.logs.join(""), /the previous webhook secret can't be opened: signed with the current one only/);
});
