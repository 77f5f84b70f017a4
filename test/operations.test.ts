/** Health, request ids, retention sweeps, and the real server process: start-up warnings and SIGTERM. */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import type { AddressInfo } from "node:net";
import { connect, type Socket } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DAY } from "../src/core/clock.js";
import { operatorHeaders, receiverSettings, storeTenantSettings } from "./support/flows.js";
import { createHarness, deliverWebhooks, get, login, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD } from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";
import { startServerProcess } from "./support/server-process.js";

test("healthz and readyz answer without a tenant; readyz turns 503 when the store is gone", async (t) => {
  const h = await createHarness();
  t.after(() => h.close().catch(() => undefined));
  assert.deepEqual((await h.app.inject({ method: "GET", url: "/healthz" })).json(), { status: "ok" });
  assert.deepEqual((await h.app.inject({ method: "GET", url: "/readyz" })).json(), { status: "ready" });
  await h.deps.store.close();
  const down = await h.app.inject({ method: "GET", url: "/readyz" });
  assert.equal(down.statusCode, 503);
  assert.equal(down.json().code, "unavailable");
});

test("every answer carries x-request-id, equal to the error body's requestId", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const refused = await login(h, "nobody@example.org");
  assert.equal(refused.headers["x-request-id"], refused.json().requestId);
  const ok = await h.app.inject({ method: "GET", url: "/healthz" });
  assert.match(String(ok.headers["x-request-id"]), /^req_/);
});

test("no answer of the API is kept by a cache: session data, a new tenant's keys, errors, unknown routes; hosted assets may be", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  const signedIn = await login(h, "ada@example.org");
  const cookie = sessionCookieOf(signedIn)!;
  const answers = [
    signedIn,
    await get(h, "/auth/session", { cookie }),
    await h.app.inject({
      method: "POST",
      url: "/operator/tenants",
      headers: operatorHeaders(),
      payload: { domain: "cached.example.com", settings: receiverSettings(h) },
    }),
    await login(h, "nobody@example.org"),
    await h.app.inject({ method: "GET", url: "/no/such/route" }),
    await h.app.inject({ method: "GET", url: "/healthz" }),
  ];
  for (const answer of answers) assert.equal(answer.headers["cache-control"], "no-store", `${answer.statusCode} ${answer.body.slice(0, 80)}`);
  assert.equal(answers[2]!.statusCode, 201, "the tenant with its keys was created");
  const asset = await h.app.inject({ method: "GET", url: "/ui/assets/hosted.css" });
  assert.equal(asset.statusCode, 200);
  assert.equal(asset.headers["cache-control"], "public, max-age=300", "an asset says it may be cached");
});

test("a refusal by a rule or a lockout names it on the request's own log line, with its reqId", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const refusalLine = (requestId: string) =>
    h.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.msg === "request refused" && l.reqId === requestId);

  await registerVerifiedMember(h, "refused@example.org");
  for (let i = 0; i < 3; i++) await login(h, "refused@example.org", "Wrong-Password-1");
  const locked = await login(h, "refused@example.org");
  assert.equal(locked.statusCode, 429);
  const lockLine = refusalLine(locked.json().requestId as string);
  assert.ok(lockLine, "the lockout's line has the request's id");
  assert.deepEqual([lockLine.code, lockLine.lockout, lockLine.route], ["rate_limited", "password", "/auth/login"]);

  const body = { email: "refused@example.org", "bot-challenge-response": "x" };
  let limited;
  for (let i = 0; i < 20 && limited?.statusCode !== 429; i++) limited = await post(h, "/auth/forgot-password", body, { ip: "198.51.100.7" });
  assert.equal(limited?.statusCode, 429, "the forgot-password limits refuse at last");
  const ruleLine = refusalLine(limited.json().requestId as string);
  assert.ok(ruleLine && typeof ruleLine.rule === "string" && ruleLine.code === "rate_limited", JSON.stringify(ruleLine));
  assert.ok(!h.logs.join("").includes("Wrong-Password-1"));
});

