/**
 * Dev mode (DEV_MODE=true, `npm run dev`): the `localhost` tenant created once at start, and the
 * dev inbox that receives its signed webhooks and shows them as the tenant's emails. Dev mode is
 * SQLite only, so these harnesses name a SQLite file even in the PostgreSQL pass.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { promisify } from "node:util";
import type { Challenge } from "altcha-lib";
import { ConfigError, loadConfig } from "../src/config.js";
import { DEV_TENANT_DOMAIN } from "../src/dev/dev-mode.js";
import { SECURITY_ALERTS } from "../src/core/webhook-payloads.js";
import { DEV_INBOX_CAPACITY, DevInbox, describeMessage } from "../src/dev/inbox.js";
import { startDevMode, type DevModeStart } from "../src/dev/start.js";
import { signWebhook } from "../src/events/webhook-sender.js";
import { createTenant, rotateWebhookSecret } from "../src/flows/tenants/tenants.js";
import { WEBHOOK_SECRET_ROTATION_WINDOW_MS } from "../src/rules.js";
import { createHarness, deliverWebhooks, get, parseLink, post, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { solveAltcha } from "./support/altcha.js";
import { nodeWarnings, startServerProcess, withNodeWarningsShown } from "./support/server-process.js";

interface InboxEmail {
  id: string;
  site: string;
  eventType: string;
  subject: string;
  to: { email: string; name: string };
  link: string | null;
  code: string | null;
  payload: Record<string, unknown>;
}

interface DevHarness {
  h: Harness;
  started: DevModeStart;
  printed: string[];
  /** Listens again (a restart gets a new port) and runs the dev-mode start, as server.ts does. */
  start(): Promise<DevModeStart>;
}

async function createDevHarness(t: TestContext): Promise<DevHarness> {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-dev-"));
  const h = await createHarness({ dataDir, env: { DEV_MODE: "true", DATABASE_URL: `sqlite:${join(dataDir, "dev.db")}` } });
  t.after(async () => {
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const printed: string[] = [];
  const start = async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    return startDevMode(h.deps, h.app, (line) => printed.push(line));
  };
  return { h, printed, start, started: await start() };
}

/** What the ALTCHA widget sends for the dev tenant (the harness makes the proof of work cheap). */
async function solveBotChallenge(h: Harness): Promise<string> {
  const response = await get(h, "/auth/bot-challenge", { domain: DEV_TENANT_DOMAIN });
  assert.equal(response.statusCode, 200, response.body);
  return solveAltcha(response.json<Challenge>());
}

async function registerDevMember(h: Harness, email: string, name: string): Promise<string> {
  const response = await post(
    h,
    "/auth/register-password",
    { email, name, password: STRONG_PASSWORD, "bot-challenge-response": await solveBotChallenge(h) },
    { domain: DEV_TENANT_DOMAIN },
  );
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ recordid: string }>().recordid;
}

async function inbox(h: Harness): Promise<InboxEmail[]> {
  const response = await h.app.inject({ method: "GET", url: "/dev/inbox.json" });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<{ messages: InboxEmail[] }>().messages;
}

async function inboxPage(h: Harness): Promise<string> {
  const response = await h.app.inject({ method: "GET", url: "/dev/inbox" });
  assert.equal(response.statusCode, 200, response.body);
  assert.match(String(response.headers["content-type"]), /^text\/html/);
  return response.body;
}

async function devWebhookSecret(h: Harness): Promise<string> {
  const tenant = await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN);
  return h.deps.secrets.open((await h.deps.store.tenants.findWebhookSecret(tenant!.id))!);
}

