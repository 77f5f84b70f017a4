/**
 * Test harness: a real SQLite file per test, a manual clock, seeded random, captured logs, and a
 * real local HTTP server that receives the tenant's webhooks. Tests drive the app via app.inject.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import assert from "node:assert/strict";
import type { FastifyInstance, InjectOptions, LightMyRequestResponse, RouteOptions } from "fastify";
import { buildApp } from "../../src/app.js";
import { loadConfig, type Config } from "../../src/config.js";
import { ManualClock } from "../../src/core/clock.js";
import { seededRandom } from "../../src/core/random.js";
import { createDeps } from "../../src/create-deps.js";
import type { Deps } from "../../src/deps.js";
import { DevMode } from "../../src/dev/dev-mode.js";
import { devProviderRoutes } from "../../src/dev/dev-provider.js";
import { devInboxRoutes } from "../../src/dev/inbox-routes.js";
import type { NewTenantSettings } from "../../src/core/tenant-settings.js";
import { createTenant, type CreatedTenant } from "../../src/flows/tenants/tenants.js";
import { processEmailRequests } from "../../src/flows/kernel/email-requests.js";
import { createLogger } from "../../src/logging.js";
import { openDatabase } from "../../src/store/dialects.js";
import type { Database } from "../../src/store/schema.js";
import type { Kysely } from "kysely";
import { createTestSchema } from "./postgres.js";
import { guardTransactions } from "../../src/store/transaction-scope.js";
import { listenOnLoopback } from "./local-servers.js";
import { documentChecker } from "./openapi-answers.js";

/** The store every harness of this run uses (package.json runs the suites once per store). */
export const TEST_STORE: "sqlite" | "postgres" = process.env.LATCH_TEST_STORE === "postgres" ? "postgres" : "sqlite";
/**
 * With LATCH_TEST_REDIS=1 (scripts/test-backends.mjs sets it for the Redis pass) every harness
 * keeps its counters in the Redis at TEST_REDIS_URL, under a key prefix of its own.
 */
export const TEST_REDIS_URL = process.env.LATCH_TEST_REDIS === "1" ? process.env.TEST_REDIS_URL : undefined;
import type { AltchaDifficulty } from "../../src/providers/altcha.js";

// Issue 28: every test runs with the outer store refused inside a transaction (src/store/transaction-scope.ts).
guardTransactions();

/** Proof of work a test solves in milliseconds; the protocol and checks are the production ones. */
export const CHEAP_ALTCHA: AltchaDifficulty = { algorithm: "SHA-256", cost: 1, counterMin: 50, counterMax: 100 };

export const STRONG_PASSWORD = "Correct-Horse-42-Battery";
export const OTHER_STRONG_PASSWORD = "Tr0ubadour&Staple-Ride";

/** The OPERATOR_API_KEY every harness is configured with. */
export const OPERATOR_KEY = "operator-key-for-tests-0123456789abcdef";

export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  rawBody: string;
  body: Record<string, string>;
  path: string;
}

