// GET /metrics (issue 7): the token or 404, and after real flows every series with its labels and
// counts, route patterns instead of URLs, and no tenant, email, IP or token in the output.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Challenge } from "altcha-lib";
import type { LightMyRequestResponse } from "fastify";
import { pino } from "pino";
import { Histogram, Registry } from "prom-client";
import { ConfigError, loadConfig } from "../src/config.js";
import { Metrics } from "../src/metrics.js";
import { createTenant } from "../src/flows/tenants/tenants.js";
import { solveAltcha } from "./support/altcha.js";
import { assertError } from "./support/assertions.js";
import { forgotPassword, receiverSettings, WRONG_PASSWORD } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";

const METRICS_TOKEN = "metrics-token-for-tests-0123456789abcdef";

/** GET /metrics with `Bearer <token>`; null sends no Authorization header. */
function scrape(h: Harness, token: string | null = METRICS_TOKEN): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: "GET", url: "/metrics", headers: token === null ? {} : { authorization: `Bearer ${token}` } });
}

async function scrapeText(h: Harness): Promise<string> {
  const res = await scrape(h);
  assert.equal(res.statusCode, 200, res.body);
  assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
  return res.body;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found: number[] = [];
  for (const line of text.split("\n")) {
    const match = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? "").matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) found.push(Number(match[3]));
  }
  assert.ok(found.length <= 1, `${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0];
}

test("without METRICS_TOKEN /metrics answers 404, token or not; a short token is refused at start", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assert.equal(h.config.metricsToken, undefined);
  assertError(await scrape(h, null), 404, "not_found");
  assertError(await scrape(h), 404, "not_found");
  assert.throws(
    () => loadConfig({ METRICS_TOKEN: "too-short" }),
    (err: unknown) => err instanceof ConfigError && /METRICS_TOKEN must be at least 32 characters/.test(err.message) && !err.message.includes("too-short"),
  );
});

test("with METRICS_TOKEN /metrics needs exactly that bearer token", async (t) => {
  const h = await createHarness({ env: { METRICS_TOKEN } });
  t.after(() => h.close());
  assertError(await scrape(h, null), 401, "unauthorized");
  assertError(await scrape(h, "metrics-token-for-tests-0123456789abcdeX"), 401, "unauthorized");
  assertError(await h.app.inject({ method: "GET", url: "/metrics", headers: { authorization: METRICS_TOKEN } }), 401, "unauthorized");
  const ok = await scrape(h);
  assert.equal(ok.statusCode, 200);
  assert.equal(ok.headers["cache-control"], "no-store");
  assert.ok(sample(ok.body, "process_cpu_user_seconds_total") !== undefined, "prom-client's default process metrics");
  assert.ok(ok.body.includes("nodejs_eventloop_lag_seconds"));
});

test("issue 17: latch_event_loop_delay_seconds shows a stall of the event loop once, then starts again from the scrape", async (t) => {
  const h = await createHarness({ env: { METRICS_TOKEN } });
  t.after(() => h.close());
  const stop = h.deps.metrics.watchEventLoop();
  t.after(stop);
  await new Promise((resolve) => setTimeout(resolve, 20)); // a few samples first
  const blockUntil = performance.now() + 60;
  while (performance.now() < blockUntil); // a synchronous stall, as a blocking commit or a long GC would be
  await new Promise((resolve) => setTimeout(resolve, 5));
  const stalled = (await scrape(h)).body;
  const max = sample(stalled, "latch_event_loop_delay_seconds", { stat: "max" });
  assert.ok(max !== undefined && max >= 0.05, `the 60 ms stall is seen: max ${max}`);
  for (const stat of ["p50", "p99"]) assert.ok(sample(stalled, "latch_event_loop_delay_seconds", { stat }) !== undefined, stat);
  await new Promise((resolve) => setTimeout(resolve, 20));
  const after = sample((await scrape(h)).body, "latch_event_loop_delay_seconds", { stat: "max" });
  assert.ok(after !== undefined && after < 0.05, `the scrape reset the window: max ${after}`);
});

test("after real flows each series has its labels and counts, and nothing identifying", async (t) => {
  const h = await createHarness({ env: { METRICS_TOKEN } });
  t.after(() => h.close());
  const email = "ada@example.org";
  const clientIp = "203.0.113.10"; // the harness's default client address
  const secrets: string[] = [];

  // Register and verify (one verify_email delivered), log in, then 3 wrong passwords lock the email.
  await registerVerifiedMember(h, email);
  assert.equal((await login(h, email)).statusCode, 200);
  for (let i = 0; i < 3; i++) assert.equal((await login(h, email, WRONG_PASSWORD)).statusCode, 401);
  assert.equal((await login(h, email)).statusCode, 429, "locked out");

  // A magic link still works (D13); asking again within 3 minutes is refused by rule magic_link_email.
  assert.equal((await post(h, "/auth/request-magic-link", { email })).statusCode, 200);
  assert.equal(await deliverWebhooks(h), 1);
  const link = parseLink(h.receiver.last("magic_login").body.magicLoginLink!);
  secrets.push(link.token);
  const magic = await post(h, `/auth/verify-magic-link/${link.recordId}/${link.token}`, {});
  assert.equal(magic.statusCode, 200, magic.body);
  const cookie = sessionCookieOf(magic)!;
  secrets.push(cookie);
  assert.equal((await post(h, "/auth/request-magic-link", { email })).statusCode, 429);

  // Three wrong codes lock the second factor (enable shares the counter).
  assert.equal((await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie })).statusCode, 200);
  for (let i = 0; i < 3; i++) assert.equal((await post(h, "/auth/2fa/enable", { code: "000000" }, { cookie })).statusCode, 401);

  // The 10th IP for one email within 15 minutes: a velocity lockout.
  await registerVerifiedMember(h, "velo@example.org");
  for (let n = 1; n <= 9; n++) assert.equal((await login(h, "velo@example.org", STRONG_PASSWORD, { ip: `198.51.100.${n}` })).statusCode, 200);
  assert.equal((await login(h, "velo@example.org", STRONG_PASSWORD, { ip: "198.51.100.10" })).statusCode, 429);

  // A delivery that fails is retried: it stays in the backlog.
  h.receiver.failNext = 1;
  assert.equal((await forgotPassword(h, email)).statusCode, 200);
  assert.equal(await deliverWebhooks(h), 1);
  assert.equal((await get(h, "/no/such/route")).statusCode, 404);

  await scrapeText(h); // a scrape is not counted as a request
  const text = await scrapeText(h);
  const logins = (method: string, outcome: string) => sample(text, "latch_logins_total", { method, outcome });
  assert.equal(logins("password", "success"), 10);
  assert.equal(logins("password", "invalid_credentials"), 3);
  assert.equal(logins("password", "locked_out"), 2);
  assert.equal(logins("magic_link", "success"), 1);
  assert.equal(sample(text, "latch_lockouts_total", { kind: "password" }), 1, "the third wrong password, once");
  assert.equal(sample(text, "latch_lockouts_total", { kind: "velocity" }), 1);
  assert.equal(sample(text, "latch_lockouts_total", { kind: "two_factor" }), 1);
  assert.equal(sample(text, "latch_rate_limit_refusals_total", { rule: "magic_link_email" }), 1);
  assert.equal(sample(text, "latch_webhook_deliveries_total", { outcome: "delivered" }), 3);
  assert.equal(sample(text, "latch_webhook_deliveries_total", { outcome: "retry" }), 1);
  assert.equal(sample(text, "latch_webhook_deliveries_total", { outcome: "abandoned" }), 0);
  assert.equal(sample(text, "latch_outbox_backlog"), 1);
  assert.equal(sample(text, "latch_bot_checks_total"), undefined, "provider none checks nothing and is not counted");

  const requests = (route: string, method: string, status: string) =>
    sample(text, "latch_http_request_duration_seconds_count", { route, method, status_code: status });
  assert.equal(requests("/auth/login", "POST", "200"), 10);
  assert.equal(requests("/auth/login", "POST", "401"), 3);
  assert.equal(requests("/auth/login", "POST", "429"), 2);
  assert.equal(requests("/auth/verify-magic-link/:recordId/:token", "POST", "200"), 1, "the route pattern, not the URL");
  assert.equal(requests("/auth/2fa/enable", "POST", "401"), 3);
  assert.equal(requests("unmatched", "GET", "404"), 1);
  assert.ok(!text.includes('route="/metrics"'), "scrapes are not counted");
  assert.ok(sample(text, "latch_http_request_duration_seconds_bucket", { route: "/auth/login", status_code: "200", le: "+Inf" }) === 10);

  // Nothing that names a tenant, a member, a client or a secret.
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  for (const value of [h.tenant.domain, tenantId, email, "velo@example.org", link.recordId, clientIp, "198.51.100.", METRICS_TOKEN, ...secrets]) {
    assert.ok(!text.includes(value), `${value} is not in the metrics`);
  }
  assert.ok(
    !/tenant/.test(
      text
        .split("\n")
        .filter((l) => !l.startsWith("#"))
        .join("\n"),
    ),
    "no tenant label",
  );
});

test("bot checks are counted by provider and result", async (t) => {
  const h = await createHarness({ env: { METRICS_TOKEN }, settings: { botProtection: { provider: "altcha" } } });
  t.after(() => h.close());
  const solved = await solveAltcha((await get(h, "/auth/bot-challenge")).json<Challenge>());
  const forgot = (botResponse: string, domain?: string) =>
    post(h, "/auth/forgot-password", { email: "a@example.org", "bot-challenge-response": botResponse }, { domain });
  assert.equal((await forgot("not-a-solution")).statusCode, 403);
  assert.equal((await forgot(solved)).statusCode, 200);
  assert.equal((await forgot(solved)).statusCode, 403, "a replay fails");
  // A siteverify provider that can't be reached fails closed (D10).
  await createTenant(h.deps, {
    domain: "turnstile.example.com",
    settings: { ...receiverSettings(h), botProtection: { provider: "turnstile", secretKey: "turnstile-secret", verifyUrl: "http://127.0.0.1:9/siteverify" } },
  });
  assert.equal((await forgot("widget-token", "turnstile.example.com")).statusCode, 503);

  const text = await scrapeText(h);
  assert.equal(sample(text, "latch_bot_checks_total", { provider: "altcha", result: "passed" }), 1);
  assert.equal(sample(text, "latch_bot_checks_total", { provider: "altcha", result: "failed" }), 2, "the garbage payload and the replay");
  assert.equal(sample(text, "latch_bot_checks_total", { provider: "turnstile", result: "unavailable" }), 1);
  assert.ok(!text.includes("turnstile-secret") && !text.includes("widget-token"));
});

test("a store that doesn't answer leaves the backlog NaN and the scrape whole", async (t) => {
  const h = await createHarness({ env: { METRICS_TOKEN } });
  t.after(() => h.close());
  h.deps.store.outbox.countPendingDeliveries = async () => {
    throw new Error("connection refused");
  };
  const text = await scrapeText(h);
  assert.ok(Number.isNaN(sample(text, "latch_outbox_backlog")));
  assert.equal(sample(text, "latch_lockouts_total", { kind: "password" }), 0, "the other series are served");
  assert.ok(h.logs.some((l) => l.includes("metrics: the outbox backlog could not be counted")));
});

test("the request histogram exposes what a prom-client Histogram of the same observations does, line for line", async () => {
  // src/metrics.ts counts requests without prom-client's Histogram (docs/performance.md#the-session-check);
  // what a scrape reads must not change: same names, labels, cumulative buckets, +Inf, _sum and _count.
  const metrics = new Metrics({ countOutboxBacklog: async () => 0, log: pino({ level: "silent" }) });
  const registry = new Registry();
  const reference = new Histogram({
    name: "latch_http_request_duration_seconds",
    help: "HTTP requests by route pattern, method and status code, and how long they took (its _count is the request count).",
    labelNames: ["route", "method", "status_code"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  // Bucket edges (a value on a bound counts in it), past the last bound, zero, and several series.
  const observations: Array<[string, string, number, number]> = [
    ["/auth/session", "GET", 200, 0.0003],
    ["/auth/session", "GET", 200, 0.001],
    ["/auth/session", "GET", 401, 0.0011],
    ["/auth/login", "POST", 200, 0.4],
    ["/auth/login", "POST", 200, 12],
    ["/auth/login", "POST", 429, 0],
    ["unmatched", "GET", 404, 0.025],
    ["/auth/session", "GET", 200, 10],
  ];
  for (const [route, method, status, seconds] of observations) {
    metrics.observeRequest(route, method, status, seconds);
    reference.observe({ route, method, status_code: String(status) }, seconds);
  }
  const series = (text: string) =>
    text
      .split("\n")
      .filter((line) => line.includes("latch_http_request_duration_seconds"))
      .sort();
  const ours = series(await metrics.render());
  assert.equal(ours.length, 2 + 5 * (13 + 3), "HELP, TYPE, and 16 lines for each of the 5 series");
  assert.deepEqual(ours, series(await registry.metrics()));
});
