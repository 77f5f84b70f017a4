/**
 * The processes `npm run bench` starts and reads: servers on free ports (Latch from dist/, the
 * floors, the peer), a webhook sink, Latch's /metrics, and a process's memory from /proc. Every
 * server started here is stopped by runCleanups(), in reverse order, with anything else pushed
 * onto `cleanups` (temporary directories, the PostgreSQL database).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { BENCH_SECRETS_KEY } from "./seed.js";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));
export const THREAD_POOL = String(Math.max(4, availableParallelism()));
/** GET /metrics answers only with this Bearer token (config.ts: at least 32 characters). */
export const METRICS_TOKEN = "bench-metrics-token-".padEnd(40, "x");

/**
 * Where the processes run. By default everything shares every core, as in a deployment where the
 * server has the machine. BENCH_PIN=on (an experiment, not the report's method) runs every server
 * started after `pinServers(true)` (Latch, the floors, the peer, the hash floor) on core 0 with its
 * threads, and this process and its load generators on the others; it needs `taskset` and two
 * cores. On the two-core bench machine it took the generator out of the paced run's tail, but it
 * also put Argon2's threads on the core that serves the requests, so logins measured one core's
 * contention instead of the deployment's (docs/performance.md).
 */
const CORES = availableParallelism();
const PIN_WANTED = process.env.BENCH_PIN === "on" && CORES >= 2 && hasTaskset();
let pinned = false;

function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Pins (servers on core 0, this process on the others) or unpins; returns whether pinning is on. */
export function pinServers(on: boolean): boolean {
  const next = on && PIN_WANTED;
  if (next !== pinned) execFileSync("taskset", ["-a", "-cp", next ? `1-${CORES - 1}` : `0-${CORES - 1}`, String(process.pid)], { stdio: "ignore" });
  pinned = next;
  return pinned;
}

/** How to start a server process: on core 0 while pinning is on. */
export function serverCommand(args: string[]): [string, string[]] {
  return pinned ? ["taskset", ["-c", "0", process.execPath, ...args]] : [process.execPath, args];
}

export const cleanups: Array<() => Promise<void> | void> = [];

export async function runCleanups(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

/** A free local port: listen on 0, read it, close. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

export interface Running {
  url: string;
  child: ChildProcess;
  /** Resident set size now (VmRSS) and its peak so far (VmHWM), in MiB. */
  rssMiB(): number;
  peakRssMiB(): number;
  stop(): Promise<void>;
}

function procStatusMiB(pid: number | undefined, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
}

// The bench decides every setting of the servers it starts: none leaks in from the caller's shell.
const DECIDED_HERE = ["RATE_LIMITS", "TRUST_PROXY", "METRICS_TOKEN", "REDIS_URL", "REDIS_KEY_PREFIX", "DATABASE_URL", "LOG_LEVEL"];

/** Starts a server process on a free port and waits until `readyPath` answers below 500. */
export async function startServer(name: string, args: string[], env: Record<string, string>, readyPath: string): Promise<Running> {
  const port = await freePort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !DECIDED_HERE.includes(key)));
  const [command, commandArgs] = serverCommand(args);
  const child = spawn(command, commandArgs, {
    cwd: ROOT,
    env: { ...inherited, ...env, PORT: String(port), HOST: "127.0.0.1", UV_THREADPOOL_SIZE: THREAD_POOL },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}`);
    const ok = await fetch(`${url}${readyPath}`).then(
      (r) => r.status < 500,
      () => false,
    );
    if (ok) break;
    if (i > 600) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const running: Running = {
    url,
    child,
    rssMiB: () => procStatusMiB(child.pid, "VmRSS"),
    peakRssMiB: () => procStatusMiB(child.pid, "VmHWM"),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
  cleanups.push(() => running.stop());
  return running;
}

export interface LatchStore {
  databaseUrl: string;
  /** PostgreSQL runs keep the limit counters in Redis, as a deployment of several instances does. */
  redis?: { url: string; keyPrefix: string };
}

/**
 * Latch as deployed behind a proxy: rate limits on (RATE_LIMITS unset), TRUST_PROXY=127.0.0.1 so
 * that the load generator's X-Forwarded-For names each simulated client (contract.md#d13), /metrics readable
 * with METRICS_TOKEN. The first scrape starts prom-client's process metrics (src/metrics.ts makes
 * them at the first scrape), so the event-loop monitor runs from the start.
 */
export async function startLatch(store: LatchStore): Promise<Running> {
  const latch = await startServer(
    "latch",
    ["dist/main.js"],
    {
      DATABASE_URL: store.databaseUrl,
      SECRETS_KEY: BENCH_SECRETS_KEY,
      TRUST_PROXY: "127.0.0.1",
      METRICS_TOKEN,
      BREACH_CHECK_MODE: "offline",
      WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
      LOG_LEVEL: "warn",
      ...(store.redis && { REDIS_URL: store.redis.url, REDIS_KEY_PREFIX: store.redis.keyPrefix }),
    },
    "/readyz",
  );
  await scrapeMetrics(latch.url);
  return latch;
}

/** A tenant's webhook endpoint: accepts and drops every delivery. */
export async function startWebhookSink(): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(204).end());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  cleanups.push(() => void server.close());
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}`;
}

/** One scrape of Latch's GET /metrics: every sample, by name with its labels as written (`name{stat="p99"}`). */
export async function scrapeMetrics(url: string): Promise<Map<string, number>> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (match) samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

/**
 * Event-loop delay since the last scrape, in ms: Latch's latch_event_loop_delay_seconds, sampled
 * every 1 ms with that interval taken off (src/metrics.ts watchEventLoop); each scrape resets it.
 */
export interface EventLoopDelay {
  p50: number;
  p99: number;
  max: number;
}

export async function eventLoopDelay(url: string): Promise<EventLoopDelay> {
  const samples = await scrapeMetrics(url);
  const ms = (stat: string) => (samples.get(`latch_event_loop_delay_seconds{stat="${stat}"}`) ?? NaN) * 1000;
  return { p50: ms("p50"), p99: ms("p99"), max: ms("max") };
}
