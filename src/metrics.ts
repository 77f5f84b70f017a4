/**
 * Prometheus metrics (contract.md#issue-7): one registry per Deps, and small typed recording functions, so
 * flows never import prom-client and tests that build several apps in one process never share a
 * series. Recording is a synchronous counter or histogram update: nothing here awaits on a request.
 *
 * Labels are bounded by construction: route patterns, rule names, providers, outcomes and error
 * codes. No tenant label (the tenant count is not bounded), and never an email, IP, token or id.
 */
import type { Logger } from "pino";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from "prom-client";
import { isAuthError, type ErrorCode } from "./errors.js";
import { distinctIpRules, FAILURES_BEFORE_LOCKOUT, TWO_FACTOR_FAILURES_BEFORE_LOCKOUT } from "./rules.js";
import type { BotProviderName } from "./providers/bot.js";

export type LoginMethod = "password" | "magic_link" | "login_code" | "passkey" | "federated";
/**
 * `locked_out` is a 429 from a running lockout (password, velocity or second factor); every other
 * refusal is its stable error code (contract.md#d4), and anything that is not an AuthError is `error`.
 */
export type LoginOutcome = "success" | "two_factor_required" | "locked_out" | "error" | Exclude<ErrorCode, "rate_limited">;
export type LockoutKind = "password" | "velocity" | "two_factor";
export type BotCheckResult = "passed" | "failed" | "unavailable";
export type WebhookDeliveryOutcome = "delivered" | "retry" | "abandoned";

const BOT_PROVIDERS: readonly string[] = ["turnstile", "hcaptcha", "recaptcha", "altcha", "none"] satisfies BotProviderName[];
const LOCKOUT_KINDS: readonly LockoutKind[] = ["password", "velocity", "two_factor"];
const WEBHOOK_OUTCOMES: readonly WebhookDeliveryOutcome[] = ["delivered", "retry", "abandoned"];
/** From a session check (well under 1 ms) to a slow Argon2 login under load. */
const REQUEST_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function loginOutcomeOfError(error: unknown): LoginOutcome {
  if (!isAuthError(error)) return "error";
  return error.code === "rate_limited" ? "locked_out" : error.code;
}

interface RequestSeries {
  labels: { route: string; method: string; status_code: string };
  /** Observations per bucket of REQUEST_SECONDS_BUCKETS, not cumulative; the last one is +Inf. */
  counts: number[];
  sum: number;
  count: number;
}

/** A sample as prom-client's registry reads it from a metric. */
interface ExportedValue {
  metricName: string;
  value: number;
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
}

interface ExportedMetric {
  name: string;
  help: string;
  type: "histogram";
  aggregator: "sum";
  values: ExportedValue[];
}

/**
 * `latch_http_request_duration_seconds`: what a prom-client Histogram of route, method and status
 * code exposes, line for line, but observed without its per-call work (a closure, a labels object
 * validated and hashed into a string key, the status code made a string). Every request is
 * observed, so that work was on the session check's path; here one observation is three Map
 * lookups and a bucket loop (docs/performance.md#the-session-check). Registered in the app's
 * registry through prom-client's metric interface (name, help, type, get).
 */
class RequestDurations {
  readonly name = "latch_http_request_duration_seconds";
  readonly help = "HTTP requests by route pattern, method and status code, and how long they took (its _count is the request count).";
  readonly type = "histogram" as const;
  readonly aggregator = "sum" as const;
  private readonly series = new Map<string, Map<string, Map<number, RequestSeries>>>();

