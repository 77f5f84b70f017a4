// Webhook delivery end to end (spec 6, D9): real local receiver, real SQLite outbox, manual clock.
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { test } from "node:test";
import { Webhook } from "standardwebhooks";
import { HOUR } from "../src/core/clock.js";
import { operatorHeaders, register } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  parseLink,
  post,
  registerVerifiedMember,
  STRONG_PASSWORD,
  type Harness,
  type ReceivedWebhook,
} from "./support/harness.js";
import { listenOnLoopback } from "./support/local-servers.js";

interface Delivery {
  id: string;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  lastError: string | null;
  nextAttemptAt: string | null;
}

async function deliveries(h: Harness): Promise<Delivery[]> {
  const response = await h.app.inject({ method: "GET", url: `/operator/tenants/${h.tenant.domain}/webhook-deliveries`, headers: operatorHeaders() });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ deliveries: Delivery[] }>().deliveries;
}

async function onlyDelivery(h: Harness): Promise<Delivery> {
  const list = await deliveries(h);
  assert.equal(list.length, 1, JSON.stringify(list));
  return list[0]!;
}

function headerRecord(hook: ReceivedWebhook): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(hook.headers)) if (typeof value === "string") out[name] = value;
  return out;
}

function manualSignature(secret: string, id: string, timestamp: string, body: string): string {
  assert.ok(secret.startsWith("whsec_"));
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest("base64");
}

test("verify_email webhook: Standard Webhooks headers; signature verifies with standardwebhooks and by hand", async () => {
  const h = await createHarness();
  try {
    // standardwebhooks checks the timestamp against real time (5 min tolerance).
    h.clock.set(Date.now());
    const response = await register(h, "signed@example.org");
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 1);
    const hook = h.receiver.received[0]!;
    assert.equal(hook.path, "/verify", "sent to the tenant's emailVerificationWebhook");
    assert.match(String(hook.headers["content-type"]), /^application\/json/);
    const id = String(hook.headers["webhook-id"]);
    const timestamp = String(hook.headers["webhook-timestamp"]);
    const signature = String(hook.headers["webhook-signature"]);
    assert.match(id, /^msg_[A-Za-z0-9_-]+$/);
    assert.match(timestamp, /^\d+$/);
    assert.equal(Number(timestamp), Math.floor(h.clock.now() / 1000), "timestamp in seconds from the service clock");
    assert.match(signature, /^v1,[A-Za-z0-9+/]+=*$/);

    const verified = new Webhook(h.tenant.webhookSecret).verify(hook.rawBody, headerRecord(hook));
    assert.deepEqual(verified, JSON.parse(hook.rawBody));
    assert.ok(signature.split(" ").includes(manualSignature(h.tenant.webhookSecret, id, timestamp, hook.rawBody)));

    // A tampered body or another secret does not verify.
    assert.throws(() => new Webhook(h.tenant.webhookSecret).verify(hook.rawBody.replace("signed@", "forged@"), headerRecord(hook)));
    const otherSecret = "whsec_" + Buffer.alloc(32, 7).toString("base64");
    assert.throws(() => new Webhook(otherSecret).verify(hook.rawBody, headerRecord(hook)));
  } finally {
    await h.close();
  }
});

