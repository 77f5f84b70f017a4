// Webhook sender against real local receivers (127.0.0.1, port 0). Nothing here connects beyond loopback.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import type { ServerResponse } from "node:http";
import { createServer as createTcpServer, type Socket } from "node:net";
import { Webhook } from "standardwebhooks";
import { seededRandom } from "../src/core/random.js";
import { generateWebhookId, generateWebhookSecret, sendWebhook, signWebhook, type WebhookRequest } from "../src/events/webhook-sender.js";
import { isInternalAddress } from "../src/security/outbound.js";
import { listenOnLoopback, startLocalServer, type LocalServer, type RecordedRequest } from "./support/local-servers.js";

/** A real HTTP receiver on loopback at `url` (…/hooks); `answer` decides the reply (or never replies). */
async function startReceiver(answer: (response: ServerResponse) => void): Promise<LocalServer & { received: RecordedRequest[] }> {
  const server = await startLocalServer((_request, response) => answer(response));
  return { ...server, url: `${server.url}/hooks`, received: server.requests };
}

const secret = generateWebhookSecret(seededRandom("webhook-sender-test"));
const body = JSON.stringify({ event_type: "verify_email", verificationLink: "https://app.example/verify?token=SECRET-LINK-TOKEN" });

function webhookTo(url: string, overrides: Partial<WebhookRequest> = {}): WebhookRequest {
  return {
    url,
    secrets: [secret],
    id: "msg_test1",
    timestampSeconds: Math.floor(Date.now() / 1000),
    body,
    allowPrivateNetworks: true,
    timeoutMs: 2000,
    ...overrides,
  };
}

function assertNoSecretsIn(error: string): void {
  assert.ok(!error.includes("SECRET-LINK-TOKEN"), `error leaks body: ${error}`);
  assert.ok(!error.includes("verificationLink"), `error leaks body: ${error}`);
  assert.ok(!error.includes("query-secret"), `error leaks url query: ${error}`);
}

test("generated secrets and ids have the Standard Webhooks shapes", () => {
  const random = seededRandom("shapes");
  const generated = generateWebhookSecret(random);
  assert.match(generated, /^whsec_[A-Za-z0-9+/]+=*$/);
  assert.equal(Buffer.from(generated.slice(6), "base64").length, 32);
  const id = generateWebhookId(random);
  assert.match(id, /^msg_[A-Za-z0-9_-]{22}$/);
  assert.equal(Buffer.from(id.slice(4), "base64url").length, 16);
  assert.notEqual(generateWebhookId(random), id);
});

test("signature matches a vector computed by hand with node:crypto", () => {
  const key = Buffer.alloc(32, 7);
  const expected = "v1," + createHmac("sha256", key).update('msg_abc.1700000000.{"a":1}').digest("base64");
  assert.equal(signWebhook("whsec_" + key.toString("base64"), "msg_abc", 1700000000, '{"a":1}'), expected);
});