test("sweeping forgets idle lockouts and finished deliveries after 30 days, keeps live state", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "sweep@example.org");
  for (let i = 0; i < 3; i++) await login(h, "sweep@example.org", "Wrong-Password-1");
  assert.equal((await login(h, "sweep@example.org")).statusCode, 429);
  await post(h, "/auth/forgot-password", { email: "sweep@example.org", "bot-challenge-response": "x" });
  await deliverWebhooks(h);
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  assert.equal((await h.deps.store.outbox.listRecentDeliveries(tenantId, 10)).length, 2);

  await h.deps.store.sweepExpired(h.clock.now() + 29 * DAY);
  assert.ok(await h.deps.store.limits.findLockout(tenantId, "sweep@example.org"), "kept within 30 days");
  assert.equal((await h.deps.store.outbox.listRecentDeliveries(tenantId, 10)).length, 2);
  await h.deps.store.sweepExpired(h.clock.now() + 31 * DAY);
  assert.equal(await h.deps.store.limits.findLockout(tenantId, "sweep@example.org"), undefined);
  assert.equal((await h.deps.store.outbox.listRecentDeliveries(tenantId, 10)).length, 0);
});

test("sweeping deletes audit events older than the retention (AUDIT_RETENTION_DAYS), keeps newer ones", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = Number(await registerVerifiedMember(h, "audit@example.org"));
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  const recorded = await h.deps.store.audit.listMemberAuditEvents(tenantId, recordId, 50);
  assert.ok(recorded.length >= 2, "registration and verification are audited");
  h.clock.advance(10 * DAY);
  assert.equal((await login(h, "audit@example.org")).statusCode, 200);
  const count = async () => (await h.deps.store.audit.listMemberAuditEvents(tenantId, recordId, 50)).length;
  const all = await count();

  await h.deps.store.sweepExpired(h.clock.now(), 11 * DAY);
  assert.equal(await count(), all, "nothing is older than 11 days");
  await h.deps.store.sweepExpired(h.clock.now(), 5 * DAY);
  assert.equal(await count(), all - recorded.length, "the events from 10 days ago are gone, the login's stay");
  assert.ok((await count()) > 0);

  // In batches: a small batch size still deletes every old event, and nothing newer.
  const remaining = await count();
  h.clock.advance(DAY);
  for (let i = 0; i < 5; i++)
    await h.deps.store.audit.insertAuditEvent(tenantId, { memberId: recordId, type: "logout", ip: null, userAgent: null }, h.clock.now());
  assert.equal(await h.deps.store.audit.deleteAuditEventsBefore(h.clock.now(), 2), remaining, "all older events, 2 per statement");
  assert.equal(await count(), 5);
});

test("the server process warns about unprotected tenants and ignored allowedOrigins at start and exits 0 on SIGTERM", async (t) => {
  const h = await createHarness();
  const dataDir = h.dataDir;
  // D30: an http origin stored before allowedOrigins had to be https (as an older version could).
  await storeTenantSettings(h, { allowedOrigins: ["http://app.example.org", "https://app.example.org"] });
  await h.app.close();
  await h.deps.store.close();
  t.after(() => h.close().catch(() => undefined));

  const server = await startServerProcess({
    env: { ...process.env, DATABASE_URL: `sqlite:${dataDir}/latch.db`, SECRETS_KEY: "11".repeat(32), PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" },
  });
  t.after(() => server.stop("SIGKILL"));
  const lines = server.output();
  assert.ok(
    lines.some((l) => l.includes("tenant has no bot protection") && l.includes(h.tenant.domain)),
    lines.join("\n"),
  );
  const ignored = lines.filter((l) => l.includes("allowedOrigins entries are ignored"));
  assert.equal(ignored.length, 1, lines.join("\n"));
  assert.ok(ignored[0]!.includes(h.tenant.domain) && ignored[0]!.includes('"ignored":["http://app.example.org"]'), ignored[0]);
  const health = await fetch(`${server.url}/healthz`);
  assert.equal(health.status, 200);
  assert.equal(await server.stop(), 0);
});

test("MIGRATE_ON_START=false: the server starts on an empty database, /readyz is 503 until `latch migrate` has run; one warning, not a stream of errors", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-nomigrate-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = {
    ...process.env,
    DATABASE_URL: `sqlite:${dataDir}/latch.db`,
    SECRETS_KEY: "11".repeat(32),
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    MIGRATE_ON_START: "false",
  };
  const server = await startServerProcess({ env });
  t.after(() => server.stop("SIGKILL"));
  const address = server.url;
  assert.equal((await fetch(`${address}/healthz`)).status, 200);
  // Issue 29: an orchestrator probes every few seconds and the dispatcher runs every second; while
  // unmigrated, that was an error line (or two) each time. Now: one warning, then quiet.
  for (let probe = 0; probe < 5; probe++) {
    const answer = await fetch(`${address}/readyz`);
    assert.equal(answer.status, 503, "not ready before the migrations");
    assert.equal(((await answer.json()) as { code: string }).code, "unavailable");
  }
  await server.waitForLine(/"msg":"incoming request"/); // the process is up and logging
  await new Promise((resolve) => setTimeout(resolve, 2500)); // two dispatcher passes at least
  const logged = server
    .output()
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
  const notReady = logged.filter((l) => l.msg.includes("the database is not migrated or not reachable"));
  assert.deepEqual(
    notReady.map((l) => l.level),
    [40],
    server.output().join("\n"),
  );
  assert.deepEqual(
    logged.filter((l) => l.level >= 50),
    [],
    "no error-level line for a database that is merely not migrated",
  );

  const cli = spawnSync(process.execPath, ["--import", "tsx", "src/cli/main.ts", "migrate"], { env, encoding: "utf8" });
  assert.equal(cli.status, 0, cli.stderr);
  assert.deepEqual(JSON.parse(cli.stdout), { migrated: true });
  assert.equal((await fetch(`${address}/readyz`)).status, 200, "ready once `latch migrate` ran, without a restart");
  await server.waitForLine(/the database is ready again/);
  assert.equal(await server.stop(), 0);
});