/** POSTs a body to the inbox as the dispatcher would, signed with `secret` (or a given signature). */
async function postToInbox(h: Harness, body: string, options: { secret: string; id?: string; timestampSeconds?: number; signature?: string }) {
  const id = options.id ?? "msg_test";
  const timestampSeconds = options.timestampSeconds ?? Math.floor(h.clock.now() / 1000);
  const signature = options.signature ?? signWebhook(options.secret, id, timestampSeconds, body);
  return h.app.inject({
    method: "POST",
    url: "/dev/inbox/webhook",
    payload: body,
    headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(timestampSeconds), "webhook-signature": signature },
  });
}

test("without DEV_MODE the dev inbox routes answer 404 and no dev tenant exists", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assert.equal(h.deps.dev, undefined);
  for (const [method, url] of [
    ["GET", "/dev/inbox"],
    ["GET", "/dev/inbox.json"],
    ["POST", "/dev/inbox/webhook"],
    ["GET", "/"],
  ] as const) {
    const response = await h.app.inject({ method, url, ...(method === "POST" ? { payload: {} } : {}) });
    assert.equal(response.statusCode, 404, `${method} ${url}`);
    assert.equal(response.json().code, "not_found");
  }
  assert.equal(await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN), undefined);
});

test("config: DEV_MODE defaults to false; on, it defaults to its own SQLite file, loopback and private webhooks; refused with PostgreSQL", () => {
  const off = loadConfig({});
  assert.equal(off.devMode, false);
  assert.equal(off.databaseUrl, "sqlite:./data/latch.db");
  assert.equal(off.host, "0.0.0.0");
  assert.equal(off.webhookAllowPrivateNetworks, false);

  const on = loadConfig({ DEV_MODE: "true" });
  assert.equal(on.devMode, true);
  assert.equal(on.databaseUrl, "sqlite:./data/dev.db", "never the production default file");
  assert.equal(on.host, "127.0.0.1", "the inbox shows live links: not on the network unless HOST says so");
  assert.equal(on.webhookAllowPrivateNetworks, true, "the dispatcher calls back into this process");
  assert.equal(loadConfig({ DEV_MODE: "true", HOST: "0.0.0.0", WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" }).host, "0.0.0.0");

  assert.throws(
    () => loadConfig({ DEV_MODE: "true", DATABASE_URL: "postgres://latch@db.internal/latch", SECRETS_KEY: "11".repeat(32) }),
    (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith("DEV_MODE=true is refused with a PostgreSQL DATABASE_URL")),
  );
  assert.throws(() => loadConfig({ DEV_MODE: "true", DATABASE_URL: "postgresql://latch@db.internal/latch", SECRETS_KEY: "11".repeat(32) }), /DEV_MODE/);
  assert.throws(() => loadConfig({ DEV_MODE: "yes" }), /DEV_MODE must be one of true, false/);
  assert.equal(loadConfig({ DEV_MODE: "false", DATABASE_URL: "postgres://latch@db.internal/latch", SECRETS_KEY: "11".repeat(32) }).devMode, false);
});

test("the inbox keeps the newest 200 messages", () => {
  const kept = new DevInbox();
  for (let i = 0; i <= DEV_INBOX_CAPACITY; i++) kept.add({ id: `msg_${i}`, site: "localhost", receivedAt: i, payload: {} });
  const list = kept.list();
  assert.equal(list.length, DEV_INBOX_CAPACITY);
  assert.equal(list[0]!.id, `msg_${DEV_INBOX_CAPACITY}`, "newest first");
  assert.equal(list.at(-1)!.id, "msg_1", "the oldest one dropped");
});

test("the dev tenant exists after start: ALTCHA, every webhook at this process's inbox; a second start creates no second one", async (t) => {
  const dev = await createDevHarness(t);
  const { h, started } = dev;
  assert.equal(started.created, true);
  assert.match(started.internalApiKey ?? "", /^latch_/);
  assert.match(started.webhookUrl, /^http:\/\/127\.0\.0\.1:\d+\/dev\/inbox\/webhook$/);
  assert.match(dev.printed[0]!, /^Latch dev mode: open http:\/\/localhost:\d+\/ui\/register$/);
  assert.match(dev.printed[1]!, /^Dev inbox, where the emails arrive: http:\/\/localhost:\d+\/dev\/inbox$/);
  // Issue 34 item 4: the CLI on this server's database, never its key.
  assert.equal(
    dev.printed[2],
    `Operator CLI on this server's database: DATABASE_URL=sqlite:${join(h.dataDir, "dev.db")} npm run latch -- tenant list (with this server's SECRETS_KEY)`,
  );
  assert.ok(
    dev.printed.some((line) => line.includes(started.internalApiKey!)),
    "the admin key is printed at creation",
  );
  const tenant = await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN);
  assert.deepEqual(tenant!.settings.botProtection, { provider: "altcha" });
  for (const name of ["emailVerificationWebhook", "passwordResetWebhook", "magicLoginWebhook", "securityAlertWebhook"] as const) {
    assert.equal(tenant!.settings[name], started.webhookUrl, name);
  }
  // The printed key works on the admin API.
  const admin = await h.app.inject({
    method: "POST",
    url: "/auth/admin/require-password-change",
    payload: { recordId: "123456789012345" },
    headers: { "x-tenant-domain": DEV_TENANT_DOMAIN, authorization: `Bearer ${started.internalApiKey}` },
  });
  assert.equal(admin.statusCode, 404, admin.body); // authenticated: only the member is unknown

  await h.restart();
  dev.printed.length = 0;
  const again = await dev.start();
  assert.equal(again.created, false);
  assert.equal(again.internalApiKey, undefined, "the key is shown once");
  assert.equal(again.applicationId, started.applicationId);
  assert.ok(
    dev.printed.some((line) => line.includes("rotate-key")),
    dev.printed.join("\n"),
  );
  const tenants = (await h.deps.store.tenants.listTenants()).filter((row) => row.domain === DEV_TENANT_DOMAIN);
  assert.equal(tenants.length, 1);
  // The restart listens on another port: the inbox webhooks follow it.
  assert.equal(tenants[0]!.settings.emailVerificationWebhook, again.webhookUrl);
});

test("a dev member's registration lands in /dev/inbox.json as verify_email, with a link to this process that verifies", async (t) => {
  const { h, started } = await createDevHarness(t);
  const recordId = await registerDevMember(h, "ada@example.org", "Ada Lovelace");
  assert.equal(await deliverWebhooks(h), 1);

  const messages = await inbox(h);
  assert.equal(messages.length, 1);
  const [email] = messages;
  assert.equal(email!.eventType, "verify_email");
  assert.equal(email!.subject, "Confirm your email address");
  assert.deepEqual(email!.to, { email: "ada@example.org", name: "Ada Lovelace" });
  const port = new URL(started.webhookUrl).port;
  assert.match(email!.link!, new RegExp(`^http://localhost:${port}/email-verified/${recordId}/[A-Za-z0-9_-]{43}$`));
  assert.equal(email!.payload.verificationLink, email!.link);

  const tenant = await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN);
  const [delivery] = await h.deps.store.outbox.listRecentDeliveries(tenant!.id, 10);
  assert.equal(delivery!.status, "delivered");
  assert.equal(email!.id, delivery!.id, "the webhook-id");

  const link = parseLink(email!.link!);
  const verified = await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token }, { domain: DEV_TENANT_DOMAIN });
  assert.equal(verified.statusCode, 200, verified.body);
});