test("signature matches the published Standard Webhooks example", () => {
  const signature = signWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
  assert.equal(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
});

test("a delivery arrives with the right headers and body, and verifies with the standardwebhooks library", async () => {
  const receiver = await startReceiver((response) => response.writeHead(204).end());
  try {
    const webhook = webhookTo(receiver.url);
    assert.deepEqual(await sendWebhook(webhook), { ok: true, status: 204 });
    assert.equal(receiver.received.length, 1);
    const { headers, body: receivedBody, method } = receiver.received[0]!;
    assert.equal(method, "POST");
    assert.equal(receivedBody, body);
    assert.equal(headers["content-type"], "application/json");
    assert.equal(headers["user-agent"], "Latch-Webhooks/1");
    assert.equal(headers["webhook-id"], "msg_test1");
    assert.equal(headers["webhook-timestamp"], String(webhook.timestampSeconds));
    assert.equal(headers["webhook-signature"], signWebhook(secret, "msg_test1", webhook.timestampSeconds, body));
    const verified = new Webhook(secret).verify(receivedBody, {
      "webhook-id": String(headers["webhook-id"]),
      "webhook-timestamp": String(headers["webhook-timestamp"]),
      "webhook-signature": String(headers["webhook-signature"]),
    });
    assert.deepEqual(verified, JSON.parse(body));
  } finally {
    await receiver.close();
  }
});

test("two secrets (a rotation's window): `v1,<old> v1,<new>` in one header, and the standardwebhooks library verifies with either alone", async () => {
  const receiver = await startReceiver((response) => response.writeHead(204).end());
  try {
    const newSecret = generateWebhookSecret(seededRandom("webhook-sender-new-secret"));
    const webhook = webhookTo(receiver.url, { secrets: [secret, newSecret] });
    assert.deepEqual(await sendWebhook(webhook), { ok: true, status: 204 });
    const { headers, body: receivedBody } = receiver.received[0]!;
    const signature = String(headers["webhook-signature"]);
    assert.equal(
      signature,
      `${signWebhook(secret, "msg_test1", webhook.timestampSeconds, body)} ${signWebhook(newSecret, "msg_test1", webhook.timestampSeconds, body)}`,
    );
    const signedHeaders = {
      "webhook-id": String(headers["webhook-id"]),
      "webhook-timestamp": String(headers["webhook-timestamp"]),
      "webhook-signature": signature,
    };
    for (const held of [secret, newSecret]) assert.deepEqual(new Webhook(held).verify(receivedBody, signedHeaders), JSON.parse(body));
    const other = generateWebhookSecret(seededRandom("webhook-sender-other-secret"));
    assert.throws(() => new Webhook(other).verify(receivedBody, signedHeaders), /No matching signature/);
  } finally {
    await receiver.close();
  }
});

test("no secret, or one malformed among two, is a failure, not a throw", async () => {
  assert.deepEqual(await sendWebhook(webhookTo("http://127.0.0.1:1/", { secrets: [] })), { ok: false, error: "invalid secret" });
  assert.deepEqual(await sendWebhook(webhookTo("http://127.0.0.1:1/", { secrets: [secret, "whsec_"] })), { ok: false, error: "invalid secret" });
});

test("a 500 is a failure carrying the status, and the error holds neither body nor query", async () => {
  const receiver = await startReceiver((response) => response.writeHead(500).end(body));
  try {
    const result = await sendWebhook(webhookTo(receiver.url + "?token=query-secret"));
    assert.deepEqual(result, { ok: false, status: 500, error: "http 500" });
    if (!result.ok) assertNoSecretsIn(result.error);
  } finally {
    await receiver.close();
  }
});

test("a 302 is not followed: the redirect target receives nothing", async () => {
  const target = await startReceiver((response) => response.writeHead(200).end());
  const redirector = await startReceiver((response) => response.writeHead(302, { location: target.url }).end());
  try {
    const result = await sendWebhook(webhookTo(redirector.url));
    assert.deepEqual(result, { ok: false, status: 302, error: "redirect not followed" });
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(redirector.received.length, 1);
    assert.equal(target.received.length, 0);
  } finally {
    await Promise.all([target.close(), redirector.close()]);
  }
});

test("a receiver that never answers times out within timeoutMs", { timeout: 5000 }, async () => {
  const receiver = await startReceiver(() => {});
  try {
    const started = Date.now();
    const result = await sendWebhook(webhookTo(receiver.url + "?token=query-secret", { timeoutMs: 200 }));
    const elapsed = Date.now() - started;
    assert.deepEqual(result, { ok: false, error: "timeout" });
    assert.ok(elapsed >= 150 && elapsed < 1500, `took ${elapsed} ms`);
    assert.equal(receiver.received.length, 1);
  } finally {
    await receiver.close();
  }
});

test("a receiver that drips bytes (never idle, never done) is cut off by the overall timer", { timeout: 5000 }, async () => {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.write("HTTP/1.1 200 OK\r\nx-drip: "); // headers never finish
    const drip = setInterval(() => socket.write("a"), 40); // each byte resets the socket's idle timeout
    socket.on("close", () => clearInterval(drip));
  });
  const url = await listenOnLoopback(server);
  try {
    const started = Date.now();
    const result = await sendWebhook(webhookTo(`${url}/hooks`, { timeoutMs: 200 }));
    assert.deepEqual(result, { ok: false, error: "timeout" });
    assert.ok(Date.now() - started < 1500);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("an endless response body is not buffered: the attempt ends after 64 KiB", async () => {
  const chunk = Buffer.alloc(16 * 1024, 0x61);
  const receiver = await startReceiver((response) => {
    response.writeHead(200);
    const pump = (): void => {
      while (!response.destroyed && response.write(chunk));
      if (!response.destroyed) response.once("drain", pump);
    };
    pump();
  });
  try {
    assert.deepEqual(await sendWebhook(webhookTo(receiver.url, { timeoutMs: 5000 })), { ok: true, status: 200 });
  } finally {
    await receiver.close();
  }
});

test("a closed port reports a refused connection", async () => {
  const receiver = await startReceiver(() => {});
  await receiver.close();
  const result = await sendWebhook(webhookTo(receiver.url));
  assert.deepEqual(result, { ok: false, error: "connection refused" });
});

test("loopback URLs are refused unless private networks are allowed", async () => {
  const receiver = await startReceiver((response) => response.writeHead(200).end());
  try {
    const port = receiver.port;
    const internalUrls = [
      receiver.url,
      `http://localhost:${port}/hooks`, // goes through the guarded DNS lookup
      `http://[::1]:${port}/hooks`,
      `http://[::ffff:127.0.0.1]:${port}/hooks`,
      `http://2130706433:${port}/hooks`, // decimal 127.0.0.1, normalised by the URL parser
      `http://0x7f.1:${port}/hooks?token=query-secret`,
    ];
    for (const url of internalUrls) {
      const result = await sendWebhook(webhookTo(url, { allowPrivateNetworks: false }));
      assert.deepEqual(result, { ok: false, error: "internal address refused" }, url);
    }
    assert.equal(receiver.received.length, 0);

    assert.deepEqual(await sendWebhook(webhookTo(receiver.url, { allowPrivateNetworks: true })), { ok: true, status: 200 });
    assert.deepEqual(await sendWebhook(webhookTo(`http://localhost:${port}/hooks`, { allowPrivateNetworks: true })), { ok: true, status: 200 });
    assert.equal(receiver.received.length, 2);
  } finally {
    await receiver.close();
  }
});

test("only http: and https: URLs are sent", async () => {
  for (const url of ["file:///etc/passwd", "ftp://x", "javascript:alert(1)", "data:text/plain,hi", "not a url"]) {
    const result = await sendWebhook(webhookTo(url));
    assert.equal(result.ok, false, url);
    if (!result.ok) {
      assert.ok(["unsupported url scheme", "invalid url"].includes(result.error), `${url}: ${result.error}`);
      assert.equal(result.status, undefined);
    }
  }
});

test("a malformed secret is a failure, not a throw", async () => {
  assert.deepEqual(await sendWebhook(webhookTo("http://127.0.0.1:1/", { secrets: ["whsec_"] })), { ok: false, error: "invalid secret" });
});

test("isInternalAddress classifies addresses", () => {
  const internal = [
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "127.0.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd12:3456::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.1.2.3",
    "::127.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "2002:c0a8:101::1",
    "fe80::1%eth0",
    "not-an-ip",
    "64:ff9b:1::a00:1",
    "100::1",
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "::ffff:0:7f00:1",
  ];
  const external = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:4860:4860::8888"];
  for (const address of internal) assert.equal(isInternalAddress(address), true, address);
  for (const address of external) assert.equal(isInternalAddress(address), false, address);
});