  observe(route: string, method: string, statusCode: number, seconds: number): void {
    let byMethod = this.series.get(route);
    if (byMethod === undefined) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(statusCode);
    if (series === undefined) {
      series = {
        labels: { route, method, status_code: String(statusCode) },
        counts: new Array<number>(REQUEST_SECONDS_BUCKETS.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      byStatus.set(statusCode, series);
    }
    let bucket = 0;
    while (bucket < REQUEST_SECONDS_BUCKETS.length && seconds > REQUEST_SECONDS_BUCKETS[bucket]!) bucket++;
    series.counts[bucket]! += 1;
    series.sum += seconds;
    series.count += 1;
  }

  /** The text exposition's form (prom-client's getForPromString): `le` first, then the series' labels. */
  getForPromString(): ExportedMetric {
    const values: ExportedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const byMethod of this.series.values())
      for (const byStatus of byMethod.values())
        for (const { labels, counts, sum, count } of byStatus.values()) {
          let cumulative = 0;
          REQUEST_SECONDS_BUCKETS.forEach((le, i) => {
            cumulative += counts[i]!;
            values.push({ labels: { le }, sharedLabels: labels, value: cumulative, metricName: bucketName });
          });
          values.push({ labels: { le: "+Inf" }, sharedLabels: labels, value: count, metricName: bucketName });
          values.push({ labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum` });
          values.push({ labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count` });
        }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The object form (prom-client's get): the series' labels and `le` in one object. */
  get(): ExportedMetric {
    const exported = this.getForPromString();
    return { ...exported, values: exported.values.map(({ sharedLabels, labels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } })) };
  }

  reset(): void {
    this.series.clear();
  }
}

let processRegistry: Registry | undefined;

/**
 * prom-client's default metrics describe the process, not one app, and each collectDefaultMetrics
 * call starts an event-loop monitor and a GC observer that are never stopped. So they live in one
 * registry per process, created at the first scrape (no cost while nobody scrapes).
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export interface MetricsOptions {
  /** Undelivered outbox rows, read at scrape time. */
  countOutboxBacklog: () => Promise<number>;
  log: Logger;
}

export class Metrics {
  readonly contentType: string;
  private readonly registry = new Registry();
  private exposed: Registry | undefined;
  private readonly requestSeconds = new RequestDurations();
  private readonly logins: Counter<"method" | "outcome">;
  private readonly lockouts: Counter<"kind">;
  private readonly rateLimitRefusals: Counter<"rule">;
  private readonly webhookDeliveries: Counter<"outcome">;
  private readonly botChecks: Counter<"provider" | "result">;

  constructor(options: MetricsOptions) {
    const registers = [this.registry];
    this.contentType = this.registry.contentType;
    // Not a prom-client Histogram: the same series, observed without its per-call work (RequestDurations).
    this.registry.registerMetric(this.requestSeconds as unknown as Metric);
    this.logins = new Counter({
      name: "latch_logins_total",
      help: "Login attempts that reached the login flow, by method and outcome.",
      labelNames: ["method", "outcome"],
      registers,
    });
    this.lockouts = new Counter({
      name: "latch_lockouts_total",
      help: `Lockouts started: password (${FAILURES_BEFORE_LOCKOUT} wrong passwords), velocity (${distinctIpRules.lockingLoginIps.threshold} IPs for one email), two_factor (${TWO_FACTOR_FAILURES_BEFORE_LOCKOUT} wrong codes).`,
      labelNames: ["kind"],
      registers,
    });
    this.rateLimitRefusals = new Counter({
      name: "latch_rate_limit_refusals_total",
      help: "Requests refused by a rate limit, by rule name.",
      labelNames: ["rule"],
      registers,
    });
    this.webhookDeliveries = new Counter({
      name: "latch_webhook_deliveries_total",
      help: "Webhook delivery attempts by outcome: delivered, retry (failed, will retry) or abandoned (failed for good).",
      labelNames: ["outcome"],
      registers,
    });
    this.botChecks = new Counter({
      name: "latch_bot_checks_total",
      help: "Bot checks by provider and result (provider none checks nothing and is not counted).",
      labelNames: ["provider", "result"],
      registers,
    });
    // Known label values start at 0, so rate() and alerts see the series before the first event.
    for (const kind of LOCKOUT_KINDS) this.lockouts.inc({ kind }, 0);
    for (const outcome of WEBHOOK_OUTCOMES) this.webhookDeliveries.inc({ outcome }, 0);

    const backlog = new Gauge({
      name: "latch_outbox_backlog",
      help: "Webhook deliveries not yet delivered or abandoned (pending rows in the outbox), counted at scrape time; NaN when the store did not answer.",
      registers,
      collect: async () => {
        try {
          backlog.set(await options.countOutboxBacklog());
        } catch (err) {
          options.log.warn({ err }, "metrics: the outbox backlog could not be counted");
          backlog.set(Number.NaN);
        }
      },
    });
  }