test("other tenants keep https://<stored domain> links in dev mode (D2)", async (t) => {
  const { h } = await createDevHarness(t);
  const response = await post(h, "/auth/register-magic-link", { email: "grace@example.org", name: "Grace" }, { headers: { host: "localhost:8080" } });
  assert.equal(response.statusCode, 200, response.body);
  await deliverWebhooks(h);
  assert.match(h.receiver.last("verify_email").body.verificationLink!, /^https:\/\/members\.example\.com\/email-verified\//);
  assert.equal((await inbox(h)).length, 0, "another tenant's webhooks go to its own receiver");
});

test("a second tenant whose webhooks point at the dev inbox is shown there, named, not refused with 401", async (t) => {
  const { h, started } = await createDevHarness(t);
  const hooks = { emailVerificationWebhook: started.webhookUrl, passwordResetWebhook: started.webhookUrl, magicLoginWebhook: started.webhookUrl };
  await createTenant(h.deps, { domain: "second.test", settings: { ...hooks, botProtection: { provider: "none" } } });
  const response = await post(h, "/auth/register-magic-link", { email: "lin@example.org", name: "Lin" }, { domain: "second.test" });
  assert.equal(response.statusCode, 200, response.body);
  assert.equal(await deliverWebhooks(h), 1);

  const tenant = await h.deps.store.tenants.findTenantByDomain("second.test");
  const [delivery] = await h.deps.store.outbox.listRecentDeliveries(tenant!.id, 10);
  assert.equal(delivery!.status, "delivered", "the inbox took it (it answered 401 before)");
  const [email] = await inbox(h);
  assert.equal(email!.site, "second.test");
  assert.equal(email!.eventType, "verify_email");
  assert.match(email!.link!, /^https:\/\/second\.test\/email-verified\//, "its links keep its own domain (D2)");
  assert.match(await inboxPage(h), /<dt>Site<\/dt><dd>second\.test<\/dd>/);
});

test("in dev mode an unknown site's page says which hostname, which database, and how to add it; never outside dev mode", async (t) => {
  const { h } = await createDevHarness(t);
  const page = await h.app.inject({ method: "GET", url: "/ui/login", headers: { host: "shop.test:8080" } });
  assert.equal(page.statusCode, 404);
  assert.ok(page.body.includes("This site is not known"), page.body);
  assert.ok(page.body.includes(`Dev mode: no tenant has the hostname &quot;shop.test&quot; in SQLite ${h.dataDir}/dev.db`), page.body);
  assert.ok(page.body.includes("tenant create --domain shop.test"), page.body);

  const production = await createHarness();
  t.after(() => production.close());
  const plain = await production.app.inject({ method: "GET", url: "/ui/login", headers: { host: "shop.test" } });
  assert.equal(plain.statusCode, 404);
  assert.ok(plain.body.includes("This site is not known"));
  assert.ok(!plain.body.includes("Dev mode") && !plain.body.includes("SQLite"), "no hint, no path, outside dev mode");
});

test("the page shows each message as an email, newest first: subject, recipient, time and the link as a button", async (t) => {
  const { h } = await createDevHarness(t);
  await registerDevMember(h, "ada@example.org", "Ada Lovelace");
  await deliverWebhooks(h);
  h.clock.advance(60_000);
  const forgot = await post(
    h,
    "/auth/forgot-password",
    { email: "ada@example.org", "bot-challenge-response": await solveBotChallenge(h) },
    { domain: DEV_TENANT_DOMAIN },
  );
  assert.equal(forgot.statusCode, 200, forgot.body);
  await deliverWebhooks(h);

  const [reset, verify] = await inbox(h);
  assert.equal(reset!.eventType, "password_reset");
  assert.equal(verify!.eventType, "verify_email");
  const page = await inboxPage(h);
  assert.ok(page.indexOf('<h3 id="m0-subject">Reset your password</h3>') > 0, page);
  assert.ok(page.indexOf("Reset your password") < page.indexOf("Confirm your email address"), "newest first");
  assert.ok(page.includes("Ada Lovelace &lt;ada@example.org&gt;"), "the recipient");
  assert.ok(page.includes(`<a class="button" href="${reset!.link}"`), "the reset link as a button");
  assert.ok(page.includes(`<a class="button" href="${verify!.link}"`), "the verification link as a button");
  assert.ok(page.includes('<time datetime="2026-01-01T00:01:00.000Z">2026-01-01 00:01:00 UTC</time>'), "the time it arrived");
  // Says what it is, and is built to be read by everyone.
  assert.match(page, /This is a <strong>development inbox<\/strong>/);
  assert.match(page, /Latch never sends email itself/);
  for (const landmark of ['<html lang="en">', "<header>", '<main id="messages"', '<nav aria-label="Inbox">', "<footer>", "<h1>", "<h2>"]) {
    assert.ok(page.includes(landmark), landmark);
  }
  assert.ok(!page.includes("<script"), "no JavaScript");
  assert.ok(!page.includes('http-equiv="refresh"'), "no refresh unless asked for");
  const refreshing = await h.app.inject({ method: "GET", url: "/dev/inbox?refresh=on" });
  assert.ok(refreshing.body.includes('<meta http-equiv="refresh" content="5">'));
  assert.match(String((await h.app.inject({ method: "GET", url: "/dev/inbox" })).headers["content-security-policy"]), /default-src 'none'/);
});

test("security alerts show as 'Security alert: …' without a button", async (t) => {
  const { h } = await createDevHarness(t);
  const body = JSON.stringify({
    event_type: "security_alert",
    recordid: "123456789012345",
    email: "ada@example.org",
    name: "Ada",
    alert: "password_changed",
    at: "2026-01-01T00:00:00.000Z",
    ip: "203.0.113.5",
    country: null,
  });
  assert.equal((await postToInbox(h, body, { secret: await devWebhookSecret(h) })).statusCode, 204);
  const [alert] = await inbox(h);
  assert.equal(alert!.subject, "Security alert: your password was changed");
  assert.equal(alert!.link, null);
  const page = await inboxPage(h);
  assert.ok(page.includes("Security alert: your password was changed"));
  assert.ok(!page.includes('class="button"'));
});

test("D26: a magic_login email shows its code beside the link; other emails have none", async (t) => {
  const { h } = await createDevHarness(t);
  const secret = await devWebhookSecret(h);
  const body = JSON.stringify({
    event_type: "magic_login",
    recordid: "123456789012345",
    email: "ada@example.org",
    name: "Ada",
    magicLoginLink: "http://localhost:1/verify-magic-link/123456789012345/x",
    code: "012345",
  });
  assert.equal((await postToInbox(h, body, { secret, id: "msg_code" })).statusCode, 204);
  const hostile = JSON.stringify({
    event_type: "magic_login",
    email: "eve@example.org",
    magicLoginLink: "http://localhost:1/verify-magic-link/1/y",
    code: "<b>1</b>",
  });
  assert.equal((await postToInbox(h, hostile, { secret, id: "msg_hostile_code" })).statusCode, 204);
  const [escaped, email] = await inbox(h);
  assert.equal(email!.code, "012345", "in /dev/inbox.json, leading zero kept");
  assert.equal(escaped!.code, "<b>1</b>");
  const page = await inboxPage(h);
  const article = page.slice(page.indexOf('<h3 id="m1-subject">'), page.indexOf("</article>", page.indexOf('<h3 id="m1-subject">')));
  assert.ok(article.indexOf("Code: <strong><code>012345</code></strong>") > article.indexOf('class="button"'), "the code, after its link");
  assert.ok(page.includes("Code: <strong><code>&lt;b&gt;1&lt;/b&gt;</code></strong>"), "escaped");
  await registerDevMember(h, "grace@example.org", "Grace");
  await deliverWebhooks(h);
  assert.equal((await inbox(h))[0]!.code, null, "a verification email has no code");
});

test("account_exists (D18) shows as an email without a button", async (t) => {
  const { h } = await createDevHarness(t);
  const body = JSON.stringify({ event_type: "account_exists", recordid: "123456789012345", email: "ada@example.org", name: "Ada" });
  assert.equal((await postToInbox(h, body, { secret: await devWebhookSecret(h) })).statusCode, 204);
  const [notice] = await inbox(h);
  assert.equal(notice!.subject, "Someone tried to register with your email address");
  assert.equal(notice!.link, null);
  assert.ok(!(await inboxPage(h)).includes('class="button"'));
});

test("a webhook whose signature doesn't verify is refused with 401 and not stored; a retry is kept once", async (t) => {
  const { h } = await createDevHarness(t);
  const secret = await devWebhookSecret(h);
  const body = JSON.stringify({
    event_type: "magic_login",
    recordid: "123456789012345",
    email: "ada@example.org",
    name: "Ada",
    magicLoginLink: "http://localhost:1/verify-magic-link/123456789012345/x",
  });
  const now = Math.floor(h.clock.now() / 1000);
  const refusals = [
    await postToInbox(h, body, { secret: "whsec_" + Buffer.alloc(32, 7).toString("base64") }), // another tenant's secret
    await postToInbox(h, body.replace("ada@", "eve@"), { secret, signature: signWebhook(secret, "msg_test", now, body) }), // body changed after signing
    await postToInbox(h, body, { secret, signature: signWebhook(secret, "msg_other", now, body) }), // signed for another id
    await postToInbox(h, body, { secret, timestampSeconds: now - 6 * 60 }), // too old
    await postToInbox(h, body, { secret, signature: "v1,AAAA" }),
    await h.app.inject({ method: "POST", url: "/dev/inbox/webhook", payload: body, headers: { "content-type": "application/json" } }), // unsigned
  ];
  for (const [index, response] of refusals.entries()) {
    assert.equal(response.statusCode, 401, `refusal ${index}: ${response.body}`);
    assert.equal(response.json().code, "unauthorized");
  }
  assert.equal((await inbox(h)).length, 0);

  // Several signatures (during a secret rotation) are allowed: one must match.
  const signature = `v1,${Buffer.alloc(32).toString("base64")} ${signWebhook(secret, "msg_test", now, body)}`;
  assert.equal((await postToInbox(h, body, { secret, signature })).statusCode, 204);
  assert.equal((await postToInbox(h, body, { secret })).statusCode, 204, "a retry of the same webhook-id");
  assert.equal((await inbox(h)).length, 1);
});

test("after a rotation the inbox keeps a webhook signed with the old secret alone (sent just before) during the window, and refuses it after", async (t) => {
  const { h } = await createDevHarness(t);
  const oldSecret = await devWebhookSecret(h);
  const { webhookSecret: newSecret } = await rotateWebhookSecret(h.deps, DEV_TENANT_DOMAIN);
  const body = JSON.stringify({ event_type: "account_exists", recordid: "123456789012345", email: "ada@example.org", name: "Ada" });
  assert.equal((await postToInbox(h, body, { secret: oldSecret, id: "msg_in_flight" })).statusCode, 204, "signed before the rotation");
  assert.equal((await postToInbox(h, body, { secret: newSecret, id: "msg_new" })).statusCode, 204);
  h.clock.advance(WEBHOOK_SECRET_ROTATION_WINDOW_MS);
  assert.equal((await postToInbox(h, body, { secret: oldSecret, id: "msg_too_late" })).statusCode, 401, "the window is over");
  assert.equal((await postToInbox(h, body, { secret: newSecret, id: "msg_later" })).statusCode, 204);
  assert.deepEqual((await inbox(h)).map((m) => m.id).sort(), ["msg_in_flight", "msg_later", "msg_new"]);
});

test("every value is HTML-escaped; a link that isn't http(s) never becomes a button", async (t) => {
  const { h } = await createDevHarness(t);
  await registerDevMember(h, "mallory@example.org", "<script>alert(1)</script>");
  await deliverWebhooks(h);
  const page = await inboxPage(h);
  assert.ok(page.includes("&lt;script&gt;alert(1)&lt;/script&gt; &lt;mallory@example.org&gt;"), page);
  assert.ok(!page.includes("<script>"), "the raw tag");

  const secret = await devWebhookSecret(h);
  const body = JSON.stringify({
    event_type: "verify_email",
    recordid: "1",
    email: 'a"@example.org',
    name: "<b>bold</b>",
    verificationLink: "javascript:alert(3)",
  });
  assert.equal((await postToInbox(h, body, { secret, id: "msg_hostile" })).statusCode, 204);
  const unknownEvent = JSON.stringify({ event_type: 'x"><img src=x onerror=alert(2)>', email: "b@example.org" });
  assert.equal((await postToInbox(h, unknownEvent, { secret, id: "msg_unknown" })).statusCode, 204);
  const hostile = await inboxPage(h);
  assert.ok(!hostile.includes("<img"), "no injected element");
  assert.ok(!hostile.includes("<b>bold</b>"));
  assert.ok(hostile.includes("&lt;b&gt;bold&lt;/b&gt; &lt;a&quot;@example.org&gt;"));
  assert.ok(!hostile.includes('href="javascript:'), "no javascript: button");
  assert.ok(hostile.includes("<code>javascript:alert(3)</code>"), "shown as text");
  assert.ok(hostile.includes("Webhook: x&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"), "an unknown event_type, escaped");
});

test("`npm run dev`'s entry starts on a fresh data directory, prints the URL to open, the page answers, and Node prints no warning", async (t) => {
  const packageJson = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  assert.equal(packageJson.scripts.dev, "tsx src/dev/main.ts");
  const dataDir = mkdtempSync(join(tmpdir(), "latch-dev-process-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = withNodeWarningsShown({ ...process.env, DATABASE_URL: `sqlite:${dataDir}/dev.db`, PORT: "0", LOG_LEVEL: "info", BREACH_CHECK_MODE: "offline" });
  delete env.SECRETS_KEY;
  delete env.DEV_MODE;
  delete env.HOST;

  const startOnce = async (): Promise<{ lines: string[]; url: string }> => {
    // The tenant line is printed last, once the dev tenant exists.
    const server = await startServerProcess({ entry: "src/dev/main.ts", env, readyPattern: /^Dev tenant "localhost"/ });
    t.after(() => server.stop("SIGKILL"));
    const lines = server.output();
    const pages = /^Latch dev mode: open (http:\/\/localhost:\d+\/ui\/register)$/.exec(lines.find((l) => l.startsWith("Latch dev mode: open")) ?? "")?.[1];
    assert.ok(pages, lines.join("\n"));
    assert.equal((await fetch(pages)).status, 200, "the printed pages URL answers");
    const url = /^Dev inbox, where the emails arrive: (http:\/\/localhost:\d+\/dev\/inbox)$/.exec(lines.find((l) => l.startsWith("Dev inbox,")) ?? "")?.[1];
    assert.ok(url, lines.join("\n"));
    assert.equal(new URL(url).port, String(server.port), "the printed URL is the port it listens on");
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /Latch dev inbox/);
    // Issue 34 item 4: the CLI command printed at start, pasted into a shell beside the running server, finds its tenant.
    const command = /^Operator CLI on this server's database: (DATABASE_URL=\S+ npm run latch -- tenant list)$/.exec(
      lines.find((l) => l.startsWith("Operator CLI")) ?? "",
    )?.[1];
    assert.ok(command, lines.join("\n"));
    const cliEnv = { ...env };
    delete cliEnv.DATABASE_URL;
    const cli = await promisify(execFile)("sh", ["-c", command], { env: cliEnv });
    const listed = JSON.parse(cli.stdout.slice(cli.stdout.indexOf("{"))) as { tenants: { domain: string }[] };
    assert.deepEqual(
      listed.tenants.map((tenant) => tenant.domain),
      [DEV_TENANT_DOMAIN],
    );
    assert.ok(cli.stderr.includes(`latch: database sqlite:${dataDir}/dev.db`), cli.stderr);
    assert.equal(await server.stop(), 0);
    // Issue 29: dev mode is quiet on every Node the CI runs (docs/operations.md#supported-runtimes).
    assert.deepEqual(nodeWarnings(server.output()), [], server.output().join("\n"));
    return { lines, url };
  };

  const first = await startOnce();
  assert.ok(
    first.lines.some((l) => /Dev tenant "localhost" created .*admin API key, shown this once: latch_/.test(l)),
    first.lines.join("\n"),
  );
  assert.ok(
    first.lines.some((l) => l.includes("DEV_MODE=true") && l.includes("never run this in production")),
    "the loud warning",
  );
  assert.ok(first.lines.includes("Breached-password check: offline, against the shipped list of common passwords."), "says where passwords are checked");
  assert.ok(existsSync(join(dataDir, "secrets.key")), "a generated key in the data directory, as without dev mode");
  const second = await startOnce();
  assert.ok(
    second.lines.some((l) => l.startsWith('Dev tenant "localhost" is ready')),
    second.lines.join("\n"),
  );
  assert.ok(!second.lines.some((l) => l.includes("shown this once")));
});

test("issue 34: every security alert's subject is words, not its code; a passkey's name and the device show", async (t) => {
  for (const alert of SECURITY_ALERTS) {
    const email = describeMessage({ id: "msg", site: "localhost", receivedAt: 0, payload: { event_type: "security_alert", alert } });
    assert.match(email.subject, /^Security alert: [a-z]/, alert);
    assert.ok(!email.subject.includes(alert), `${alert}: ${email.subject}`);
  }
  const { h } = await createDevHarness(t);
  const body = JSON.stringify({
    event_type: "security_alert",
    recordid: "123456789012345",
    email: "ada@example.org",
    name: "Ada",
    alert: "passkey_added",
    at: "2026-01-01T00:00:00.000Z",
    ip: "203.0.113.5",
    country: null,
    device: "Chrome on Linux",
    passkeyName: "Ada's <YubiKey>",
    secureAccountLink: "http://localhost:8080/secure-account/123456789012345/token",
  });
  assert.equal((await postToInbox(h, body, { secret: await devWebhookSecret(h) })).statusCode, 204);
  const [alert] = await inbox(h);
  assert.equal(alert!.subject, "Security alert: a passkey was added (“Ada's <YubiKey>”)");
  const page = await inboxPage(h);
  assert.ok(page.includes("Security alert: a passkey was added (“Ada&#39;s &lt;YubiKey&gt;”)"), "escaped, as every value");
  assert.ok(page.includes("<dt>Passkey</dt><dd>Ada&#39;s &lt;YubiKey&gt;</dd>"), "the passkey's name has a line of its own");
  assert.ok(page.includes("<dt>Device</dt><dd>Chrome on Linux</dd>"));
  assert.ok(page.includes("<dt>What happened</dt><dd>a passkey was added</dd>"));
});

test("issue 34: the dev inbox links back to the dev tenant's hosted pages, at the address the pages answer on", async (t) => {
  const { h, started } = await createDevHarness(t);
  const page = await inboxPage(h);
  const base = new URL(started.pagesUrl).origin;
  for (const [path, label] of [
    ["/ui/login", "Sign in"],
    ["/ui/register", "Register"],
    ["/ui/account", "Your account"],
  ]) {
    assert.ok(page.includes(`<a href="${base}${path}">${label}</a>`), `${label}: ${page}`);
  }
  assert.match(page, /<nav aria-label="Hosted pages">/);
  const login = await h.app.inject({ method: "GET", url: "/ui/login", headers: { host: new URL(base).host } });
  assert.equal(login.statusCode, 200, "the linked page answers for the dev tenant");
});