/** A tenant's webhook endpoint: records what it gets; `failNext` makes it answer 500. */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  failNext = 0;
  private server: Server | undefined;
  url = "";

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (chunk: Buffer) => (raw += chunk.toString("utf8")));
      req.on("end", () => {
        if (this.failNext > 0) {
          this.failNext--;
          res.writeHead(500).end();
          return;
        }
        this.received.push({ headers: req.headers, rawBody: raw, body: JSON.parse(raw) as Record<string, string>, path: req.url ?? "" });
        res.writeHead(204).end();
      });
    });
    this.url = await listenOnLoopback(this.server);
    return this;
  }

  ofType(eventType: string): ReceivedWebhook[] {
    return this.received.filter((w) => w.body.event_type === eventType);
  }

  last(eventType: string): ReceivedWebhook {
    const list = this.ofType(eventType);
    const hook = list[list.length - 1];
    if (!hook) throw new Error(`no ${eventType} webhook received`);
    return hook;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

export interface Harness {
  app: FastifyInstance;
  deps: Deps;
  clock: ManualClock;
  config: Config;
  logs: string[];
  receiver: WebhookReceiver;
  tenant: CreatedTenant;
  dataDir: string;
  /** Which store this run uses: LATCH_TEST_STORE=postgres runs every harness on PostgreSQL. */
  storeKind: "sqlite" | "postgres";
  /** True when the counters live in Redis (LATCH_TEST_REDIS=1). */
  redis: boolean;
  /** A connection of the test's own to the same database, for checks of what is stored. */
  db: Kysely<Database>;
  /** Builds a fresh app on the same database, as after a restart. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  /**
   * Issue 29: every answer of app.inject is checked against docs/openapi.json, and every webhook the
   * receiver got when the harness closes; `false` only for a test of the check itself.
   */
  checkAnswers?: boolean;
  env?: Record<string, string>;
  settings?: Partial<NewTenantSettings>;
  domain?: string;
  dataDir?: string;
}

export async function createHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "latch-test-"));
  const schema = TEST_STORE === "postgres" ? await createTestSchema() : undefined;
  const config = loadConfig({
    DATABASE_URL: schema?.url ?? `sqlite:${join(dataDir, "latch.db")}`,
    SECRETS_KEY: "11".repeat(32),
    BREACH_CHECK_MODE: "offline",
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
    LOG_LEVEL: "info",
    OPERATOR_API_KEY: OPERATOR_KEY,
    ...(TEST_REDIS_URL ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: `latch_test_${randomBytes(6).toString("hex")}:` } : {}),
    ...options.env,
  });
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString("utf8"));
      done();
    },
  });
  const receiver = await new WebhookReceiver().start();
  let seed = 0;
  const build = async () => {
    // Dev mode is wired as src/dev/main.ts wires it: the dev tenant's links, the dev inbox and dev provider routes.
    const dev = config.devMode ? new DevMode() : undefined;
    const deps = await createDeps(config, {
      clock,
      random: seededRandom(`latch-test-${seed++}`),
      log: createLogger(config.logLevel, sink),
      altchaDifficulty: CHEAP_ALTCHA,
      dev,
    });
    const routes: RouteOptions[] = [];
    const app = await buildApp(deps, { plugins: dev ? [devInboxRoutes(dev), devProviderRoutes(dev)] : [], onRoute: (route) => void routes.push(route) });
    if (options.checkAnswers !== false) checkEveryAnswer(app, routes);
    return { deps, app };
  };
  let { deps, app } = await build();
  const domain = options.domain ?? "members.example.com";
  const tenant = await createTenant(deps, {
    domain,
    settings: {
      emailVerificationWebhook: `${receiver.url}/verify`,
      passwordResetWebhook: `${receiver.url}/reset`,
      magicLoginWebhook: `${receiver.url}/magic`,
      botProtection: { provider: "none" },
      ...options.settings,
    },
  });
  const opened = openDatabase(config.databaseUrl, { poolSize: 2, statementTimeoutMs: 5000 });
  const checker = opened.db;
  const harness: Harness = {
    app,
    deps,
    clock,
    config,
    logs,
    receiver,
    tenant,
    dataDir,
    storeKind: TEST_STORE,
    redis: config.redisUrl !== undefined,
    db: checker,
    async restart() {
      await harness.deps.background.drain();
      await harness.app.close();
      await harness.deps.store.close();
      await harness.deps.redis?.close();
      ({ deps, app } = await build());
      harness.app = app;
      harness.deps = deps;
    },
    async close() {
      const webhookProblems = options.checkAnswers === false ? [] : receiver.received.flatMap((hook) => documentChecker().problemsOfWebhook(hook.body));
      await harness.deps.background.drain();
      await harness.app.close();
      await harness.deps.store.close();
      await harness.deps.redis?.close();
      await checker.destroy();
      opened.reader?.close();
      // Schemas are dropped by scripts/test-backends.mjs after the whole run: a DROP SCHEMA beside
      // another file's migration breaks Kysely's migrator, which introspects every schema.
      await receiver.stop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
      assert.deepStrictEqual(webhookProblems, [], `webhooks that do not match the document:\n${webhookProblems.join("\n")}`);
    },
  };
  return harness;
}

/**
 * Makes every `app.inject` of this app check its answer against docs/openapi.json (issue 29): an
 * undocumented status, a body its schema refuses or an undocumented Set-Cookie throws, so the test
 * that made the request fails. The checker, and the validators it compiles, are one per process.
 */