  /** `route` is the route pattern (never the raw URL, which can carry a token). */
  observeRequest(route: string, method: string, statusCode: number, seconds: number): void {
    this.requestSeconds.observe(route, method, statusCode, seconds);
  }

  loginOutcome(method: LoginMethod, outcome: LoginOutcome): void {
    this.logins.inc({ method, outcome });
  }

  /** A federated callback's outcome (flows/federation/sign-in.ts names them): success, a step still to take, or the refusal's reason. */
  federatedLoginOutcome(outcome: string): void {
    this.logins.inc({ method: "federated", outcome });
  }

  /**
   * Runs a login attempt and counts it by outcome: "success" when `succeeded(result)`, else
   * "two_factor_required" (the only other answer a login gives), or the error's code.
   */
  async countLogin<R>(method: LoginMethod, attempt: () => Promise<R>, succeeded: (result: R) => boolean): Promise<R> {
    try {
      const result = await attempt();
      this.loginOutcome(method, succeeded(result) ? "success" : "two_factor_required");
      return result;
    } catch (err) {
      this.loginOutcome(method, loginOutcomeOfError(err));
      throw err;
    }
  }

  lockoutStarted(kind: LockoutKind): void {
    this.lockouts.inc({ kind });
  }

  rateLimitRefused(rule: string): void {
    this.rateLimitRefusals.inc({ rule });
  }

  webhookDelivery(outcome: WebhookDeliveryOutcome): void {
    this.webhookDeliveries.inc({ outcome });
  }

  /** The provider comes from stored settings: an unexpected value is counted as `unknown`. */
  botCheck(provider: string, result: BotCheckResult): void {
    this.botChecks.inc({ provider: BOT_PROVIDERS.includes(provider) ? provider : "unknown", result });
  }

  /**
   * contract.md#issue-17: the event loop's delay since the last scrape, what every request waits behind (GC, a
   * synchronous SQLite commit). Node's monitor samples every `resolutionMs` and records each whole
   * interval, so the resolution is taken off: an idle loop reads 0. prom-client's own
   * nodejs_eventloop_lag_* samples every 10 ms and keeps those 10 ms in. Started by the server when
   * /metrics is served (runServer), so tests and the CLI run no timer. Returns what stops it.
   */
  watchEventLoop(resolutionMs = 1): () => void {
    const monitor = monitorEventLoopDelay({ resolution: resolutionMs });
    monitor.enable();
    const seconds = (nanoseconds: number) => Math.max(0, nanoseconds / 1e9 - resolutionMs / 1000);
    const delay = new Gauge({
      name: "latch_event_loop_delay_seconds",
      help: `Event-loop delay since the last scrape, sampled every ${resolutionMs} ms (the interval taken off): stat p50, p99 or max.`,
      labelNames: ["stat"],
      registers: [this.registry],
      collect: () => {
        delay.set({ stat: "p50" }, seconds(monitor.percentile(50)));
        delay.set({ stat: "p99" }, seconds(monitor.percentile(99)));
        delay.set({ stat: "max" }, seconds(monitor.max));
        monitor.reset();
      },
    });
    return () => monitor.disable();
  }

  /** The Prometheus text exposition of this app's series and the process's default metrics. */
  async render(): Promise<string> {
    this.exposed ??= Registry.merge([processMetrics(), this.registry]);
    return this.exposed.metrics();
  }
}