test("payloads carry exactly the spec 6 fields; recordid is a string; links point at the stored tenant domain", async () => {
  const h = await createHarness();
  try {
    // A spoofed Host must not steer the link (D2): the header names the tenant, the link uses the stored domain.
    const response = await post(
      h,
      "/auth/register-password",
      { email: "Fields@Example.org", name: "Ada Lovelace", password: STRONG_PASSWORD, "bot-challenge-response": "x" },
      { headers: { "x-tenant-domain": "MEMBERS.example.com", host: "evil.example" } },
    );
    assert.equal(response.statusCode, 200, response.body);
    const recordid = response.json<{ recordid: string }>().recordid;
    assert.equal(await deliverWebhooks(h), 1);
    const verify = h.receiver.last("verify_email");
    assert.deepEqual(Object.keys(verify.body).sort(), ["email", "event_type", "name", "recordid", "verificationLink"]);
    assert.equal(verify.body.event_type, "verify_email");
    assert.equal(typeof verify.body.recordid, "string");
    assert.match(verify.body.recordid!, /^\d+$/);
    assert.equal(verify.body.recordid, recordid);
    assert.equal(verify.body.email, "fields@example.org");
    assert.equal(verify.body.name, "Ada Lovelace");
    const link = parseLink(verify.body.verificationLink!);
    assert.match(verify.body.verificationLink!, /^https:\/\/members\.example\.com\/email-verified\/\d+\/[A-Za-z0-9_-]{43}$/);
    assert.equal(link.recordId, recordid);
    assert.equal((await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token })).statusCode, 200);

    assert.equal((await post(h, "/auth/forgot-password", { email: "fields@example.org", "bot-challenge-response": "x" })).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    const reset = h.receiver.last("password_reset");
    assert.equal(reset.path, "/reset", "sent to the tenant's passwordResetWebhook");
    assert.deepEqual(Object.keys(reset.body).sort(), ["email", "event_type", "name", "recordid", "resetLink"]);
    assert.equal(typeof reset.body.recordid, "string");
    assert.equal(reset.body.recordid, recordid);
    assert.match(reset.body.resetLink!, /^https:\/\/members\.example\.com\/reset-password\/\d+\/[A-Za-z0-9_-]{43}$/);
    assert.ok(
      String(reset.headers["webhook-signature"])
        .split(" ")
        .includes(manualSignature(h.tenant.webhookSecret, String(reset.headers["webhook-id"]), String(reset.headers["webhook-timestamp"]), reset.rawBody)),
    );
  } finally {
    await h.close();
  }
});

test("a 500 is retried after the backoff with the same webhook-id; not before", async () => {
  const h = await createHarness();
  try {
    h.receiver.failNext = 1;
    assert.equal((await register(h, "retry@example.org")).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 0);
    const failed = await onlyDelivery(h);
    assert.equal(failed.status, "pending");
    assert.equal(failed.attempts, 1);
    assert.equal(failed.lastError, "http 500");
    assert.ok(failed.nextAttemptAt !== null);
    const retryAt = Date.parse(failed.nextAttemptAt);
    assert.ok(retryAt > h.clock.now(), "the retry is in the future");
    assert.ok(retryAt - h.clock.now() <= 15_000, "first retry about 10 s later");

    // Not before its time.
    assert.equal(await deliverWebhooks(h), 0);
    h.clock.advance(5_000);
    assert.equal(await deliverWebhooks(h), 0);
    assert.equal(h.receiver.received.length, 0);
    assert.equal((await onlyDelivery(h)).attempts, 1);

    h.clock.advance(10_000);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 1);
    const delivered = await onlyDelivery(h);
    assert.equal(delivered.id, failed.id, "one event, one id");
    assert.equal(delivered.status, "delivered");
    assert.equal(delivered.attempts, 2);
    assert.equal(delivered.nextAttemptAt, null);
    assert.equal(h.receiver.received[0]!.headers["webhook-id"], failed.id, "the retry carries the first attempt's webhook-id");
    // Delivered once: nothing more goes out.
    h.clock.advance(HOUR);
    assert.equal(await deliverWebhooks(h), 0);
    assert.equal(h.receiver.received.length, 1);
  } finally {
    await h.close();
  }
});

test("a queued delivery survives a restart and its link works afterwards", async () => {
  const h = await createHarness();
  try {
    const response = await register(h, "restart@example.org");
    assert.equal(response.statusCode, 200);
    await h.restart();
    assert.equal(await deliverWebhooks(h), 1);
    const hook = h.receiver.last("verify_email");
    const link = parseLink(hook.body.verificationLink!);
    assert.equal(link.recordId, response.json().recordid);
    const verified = await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token });
    assert.equal(verified.statusCode, 200, verified.body);
    // The webhook secret survives the restart as well (sealed at rest).
    assert.ok(
      String(hook.headers["webhook-signature"])
        .split(" ")
        .includes(manualSignature(h.tenant.webhookSecret, String(hook.headers["webhook-id"]), String(hook.headers["webhook-timestamp"]), hook.rawBody)),
    );
  } finally {
    await h.close();
  }
});

