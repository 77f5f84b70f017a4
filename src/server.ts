/**
 * config -> deps -> app -> listen; the dispatcher and sweeper; graceful shutdown on signals. The
 * entries call runServer: src/main.ts as it is, src/dev/main.ts with dev mode's wiring, so nothing
 * here imports from src/dev/ (it sits above the app in the layers: docs/architecture.md).
 */
import { availableParallelism } from "node:os";
import type { FastifyInstance } from "fastify";
import { buildApp, type BuildAppOptions } from "./app.js";
import { ConfigError, loadConfig, StartError } from "./config.js";
import { DAY } from "./core/clock.js";
import { createDeps } from "./create-deps.js";
import type { Deps, DevLinks } from "./deps.js";
import { erasePendingAccounts } from "./flows/kernel/erasure.js";
import { sealStoredBotSecrets, warnIfOriginsIgnored, warnIfUnprotected } from "./flows/tenants/tenants.js";
import { RETENTION_SWEEP_INTERVAL_MS } from "./rules.js";
import { checkDatabaseLocation, listenProblem } from "./start-up.js";

/**
 * A configuration error (including one found while building deps, e.g. the key file) or a start
 * error (a busy port, a database out of reach) exits 1 with its message alone: no stack trace for
 * what the operator fixes outside the code.
 */
async function orExitOnStartProblem<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
    else if (err instanceof StartError) process.stderr.write(`Latch could not start: ${err.message}\n`);
    else throw err;
    process.exit(1);
  }
}

/** What an entry adds to the plain server: dev mode's links, its routes, and what it does once listening. */
export interface ServerWiring {
  dev?: DevLinks;
  app?: BuildAppOptions;
  afterListen?: (deps: Deps, app: FastifyInstance) => Promise<unknown>;
}

export async function runServer(wiring: ServerWiring = {}): Promise<void> {
  const config = await orExitOnStartProblem(() => loadConfig());
  const database = await orExitOnStartProblem(() => checkDatabaseLocation(config.databaseUrl, { mayCreate: true }));
  const deps = await orExitOnStartProblem(() => createDeps(config, { dev: wiring.dev }));
  const app = await buildApp(deps, wiring.app);
  if (await deps.store.isReady().catch(() => false)) {
    const tenants = await deps.store.tenants.listTenants();
    deps.log.info({ database: database.description, tenants: tenants.length }, database.isNew ? "created a new, empty database" : "opened the database");
    // The first thing a newcomer meets otherwise is "This site is not known" on every page.
    if (tenants.length === 0 && !config.devMode)
      deps.log.warn(
        "no tenant yet: every call and page answers unknown_tenant until one exists. Create one with `npm run latch -- tenant create --domain <host> --settings '<json>'` (same DATABASE_URL)",
      );
    for (const tenant of tenants) {
      warnIfUnprotected(deps, tenant.domain, tenant.settings);
      warnIfOriginsIgnored(deps, tenant.domain, tenant.settings);
    }
    const sealed = await sealStoredBotSecrets(deps);
    if (sealed > 0) deps.log.info({ tenants: sealed }, "sealed bot secretKeys stored in the clear by an older version");
    const rekeyed = await deps.store.limits.rekeyClearLockouts();
    if (rekeyed > 0) deps.log.info({ lockouts: rekeyed }, "re-keyed lockout rows that held an email in clear");
  } else {
    // The readiness notice's one warning (docs/operations.md#readiness): probes and passes stay quiet after it.
    deps.readiness.report("database", false);
  }
  if (config.breachCheckMode !== "remote") deps.log.warn({ mode: config.breachCheckMode }, "breached-password check is not using the remote range API");
  else
    deps.log.info(
      { url: config.breachCheckUrl },
      "breached-password check: each new password's SHA-1 prefix (5 hex characters, k-anonymity) goes to the range API; BREACH_CHECK_MODE=offline keeps it local",
    );
  const threadPool = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
  if (threadPool < availableParallelism())
    deps.log.warn(
      { threadPool, cores: availableParallelism() },
      "UV_THREADPOOL_SIZE is below the core count: set it in the environment so password hashing can use every core",
    );
  if (!config.rateLimits) deps.log.warn("RATE_LIMITS=off: the per-IP and per-email request limits are lifted (benchmarks only); lockouts still apply");
  if (config.webhookAllowPrivateNetworks) deps.log.warn("WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: webhooks may reach internal addresses (development only)");

  await orExitOnStartProblem(() =>
    app.listen({ port: config.port, host: config.host }).catch((err: unknown) => Promise.reject(listenProblem(err, config.host, config.port))),
  );
  await wiring.afterListen?.(deps, app);
  if (config.metricsToken !== undefined) deps.metrics.watchEventLoop();
  deps.webhooks.start();
  // A failure while the database is not ready is that state, said once by the readiness notice.
  const logSweepFailure = (what: string) => async (err: unknown) => {
    if (!(await deps.readiness.explainedByDatabase(() => deps.store.isReady(), err))) deps.log.error({ err }, `${what} failed`);
  };
  const sweeper = setInterval(() => {
    deps.store.sweepExpired(deps.clock.now(), config.auditRetentionDays * DAY).catch(logSweepFailure("sweeping expired rows"));
    erasePendingAccounts(deps, deps.clock.now(), config.pendingRetentionDays * DAY).catch(logSweepFailure("erasing expired pending accounts"));
  }, RETENTION_SWEEP_INTERVAL_MS);
  sweeper.unref();

  let stopping = false;
  async function shutdown(signal: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    deps.log.info({ signal }, "shutting down: draining requests and webhook deliveries");
    clearInterval(sweeper);
    await app.close();
    await deps.background.drain();
    await deps.webhooks.stop();
    await deps.store.close();
    await deps.redis?.close();
    process.exit(0);
  }
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}
