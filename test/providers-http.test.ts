/**
 * The bot challenge and the breached-password check through the HTTP API, against real local
 * servers speaking the siteverify and HIBP range protocols.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import { sealStoredBotSecrets, updateTenantSettings } from "../src/flows/tenants/tenants.js";
import { createHarness, login, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";
import { startLocalServer, type LocalServer } from "./support/local-servers.js";

/** Siteverify: the token "human" passes, anything else fails; "down" makes it answer 503. `forms`: each request's form. */
async function startSiteverify(): Promise<LocalServer & { forms: URLSearchParams[] }> {
  const forms: URLSearchParams[] = [];
  const server = await startLocalServer((request, response) => {
    const form = new URLSearchParams(request.body);
    forms.push(form);
    if (form.get("response") === "down") return void response.writeHead(503).end();
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ success: form.get("response") === "human" }));
  });
  return { ...server, forms };
}

/** HIBP range API at `rangeUrl`: knows the SHA-1 of `breached`, pads with count-0 lines. */
async function startRangeApi(breached: string): Promise<LocalServer & { rangeUrl: string }> {
  const sha1 = createHash("sha1").update(breached).digest("hex").toUpperCase();
  const server = await startLocalServer((request, response) => {
    const prefix = request.path.split("/").pop() ?? "";
    const lines = ["0000000000000000000000000000000000A:0", "0000000000000000000000000000000000B:3"];
    if (prefix === sha1.slice(0, 5)) lines.push(`${sha1.slice(5)}:42`);
    response.writeHead(200, { "content-type": "text/plain" }).end(lines.join("\r\n"));
  });
  return { ...server, rangeUrl: `${server.url}/range/` };
}

test("bot challenge: every guarded endpoint asks the tenant's provider and refuses a failed answer", async (t) => {
  const siteverify = await startSiteverify();
  const h = await createHarness({
    settings: { botProtection: { provider: "turnstile", secretKey: "tenant-secret", verifyUrl: `${siteverify.url}/siteverify` } },
  });
  t.after(async () => {
    await h.close();
    await siteverify.close();
  });

  const bodies: Record<string, Record<string, string>> = {
    "/auth/register-password": { email: "bot@example.org", name: "Bot", password: STRONG_PASSWORD },
    "/auth/login": { email: "bot@example.org", password: STRONG_PASSWORD },
    "/auth/forgot-password": { email: "bot@example.org" },
    "/auth/resend-verification": { email: "bot@example.org" },
  };
  for (const [url, body] of Object.entries(bodies)) {
    const missing = await post(h, url, body);
    assert.equal(missing.statusCode, 403, `${url} without a token`);
    assert.equal(missing.json().code, "bot_check_failed");
    const failed = await post(h, url, { ...body, "bot-challenge-response": "robot" });
    assert.equal(failed.statusCode, 403, `${url} with a failing token`);
    assert.equal(failed.json().code, "bot_check_failed");
    const down = await post(h, url, { ...body, "bot-challenge-response": "down" });
    assert.equal(down.statusCode, 503, `${url} with the provider down fails closed`);
    assert.equal(down.json().code, "bot_check_unavailable");
  }
  const last = siteverify.forms[siteverify.forms.length - 1]!;
  assert.equal(last.get("secret"), "tenant-secret");
  assert.equal(last.get("remoteip"), "203.0.113.10");
  // Nothing was registered while the bot check failed.
  const registered = await post(h, "/auth/register-password", { ...bodies["/auth/register-password"], "bot-challenge-response": "human" });
  assert.equal(registered.statusCode, 200);
  assert.equal(h.receiver.received.length, 0, "webhooks are delivered only by the dispatcher");
});

test("D21: a tenant's verifyUrl at an internal address fails closed (503) and its secret is never posted there", async (t) => {
  const siteverify = await startSiteverify();
  const h = await createHarness({
    env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" },
    settings: { botProtection: { provider: "turnstile", secretKey: "tenant-secret", verifyUrl: `${siteverify.url}/siteverify` } },
  });
  t.after(async () => {
    await h.close();
    await siteverify.close();
  });
  const response = await post(h, "/auth/forgot-password", { email: "bot@example.org", "bot-challenge-response": "human" });
  assert.equal(response.statusCode, 503);
  assert.equal(response.json().code, "bot_check_unavailable");
  assert.equal(siteverify.forms.length, 0, "nothing reached the internal address");
});