test("a failing receiver is retried for at least 24 h, then the delivery is marked failed", async () => {
  const h = await createHarness();
  try {
    h.receiver.failNext = 1000;
    const start = h.clock.now();
    assert.equal((await register(h, "giveup@example.org")).statusCode, 200);
    const attemptTimes: number[] = [];
    for (let step = 0; step < 40; step++) {
      const attempted = await deliverWebhooks(h);
      if (attempted > 0) attemptTimes.push(h.clock.now());
      const current = await onlyDelivery(h);
      if (current.status !== "pending") break;
      h.clock.advance(HOUR);
    }
    const final = await onlyDelivery(h);
    assert.equal(final.status, "failed");
    assert.equal(final.lastError, "http 500");
    assert.equal(final.nextAttemptAt, null);
    assert.equal(final.attempts, attemptTimes.length);
    assert.equal(h.receiver.received.length, 0);
    assert.equal(1000 - h.receiver.failNext, attemptTimes.length, "every attempt reached the receiver");
    const first = attemptTimes[0]!;
    const last = attemptTimes[attemptTimes.length - 1]!;
    assert.equal(first, start);
    assert.ok(last - first >= 24 * HOUR, `attempts spread over ${(last - first) / HOUR} h`);
    assert.ok(last - first <= 26 * HOUR, "gives up soon after 24 h");
    // Failed is final.
    h.clock.advance(HOUR);
    h.receiver.failNext = 0;
    assert.equal(await deliverWebhooks(h), 0);
    assert.equal(h.receiver.received.length, 0);
  } finally {
    await h.close();
  }
});

