/** config -> deps -> app -> listen; the dispatcher and sweeper; graceful shutdown on signals. */
import { availableParallelism } from "node:os";
import { buildApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { DAY, MINUTE } from "./core/clock.js";
import { createDeps } from "./deps.js";
import { erasePendingAccounts } from "./flows/member-admin.js";
import { sealStoredBotSecrets, warnIfUnprotected } from "./flows/tenants.js";
import { startDevMode } from "./dev/start.js";

const SWEEP_INTERVAL_MS = 5 * MINUTE;

/** A configuration error (including one found while building deps, e.g. the key file) exits 1 with its message alone. */
async function orExitOnConfigError<T>(work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

const config = await orExitOnConfigError(() => loadConfig());
const deps = await orExitOnConfigError(() => createDeps(config));
const app = await buildApp(deps);
if (await deps.store.isReady().catch(() => false)) {
  for (const tenant of await deps.store.tenants.listTenants()) warnIfUnprotected(deps, tenant.domain, tenant.settings);
  const sealed = await sealStoredBotSecrets(deps);
  if (sealed > 0) deps.log.info({ tenants: sealed }, "sealed bot secretKeys stored in the clear by an older version");
  const rekeyed = await deps.store.limits.rekeyClearLockouts();
  if (rekeyed > 0) deps.log.info({ lockouts: rekeyed }, "re-keyed lockout rows that held an email in clear (D25)");
} else {
  deps.log.warn("the database is not migrated or not reachable at start: /readyz answers 503 until it is (with MIGRATE_ON_START=false, run `latch migrate`)");
}
if (config.breachCheckMode !== "remote") deps.log.warn({ mode: config.breachCheckMode }, "breached-password check is not using the remote range API");
const threadPool = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
if (threadPool < availableParallelism()) deps.log.warn({ threadPool, cores: availableParallelism() }, "UV_THREADPOOL_SIZE is below the core count: set it in the environment so password hashing can use every core");
if (!config.rateLimits) deps.log.warn("RATE_LIMITS=off: the per-IP and per-email request limits are lifted (benchmarks only); lockouts still apply");
if (config.webhookAllowPrivateNetworks) deps.log.warn("WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: webhooks may reach internal addresses (development only)");

await app.listen({ port: config.port, host: config.host });
if (config.devMode) await startDevMode(deps, app);
deps.webhooks.start();
const sweeper = setInterval(() => {
  deps.store.sweepExpired(deps.clock.now(), config.auditRetentionDays * DAY).catch((err: unknown) => deps.log.error({ err }, "sweeping expired rows failed"));
  erasePendingAccounts(deps, deps.clock.now(), config.pendingRetentionDays * DAY).catch((err: unknown) => deps.log.error({ err }, "erasing expired pending accounts failed"));
}, SWEEP_INTERVAL_MS);
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
