/**
 * Latch in dev mode as a real process (`npm run dev`'s entry, src/dev/main.ts): a fresh SQLite file
 * and generated secrets key in a temp folder, port 0, the `localhost` tenant on ALTCHA with its
 * webhooks at the dev inbox. The browser opens http://localhost:<port>, which the Host header maps
 * to that tenant (D2), and the links in the inbox's emails point back at the same process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nodeWarnings, startServerProcess, withNodeWarningsShown, type ServerProcess } from "../../support/server-process.js";

export interface DevServer {
  /** http://localhost:<port>: what a browser opens (the tenant is `localhost`). */
  baseURL: string;
  port: number;
  inboxURL: string;
  /** The dev tenant's admin API key, printed once at creation. */
  adminKey: string;
  process: ServerProcess;
  stop(): Promise<void>;
}

export async function startDevServer(): Promise<DevServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-e2e-"));
  const env: NodeJS.ProcessEnv = withNodeWarningsShown({
    ...process.env,
    DATABASE_URL: `sqlite:${join(dataDir, "dev.db")}`,
    PORT: "0",
    LOG_LEVEL: "info",
    BREACH_CHECK_MODE: "offline",
  });
  // What dev mode must choose itself: the key generated into the data folder, loopback, dev mode on.
  for (const name of ["SECRETS_KEY", "DEV_MODE", "HOST", "REDIS_URL", "OPERATOR_API_KEY", "METRICS_TOKEN"]) delete env[name];
  let server: ServerProcess;
  try {
    server = await startServerProcess({ entry: "src/dev/main.ts", env, readyPattern: /^Dev tenant "localhost" created/ });
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const lines = server.output();
  const inboxURL = /^Dev inbox, where the emails arrive: (http:\/\/localhost:\d+\/dev\/inbox)$/.exec(lines.find((l) => l.startsWith("Dev inbox,")) ?? "")?.[1];
  const adminKey = /admin API key, shown this once: (\S+)$/.exec(lines.find((l) => l.includes("shown this once")) ?? "")?.[1];
  if (!inboxURL || !adminKey) {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(`the dev server did not print its inbox URL and admin key:\n${lines.join("\n")}`);
  }
  return {
    baseURL: `http://localhost:${server.port}`,
    port: server.port,
    inboxURL,
    adminKey,
    process: server,
    async stop() {
      const code = await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`the dev server exited with ${code} on SIGTERM:\n${server.output().slice(-20).join("\n")}`);
      // Issue 29: a whole browser suite's pages and flows print no Node warning, on each Node CI runs.
      const warnings = nodeWarnings(server.output());
      if (warnings.length > 0) throw new Error(`the dev server printed Node warnings:\n${warnings.join("\n")}`);
    },
  };
}
