/**
 * Everything a flow may touch: the Deps type, and what dev mode lends (DevLinks). Built once at
 * start-up by create-deps.ts, which sits above the flows (it wires the email worker into the
 * dispatcher); tests build the same object with a manual clock, seeded random and local provider
 * URLs, so no flow reaches for a global. Types only: nothing here runs.
 */
import type { Logger } from "pino";
import type { Config } from "./config.js";
import type { Clock } from "./core/clock.js";
import type { Random } from "./core/random.js";
import type { BackgroundTasks } from "./events/background.js";
import type { WebhookDispatcher } from "./events/dispatcher.js";
import type { AltchaProvider } from "./providers/altcha.js";
import type { BotVerifier } from "./providers/bot.js";
import type { GeoLocator } from "./providers/geoip.js";
import type { BreachChecker } from "./providers/breach.js";
import type { PasswordHasher } from "./security/password.js";
import type { SecretBox } from "./security/secret-box.js";
import type { SubjectHasher } from "./security/hashing.js";
import type { Store } from "./store/index.js";
import type { Counters } from "./store/counters.js";
import type { RedisCounters } from "./store/redis-counters.js";
import type { Metrics } from "./metrics.js";
import type { TenantCache } from "./store/tenant-cache.js";
import type { ReadinessNotice } from "./store/readiness-notice.js";
import type { UpstreamProvider } from "./providers/upstream.js";

export interface Deps {
  config: Config;
  clock: Clock;
  random: Random;
  log: Logger;
  store: Store;
  /** Rate-limit counters, cooldowns and ALTCHA replay marks: Redis when configured, else the store. */
  counters: Counters;
  /** Set when REDIS_URL is: readiness pings it and shutdown closes it. */
  redis: RedisCounters | undefined;
  /** Says once that the database or Redis is not ready, rather than on every probe and pass (docs/operations.md#readiness). */
  readiness: ReadinessNotice;
  /** Tenants by domain for request resolution, cached for a few seconds. */
  tenantCache: TenantCache;
  hasher: PasswordHasher;
  breach: BreachChecker;
  bot: BotVerifier;
  secrets: SecretBox;
  /** contract.md#d25: the keyed hash that names an email or IP in lockout and limit rows. */
  subjects: SubjectHasher;
  altcha: AltchaProvider;
  webhooks: WebhookDispatcher;
  background: BackgroundTasks;
  geo: GeoLocator;
  /** Federated sign-in's relying party (decisions.md#federated-sign-in), through the outbound guard. */
  upstream: UpstreamProvider;
  /** DEV_MODE=true only: where the dev tenant's links point (src/dev/ lends it through createDeps). */
  dev: DevLinks | undefined;
  /** Prometheus series of this app (a registry of its own), served by GET /metrics. */
  metrics: Metrics;
}

/**
 * What code running inside `store.transaction` may use (contract.md#issue-28): everything but the outer store.
 * There the transaction's own store (`tx`) is the only way to the database; the outer one never
 * returned on SQLite and ran outside the transaction on PostgreSQL. Helpers called with a `tx`
 * take this type, so `deps.store` inside them does not compile.
 */
export type TransactionDeps = Omit<Deps, "store">;

/**
 * What dev mode lends the layers below it (src/dev/dev-mode.ts implements it): the dev tenant's
 * links point at this process. Declared here so that nothing below src/dev/ imports from it.
 */
export interface DevLinks {
  linkBaseFor(domain: string): string | undefined;
}
