/**
 * Dev mode at start, once the server listens: the dev tenant, its links aimed at this process, its
 * fake identity provider (dev-provider.ts), a loud warning, and the line that says what to open. src/dev/main.ts runs it once the server listens.
 */
import type { AddressInfo } from "node:net";
import type { FastifyInstance } from "fastify";
import type { Config } from "../config.js";
import type { Deps } from "../deps.js";
import { DEV_TENANT_DOMAIN, DevMode } from "./dev-mode.js";
import { DEV_CONNECTION_DISPLAY_NAME, startDevProvider, type DevProviderStart } from "./dev-provider.js";
import { ensureDevTenant, type DevTenant } from "./dev-tenant.js";

const WILDCARD_OR_LOOPBACK = new Set(["0.0.0.0", "::", "127.0.0.1", "::1"]);

export interface DevModeStart extends DevTenant {
  /** The hosted pages' registration page: where a newcomer starts. */
  pagesUrl: string;
  inboxUrl: string;
  webhookUrl: string;
  provider: DevProviderStart;
}

/** Dev mode is where passwords are typed for fun: say whether they are checked online. */
function breachCheckLine(config: Config): string {
  if (config.breachCheckMode === "remote") {
    return `Breached-password check: online, at ${new URL(config.breachCheckUrl).origin} (only the first 5 hex characters of each new password's SHA-1 leave this machine). BREACH_CHECK_MODE=offline keeps it local.`;
  }
  return config.breachCheckMode === "offline"
    ? "Breached-password check: offline, against the shipped list of common passwords."
    : "Breached-password check: off (BREACH_CHECK_MODE=off).";
}

/** A word for a POSIX shell: as it is when nothing in it is special, else single-quoted. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/**
 * The operator CLI on this server's database, as a command to paste (docs/operations.md#which-database-the-cli-uses):
 * the CLI defaults to ./data/latch.db, `npm start`'s, so without DATABASE_URL it would look at another file.
 * The key is never printed: with SECRETS_KEY set, the line asks for the same one.
 */
export function cliCommandFor(config: Config, args: string): string {
  const key = config.secretsKey !== undefined ? " (with this server's SECRETS_KEY)" : "";
  return `DATABASE_URL=${shellWord(config.databaseUrl)} npm run latch -- ${args}${key}`;
}

/** `print` writes plain lines, apart from the JSON log, so the URL to open is easy to spot. */
export async function startDevMode(
  deps: Deps,
  app: FastifyInstance,
  print: (line: string) => void = (line) => void process.stdout.write(line + "\n"),
): Promise<DevModeStart> {
  if (!(deps.dev instanceof DevMode)) throw new Error("startDevMode needs the DevMode that src/dev/main.ts wires in");
  deps.log.warn(
    "DEV_MODE=true: a `localhost` tenant whose admin key is printed, and a dev inbox at /dev/inbox that shows every link it is sent. Development only: never run this in production",
  );
  const { address, port } = app.server.address() as AddressInfo;
  // The dispatcher calls back into this process; a wildcard listener is reached on loopback.
  const callbackHost = address === "0.0.0.0" || address === "::" ? "127.0.0.1" : address.includes(":") ? `[${address}]` : address;
  const browserHost = WILDCARD_OR_LOOPBACK.has(address) ? "localhost" : callbackHost;
  const webhookUrl = `http://${callbackHost}:${port}/dev/inbox/webhook`;
  const inboxUrl = `http://${browserHost}:${port}/dev/inbox`;
  const pagesUrl = `http://${browserHost}:${port}/ui/register`;
  const linkBase = `http://localhost:${port}`;
  deps.dev.linkBase = linkBase;

  const tenant = await ensureDevTenant(deps, webhookUrl);
  const stored = await deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN);
  if (!stored) throw new Error("the dev tenant vanished during start");
  const provider = await startDevProvider(deps, deps.dev, stored, linkBase);
  print(`Latch dev mode: open ${pagesUrl}`);
  print(`Dev inbox, where the emails arrive: ${inboxUrl}`);
  print(`Operator CLI on this server's database: ${cliCommandFor(deps.config, "tenant list")}`);
  print(
    provider.started
      ? `Federated sign-in: the login page has "Continue with ${DEV_CONNECTION_DISPLAY_NAME}", a fake provider at ${provider.issuer} that signs in any email you type.`
      : `Federated sign-in: the dev provider is off, since WEBHOOK_ALLOW_PRIVATE_NETWORKS=false keeps Latch from calling it on loopback.`,
  );
  print(breachCheckLine(deps.config));
  if (tenant.internalApiKey !== undefined) {
    print(`Dev tenant "localhost" created (application ${tenant.applicationId}). Its admin API key, shown this once: ${tenant.internalApiKey}`);
  } else {
    print(
      `Dev tenant "localhost" is ready (application ${tenant.applicationId}). Its admin API key was shown when it was created; for a new one: ${cliCommandFor(deps.config, `tenant rotate-key ${tenant.applicationId}`)}`,
    );
  }
  return { ...tenant, pagesUrl, inboxUrl, webhookUrl, provider };
}