function checkEveryAnswer(app: FastifyInstance, routes: readonly RouteOptions[]): void {
  const patterns = routes.map((route) => ({
    methods: [route.method].flat(),
    pattern: new RegExp(
      `^${route.url
        .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
        .replace(/:[A-Za-z0-9_]+/g, "[^/]+")
        .replace(/\*/g, ".*")}$`,
    ),
  }));
  // A route the document hides (hosted pages, /docs, the dev inbox) answers as it likes; only the router's own answers are checked then.
  const isRoute = (method: string, path: string) => patterns.some((route) => route.methods.includes(method.toUpperCase()) && route.pattern.test(path));
  const original = app.inject.bind(app) as (options?: InjectOptions | string, callback?: unknown) => unknown;
  const inject = original as (options: InjectOptions) => Promise<LightMyRequestResponse>;
  const checked = async (options: InjectOptions): Promise<LightMyRequestResponse> => {
    const response = await inject(options);
    const problems = documentChecker().problemsOfRequest(options.method ?? "GET", urlOf(options), isRoute, {
      status: response.statusCode,
      header: (name) => {
        const value = response.headers[name];
        return typeof value === "number" ? String(value) : value;
      },
      body: response.body,
    });
    if (problems.length > 0) throw new Error(`the answer does not match docs/openapi.json:\n${problems.join("\n")}`);
    return response;
  };
  (app as { inject: unknown }).inject = (options?: InjectOptions | string, callback?: unknown) => {
    // The chained and callback forms are left as they are; the suites use neither.
    if (options === undefined || callback !== undefined) return original(options, callback);
    return checked(typeof options === "string" ? { url: options } : options);
  };
}

function urlOf(options: InjectOptions): string {
  const url = options.url ?? options.path ?? "/";
  return typeof url === "string" ? url : url.pathname;
}

export interface PostOptions {
  domain?: string;
  cookie?: string;
  headers?: Record<string, string>;
  ip?: string;
}

/** Requests wait for the background work they started, so tests see its effects deterministically. */
export async function post(h: Harness, url: string, body: unknown, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return settled(
    h,
    h.app.inject({
      method: "POST",
      url,
      payload: body as Record<string, unknown>,
      remoteAddress: options.ip ?? "203.0.113.10",
      headers: {
        "x-tenant-domain": options.domain ?? h.tenant.domain,
        ...(options.cookie ? { cookie: `session_id=${options.cookie}` } : {}),
        ...options.headers,
      },
    }),
  );
}

async function settled(h: Harness, response: Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
  const res = await response;
  await settle(h);
  return res;
}

async function drained(h: Harness, response: Promise<LightMyRequestResponse>): Promise<LightMyRequestResponse> {
  const res = await response;
  await h.deps.background.drain();
  return res;
}

/**
 * Waits for the work a request left behind: background tasks, and the committed email requests
 * (D19) turned into tokens and outbox rows, as the dispatcher's pass right after the commit would.
 */
export async function settle(h: Harness): Promise<void> {
  await h.deps.background.drain();
  // As in the dispatcher: a failed pass (the database is down) is logged, and the rows wait for the next one.
  await processEmailRequests(h.deps).catch((err: unknown) => h.deps.log.error({ err }, "email request pass failed"));
}

/** A GET commits no email request, so it only waits for background work (a test may hold a write open meanwhile). */
export async function get(h: Harness, url: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return drained(
    h,
    h.app.inject({
      method: "GET",
      url,
      remoteAddress: options.ip ?? "203.0.113.10",
      headers: {
        "x-tenant-domain": options.domain ?? h.tenant.domain,
        ...(options.cookie ? { cookie: `session_id=${options.cookie}` } : {}),
        ...options.headers,
      },
    }),
  );
}

/** Runs the dispatcher once and returns how many deliveries it attempted. */
export async function deliverWebhooks(h: Harness): Promise<number> {
  await h.deps.background.drain();
  return h.deps.webhooks.deliverDue();
}

/** Splits a link https://<domain>/<page>/<recordid>/<token>. */
export function parseLink(link: string): { domain: string; page: string; recordId: string; token: string } {
  const url = new URL(link);
  const [, page, recordId, token] = url.pathname.split("/");
  return { domain: url.hostname, page: page!, recordId: recordId!, token: token! };
}

export function sessionCookieOf(response: LightMyRequestResponse): string | undefined {
  return response.cookies.find((c) => c.name === "session_id")?.value;
}

/** Registers, delivers the webhook, and verifies: a ready member. */
export async function registerVerifiedMember(h: Harness, email: string, password = STRONG_PASSWORD, ip?: string): Promise<string> {
  const response = await post(h, "/auth/register-password", { email, name: "Ada Lovelace", password, "bot-challenge-response": "x" }, { ip });
  if (response.statusCode !== 200) throw new Error(`register failed: ${response.body}`);
  await deliverWebhooks(h);
  const link = parseLink(h.receiver.last("verify_email").body.verificationLink!);
  const verified = await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token });
  if (verified.statusCode !== 200) throw new Error(`verify failed: ${verified.body}`);
  return link.recordId;
}

export async function login(h: Harness, email: string, password = STRONG_PASSWORD, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/login", { email, password, "bot-challenge-response": "x" }, options);
}