test("bot secretKey: stored sealed (never in the database in the clear), kept across other updates, a clear legacy value sealed at start, unreadable -> 503", async (t) => {
  const siteverify = await startSiteverify();
  const SECRET = "turnstile-secret-DO-NOT-STORE";
  const h = await createHarness({ settings: { botProtection: { provider: "turnstile", secretKey: SECRET, verifyUrl: `${siteverify.url}/siteverify` } } });
  t.after(async () => {
    await h.close();
    await siteverify.close();
  });
  const storedSettings = async () =>
    (await h.db.selectFrom("tenants").select("settings").where("domain", "=", h.tenant.domain).executeTakeFirstOrThrow()).settings;
  const forgot = () => post(h, "/auth/forgot-password", { email: "bot@example.org", "bot-challenge-response": "human" });

  assert.ok(!(await storedSettings()).includes(SECRET), "created: sealed");
  assert.equal((await forgot()).statusCode, 200);
  assert.equal(siteverify.forms.at(-1)!.get("secret"), SECRET, "the provider gets the secret itself");

  // A value that looks sealed is sealed again, never opened: the provider gets it as sent, so the
  // verifyUrl can't be used to decrypt another sealed secret (a TOTP key, a webhook secret).
  const otherSecret = h.deps.secrets.seal("JBSWY3DPEHPK3PXP-a-totp-key");
  await updateTenantSettings(h.deps, h.tenant.domain, {
    botProtection: { provider: "turnstile", secretKey: otherSecret, verifyUrl: `${siteverify.url}/siteverify` },
  });
  assert.equal((await forgot()).statusCode, 200);
  assert.equal(siteverify.forms.at(-1)!.get("secret"), otherSecret, "not decrypted");
  assert.ok(!(await storedSettings()).includes(otherSecret), "stored sealed again");
  await updateTenantSettings(h.deps, h.tenant.domain, {
    botProtection: { provider: "turnstile", secretKey: SECRET, verifyUrl: `${siteverify.url}/siteverify` },
  });

  // Another setting changes; the sealed secret is kept as it is and still works.
  await updateTenantSettings(h.deps, h.tenant.domain, { sessionTier: "1h" });
  assert.ok(!(await storedSettings()).includes(SECRET), "updated: still sealed");
  assert.equal((await forgot()).statusCode, 200);
  assert.equal(siteverify.forms.at(-1)!.get("secret"), SECRET);

  // A value an older version stored in the clear is sealed at start and keeps working.
  const clear = JSON.parse(await storedSettings()) as { botProtection: { secretKey: string } };
  clear.botProtection.secretKey = SECRET;
  await h.db
    .updateTable("tenants")
    .set({ settings: JSON.stringify(clear) })
    .where("domain", "=", h.tenant.domain)
    .execute();
  h.deps.tenantCache.invalidate(h.tenant.domain);
  assert.equal(await sealStoredBotSecrets(h.deps), 1);
  assert.equal(await sealStoredBotSecrets(h.deps), 0, "idempotent");
  assert.ok(!(await storedSettings()).includes(SECRET), "sealed at start");
  assert.equal((await forgot()).statusCode, 200);
  assert.equal(siteverify.forms.at(-1)!.get("secret"), SECRET);

  // Opened with another SECRETS_KEY: fail closed, and the provider is not asked.
  const asked = siteverify.forms.length;
  const other = await createHarness({ env: { SECRETS_KEY: "22".repeat(32) } });
  t.after(() => other.close());
  await other.db
    .updateTable("tenants")
    .set({ settings: await storedSettings() })
    .where("domain", "=", other.tenant.domain)
    .execute();
  other.deps.tenantCache.invalidate(other.tenant.domain);
  const refused = await post(other, "/auth/forgot-password", { email: "bot@example.org", "bot-challenge-response": "human" });
  assert.equal(refused.statusCode, 503, refused.body);
  assert.equal(refused.json().code, "bot_check_unavailable");
  assert.equal(siteverify.forms.length, asked);
});

test("breach check: a password in the range API is refused at registration, reset and change; only 5 hex characters leave", async (t) => {
  const breached = "Sunflower-Meadow-77";
  const range = await startRangeApi(breached);
  const h = await createHarness({ env: { BREACH_CHECK_MODE: "remote", BREACH_CHECK_URL: range.rangeUrl } });
  t.after(async () => {
    await h.close();
    await range.close();
  });

  const refused = await post(h, "/auth/register-password", { email: "pwned@example.org", name: "P", password: breached, "bot-challenge-response": "x" });
  assert.equal(refused.statusCode, 400);
  assert.equal(refused.json().code, "breached_password");

  await registerVerifiedMember(h, "safe@example.org");
  const cookie = (await login(h, "safe@example.org")).cookies.find((c) => c.name === "session_id")!.value;
  const change = await post(h, "/auth/change-password", { currentPassword: STRONG_PASSWORD, newPassword: breached }, { cookie });
  assert.equal(change.json().code, "breached_password");

  assert.ok(range.requests.length >= 3);
  for (const { path } of range.requests) assert.match(path, /^\/range\/[0-9A-F]{5}$/);
});