/** Sends raw bytes on its own connection and resolves with the first whole answer (by its Content-Length). */
function rawConnection(port: number): { socket: Socket; answer: Promise<string> } {
  const socket = connect(port, "127.0.0.1");
  const answer = new Promise<string>((resolve, reject) => {
    let text = "";
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
      const headEnd = text.indexOf("\r\n\r\n");
      const length = /content-length: *(\d+)/i.exec(text.slice(0, headEnd))?.[1];
      if (headEnd >= 0 && length !== undefined && Buffer.byteLength(text.slice(headEnd + 4)) >= Number(length)) resolve(text);
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
  return { socket, answer };
}

test("issue 29: a request that arrives while the server closes gets 503 `unavailable` in the D4 body; the one in flight completes", async (t) => {
  const h = await createHarness();
  t.after(() => h.close().catch(() => undefined));
  await registerVerifiedMember(h, "ada@example.org");
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = h.app.server.address() as AddressInfo;
  const seam = installStoreSeam(h);
  const held = seam.pause("members.findMemberByEmail");
  const body = JSON.stringify({ email: "ada@example.org", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
  const inFlight = rawConnection(port);
  inFlight.socket.write(
    `POST /auth/login HTTP/1.1\r\nHost: ${h.tenant.domain}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  await held.reached;
  // A second connection has begun its request (so it is not idle, and close() keeps it open) when close() starts.
  const late = rawConnection(port);
  late.socket.write(`GET /auth/session HTTP/1.1\r\nHost: ${h.tenant.domain}\r\n`);
  await new Promise((resolve) => setTimeout(resolve, 50)); // the server has read the first bytes
  const closed = h.app.close();
  await new Promise((resolve) => setImmediate(resolve));
  late.socket.write("\r\n");
  const refused = parseRawAnswer(await late.answer);
  held.release(); // before any assertion: a failed one must not leave close() waiting on the held request
  const completed = parseRawAnswer(await inFlight.answer);
  assert.equal(refused.status, 503, refused.text);
  assert.deepEqual(Object.keys(refused.json).sort(), ["code", "message", "requestId", "success"]);
  assert.equal(refused.json.code, "unavailable");
  assert.equal(refused.headers["x-request-id"], refused.json.requestId);
  assert.equal(completed.status, 200, completed.text);
  assert.equal(completed.json.authorized, true);
  await closed;
});

function parseRawAnswer(text: string): { status: number; headers: Record<string, string>; json: Record<string, unknown>; text: string } {
  const [head = "", ...rest] = text.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = head.split("\r\n");
  const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
  const payload = rest.join("\r\n\r\n");
  return { status: Number(statusLine.split(" ")[1]), headers, json: payload ? (JSON.parse(payload) as Record<string, unknown>) : {}, text };
}
