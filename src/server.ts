/** config -> deps -> app -> listen; the dispatcher and sweeper; graceful shutdown on signals. */
import { buildApp } from "./app.js";
import { ConfigError, loadConfig } from "./config.js";
import { MINUTE } from "./core/clock.js";
import { createDeps } from "./deps.js";
import { warnIfUnprotected } from "./flows/tenants.js";

const SWEEP_INTERVAL_MS = 5 * MINUTE;

function loadConfigOrExit() {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

const config = loadConfigOrExit();
const deps = await createDeps(config);
const app = await buildApp(deps);
for (const tenant of await deps.store.tenants.listTenants()) warnIfUnprotected(deps, tenant.domain, tenant.settings);
if (config.breachCheckMode !== "remote") deps.log.warn({ mode: config.breachCheckMode }, "breached-password check is not using the remote range API");
if (config.webhookAllowPrivateNetworks) deps.log.warn("WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: webhooks may reach internal addresses (development only)");

await app.listen({ port: config.port, host: config.host });
deps.webhooks.start();
const sweeper = setInterval(() => {
  deps.store.sweepExpired(deps.clock.now()).catch((err: unknown) => deps.log.error({ err }, "sweeping expired rows failed"));
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
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
