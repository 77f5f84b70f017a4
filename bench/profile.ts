/**
 * `npm run bench:profile [-- <scenario> <seconds>]`: runs one benchmark scenario against a Latch
 * process started with `node --cpu-prof`, then prints the functions with the most self and
 * inclusive time (bench/cpuprofile-top.mjs), then the CPU time per request by stage
 * (bench/cpuprofile-stages.mjs: routing, hooks, tenant lookup, cookie, store read, serialization,
 * logging, metrics...). Scenarios: session (default), login, forgot (forgot-password for unknown
 * emails, a new IP each, with the rate limits on as deployed), floor (the bare Fastify floor under
 * the session check's load). `--store postgres` profiles Latch on a PostgreSQL database of its own
 * with Redis counters (bench/postgres.ts), as `npm run bench -- --store postgres` runs it. The
 * profile file stays in the printed directory for Chrome DevTools or speedscope.
 */
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runLoad } from "./load-client.js";
import { createBenchStore } from "./postgres.js";
import { runCleanups } from "./servers.js";
import { forgotPasswords } from "./requests.js";
import { BENCH_PASSWORD, BENCH_SECRETS_KEY, seedLatch } from "./seed.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const argv = process.argv.slice(2);
const storeAt = argv.indexOf("--store");
const onPostgres = storeAt >= 0 && argv[storeAt + 1] === "postgres";
if (storeAt >= 0) argv.splice(storeAt, 2);
const [scenario = "session", secondsArg = "8"] = argv;
const SCENARIOS = ["session", "login", "forgot", "floor"];
if (!SCENARIOS.includes(scenario)) throw new Error(`scenario must be one of ${SCENARIOS.join(", ")}`);
const work = mkdtempSync(join(tmpdir(), "latch-profile-"));
const store = onPostgres ? await createBenchStore() : undefined;
const seeded = await seedLatch({
  ...(store ? { databaseUrl: store.databaseUrl } : { dataDir: work }),
  tenants: 1,
  membersPerTenant: 1000,
  sessions: 1000,
  webhookUrl: "http://127.0.0.1:9",
});
const port = 40_000 + Math.floor(Math.random() * 20_000);
// `floor` profiles the framework floor (bench/floor-server.ts) under the session check's load, for the same per-stage table.
const entry = scenario === "floor" ? ["--import", "tsx", "bench/floor-server.ts"] : ["dist/main.js"];
const child = spawn(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${work}`, ...entry], {
  cwd: ROOT,
  env: {
    ...process.env,
    DATABASE_URL: seeded.databaseUrl,
    ...(store?.redis ? { REDIS_URL: store.redis.url, REDIS_KEY_PREFIX: store.redis.keyPrefix } : {}),
    SECRETS_KEY: BENCH_SECRETS_KEY,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_LEVEL: "warn",
    // forgot-password is profiled as deployed: its cost is mostly the limits' counters (bench/requests.ts).
    ...(scenario === "forgot" ? { TRUST_PROXY: "127.0.0.1" } : { RATE_LIMITS: "off" }),
    BREACH_CHECK_MODE: "offline",
    UV_THREADPOOL_SIZE: String(Math.max(4, availableParallelism())),
  },
  stdio: ["ignore", "ignore", "inherit"],
});
const url = `http://127.0.0.1:${port}`;
const readyPath = scenario === "floor" ? "/auth/session" : "/readyz";
for (
  let i = 0;
  !(await fetch(`${url}${readyPath}`).then(
    (r) => r.status < 500,
    () => false,
  ));
  i++
) {
  if (i > 300) throw new Error("Latch did not start");
  await new Promise((r) => setTimeout(r, 100));
}
const requests =
  scenario === "forgot"
    ? forgotPasswords(seeded.sessions[0]!.domain)
    : scenario !== "login"
      ? seeded.sessions.map((s) => ({
          method: "GET" as const,
          path: "/auth/session",
          headers: { "x-tenant-domain": s.domain, cookie: `session_id=${s.cookie}` },
        }))
      : seeded.logins.map((l) => ({
          method: "POST" as const,
          path: "/auth/login",
          headers: { "content-type": "application/json", "x-tenant-domain": l.domain },
          body: JSON.stringify({ email: l.email, password: BENCH_PASSWORD, "bot-challenge-response": "x" }),
        }));
// No warm-up run: every request served is in the profile, so the stage table can divide by them.
const result = await runLoad({ url, connections: 20, durationSeconds: Number(secondsArg), requests });
console.log(`${scenario}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms (under --cpu-prof, which slows it)`);
child.kill("SIGTERM");
await once(child, "exit");
await runCleanups(); // the PostgreSQL database and Redis keys, with --store postgres
const profile = readdirSync(work)
  .filter((f) => f.endsWith(".cpuprofile"))
  .map((f) => join(work, f))[0];
if (!profile) throw new Error("no profile written");
console.log(`profile: ${profile}`);
spawnSync(process.execPath, [join(ROOT, "bench/cpuprofile-top.mjs"), profile, process.env.PROFILE_TOP ?? "25"], { stdio: "inherit" });
spawnSync(process.execPath, [join(ROOT, "bench/cpuprofile-stages.mjs"), profile, String(result.requests)], { stdio: "inherit" });