test("SSRF guard: without WEBHOOK_ALLOW_PRIVATE_NETWORKS a loopback webhook is refused", async () => {
  const h = await createHarness({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" } });
  try {
    assert.equal(h.config.webhookAllowPrivateNetworks, false);
    assert.equal((await register(h, "ssrf@example.org")).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 0);
    const refused = await onlyDelivery(h);
    assert.equal(refused.status, "pending");
    assert.equal(refused.attempts, 1);
    assert.match(refused.lastError ?? "", /internal address/);

    // A hostname that resolves to loopback is refused as well (checked after DNS, not only for IP literals).
    const port = new URL(h.receiver.url).port;
    const patched = await h.app.inject({
      method: "PATCH",
      url: `/operator/tenants/${h.tenant.domain}`,
      headers: operatorHeaders(),
      payload: { settings: { emailVerificationWebhook: `http://localhost:${port}/verify` } },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal((await register(h, "ssrf2@example.org", STRONG_PASSWORD, { ip: "203.0.113.12" })).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 0);
    const byName = (await deliveries(h)).find((d) => d.attempts === 1 && d.id !== refused.id);
    assert.ok(byName, "the second delivery was attempted");
    assert.match(byName.lastError ?? "", /internal address/);
  } finally {
    await h.close();
  }
});

test("redirects are not followed: a 307 is a failed attempt and the target receives nothing", async () => {
  const h = await createHarness();
  const redirector = createServer((_req, res) => res.writeHead(307, { location: `${h.receiver.url}/verify` }).end());
  const redirectorUrl = await listenOnLoopback(redirector);
  try {
    const patched = await h.app.inject({
      method: "PATCH",
      url: `/operator/tenants/${h.tenant.domain}`,
      headers: operatorHeaders(),
      payload: { settings: { emailVerificationWebhook: `${redirectorUrl}/hook` } },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal((await register(h, "redirect@example.org")).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 0);
    const attempt = await onlyDelivery(h);
    assert.equal(attempt.status, "pending");
    assert.equal(attempt.attempts, 1);
    assert.match(attempt.lastError ?? "", /redirect/);
  } finally {
    redirector.closeAllConnections();
    await new Promise<void>((resolve) => redirector.close(() => resolve()));
    await h.close();
  }
});

test("a failed registration writes no delivery row", async () => {
  const h = await createHarness();
  try {
    const weak = await register(h, "weak@example.org", "password");
    assert.equal(weak.statusCode, 400, weak.body);
    assert.equal(weak.json().code, "weak_password");
    const breached = await register(h, "breached@example.org", "Password1!", { ip: "203.0.113.11" });
    assert.equal(breached.statusCode, 400, breached.body);
    assert.deepEqual(await deliveries(h), []);
    assert.equal(await deliverWebhooks(h), 0);
    assert.equal(h.receiver.received.length, 0);
  } finally {
    await h.close();
  }
});

test("registering an already verified email sends its owner account_exists with no link (D5, D18)", async () => {
  const h = await createHarness();
  try {
    await registerVerifiedMember(h, "taken@example.org");
    const before = (await deliveries(h)).length;
    const again = await register(h, "taken@example.org");
    assert.equal(again.statusCode, 200, again.body);
    assert.equal((await deliveries(h)).length, before + 1);
    assert.equal(await deliverWebhooks(h), 1);
    const notice = h.receiver.last("account_exists");
    assert.deepEqual(Object.keys(notice.body).sort(), ["email", "event_type", "name", "recordid"]);
  } finally {
    await h.close();
  }
});

test("every event gets its own webhook-id", async () => {
  const h = await createHarness();
  try {
    for (const [i, email] of ["a@example.org", "b@example.org", "c@example.org"].entries()) {
      assert.equal((await register(h, email, STRONG_PASSWORD, { ip: `203.0.113.${20 + i}` })).statusCode, 200);
    }
    // A resend for the same member is a new event.
    assert.equal((await post(h, "/auth/resend-verification", { email: "a@example.org", "bot-challenge-response": "x" })).statusCode, 200);
    assert.equal(await deliverWebhooks(h), 4);
    const ids = h.receiver.received.map((w) => String(w.headers["webhook-id"]));
    assert.equal(ids.length, 4);
    assert.equal(new Set(ids).size, 4, ids.join(","));
    const listed = (await deliveries(h)).map((d) => d.id);
    assert.deepEqual([...listed].sort(), [...ids].sort());
  } finally {
    await h.close();
  }
});

test("two dispatcher passes at once deliver each event exactly once", async () => {
  const h = await createHarness();
  try {
    assert.equal((await register(h, "once@example.org")).statusCode, 200);
    const counts = await Promise.all([deliverWebhooks(h), deliverWebhooks(h), deliverWebhooks(h)]);
    assert.equal(
      counts.reduce((a, b) => a + b, 0),
      1,
    );
    assert.equal(h.receiver.received.length, 1);
    assert.equal((await onlyDelivery(h)).status, "delivered");
  } finally {
    await h.close();
  }
});

test("a delivery claimed by a sender that died comes back once its lease expires", async () => {
  const h = await createHarness();
  try {
    assert.equal((await register(h, "lease@example.org")).statusCode, 200);
    // A sender claims the row and crashes before sending (nothing recorded).
    const claimed = await h.deps.store.outbox.claimDueDeliveries(h.clock.now(), 20, 2 * 60 * 1000);
    assert.equal(claimed.length, 1);
    await h.restart();
    assert.equal(await deliverWebhooks(h), 0, "still leased");
    h.clock.advance(2 * 60 * 1000 + 1000);
    assert.equal(await deliverWebhooks(h), 1);
    assert.equal(h.receiver.received.length, 1);
    assert.equal(h.receiver.received[0]!.headers["webhook-id"], claimed[0]!.id);
    assert.equal((await onlyDelivery(h)).status, "delivered");
  } finally {
    await h.close();
  }
});
