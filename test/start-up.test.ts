/**
 * Issue 16: what an operator can fix at start is said in one line, with exit 1 and no stack trace;
 * the start-up log names the database; a mistyped SQLite path never creates a database silently;
 * the CLI never creates one (apart from `latch migrate`). Real processes, real files, a real port.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { once } from "node:events";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { test, type TestContext } from "node:test";
import { nodeWarnings, startServerProcess, withNodeWarningsShown } from "./support/server-process.js";

const SECRETS_KEY = "11".repeat(32);
/** tsx by absolute URL, so a process may run with another working directory. */
const TSX = pathToFileURL(resolve("node_modules/tsx/dist/loader.mjs")).href;

interface Run {
  code: number | null;
  /** stdout then stderr. */
  output: string;
  stdout: string;
}

/** Runs an entry (src/main.ts, src/cli/main.ts) to its exit; the output is stdout and stderr together. */
function runToExit(entry: string, env: NodeJS.ProcessEnv, options: { cwd?: string; args?: string[] } = {}): Promise<Run> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ["--import", TSX, resolve(entry), ...(options.args ?? [])],
      { env, cwd: options.cwd, timeout: 60_000 },
      (err, stdout, stderr) => {
        done({ code: err ? ((err as { code?: number }).code ?? null) : 0, output: `${stdout}${stderr}`, stdout });
      },
    );
  });
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "latch-start-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function baseEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SECRETS_KEY, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info", BREACH_CHECK_MODE: "offline", ...extra };
  delete env.DEV_MODE;
  return env;
}

/** One line of its own, and no stack frame anywhere. */
function assertOneLineRefusal(run: Run, message: RegExp): void {
  assert.equal(run.code, 1, run.output);
  assert.match(run.output, message);
  assert.doesNotMatch(run.output, /^\s+at /m, `no stack trace:\n${run.output}`);
}

test("a busy port: exit 1 with one line naming it, no stack trace", async (t) => {
  const blocker = createServer().listen(0, "127.0.0.1");
  await once(blocker, "listening");
  t.after(() => blocker.close());
  const port = (blocker.address() as { port: number }).port;
  const dir = tempDir(t);
  const run = await runToExit("src/main.ts", baseEnv({ DATABASE_URL: `sqlite:${dir}/latch.db`, PORT: String(port) }));
  assertOneLineRefusal(run, new RegExp(`^Latch could not start: port ${port} on 127\\.0\\.0\\.1 is already in use .*set PORT$`, "m"));
});

test("an unreachable PostgreSQL: exit 1 with one line naming host, port and database, never the password", async () => {
  const run = await runToExit("src/main.ts", baseEnv({ DATABASE_URL: "postgres://latch:hunter2-secret@127.0.0.1:1/latchdb" }));
  assertOneLineRefusal(run, /^Latch could not start: cannot reach the database \(PostgreSQL 127\.0\.0\.1:1\/latchdb as latch\): .*ECONNREFUSED/m);
  assert.ok(!run.output.includes("hunter2-secret"), run.output);
});

test("an unreachable Redis: exit 1 with one line, no stack trace", async (t) => {
  const dir = tempDir(t);
  const run = await runToExit("src/main.ts", baseEnv({ DATABASE_URL: `sqlite:${dir}/latch.db`, REDIS_URL: "redis://127.0.0.1:1" }));
  assertOneLineRefusal(run, /^Latch could not start: cannot reach Redis \(REDIS_URL\): /m);
});

test("a SQLite path in a directory that does not exist is refused, and nothing is created", async (t) => {
  const dir = tempDir(t);
  const mistyped = join(dir, "dta", "latch.db");
  const run = await runToExit("src/main.ts", baseEnv({ DATABASE_URL: `sqlite:${mistyped}` }));
  assert.equal(run.code, 1, run.output);
  assert.ok(run.output.includes(`DATABASE_URL names a SQLite file in ${join(dir, "dta")}, a directory that does not exist`), run.output);
  assert.ok(!existsSync(join(dir, "dta")), "no directory was made");
});

test("the start-up log names the database, says when it was created now, and that no tenant exists yet; Node prints no warning", async (t) => {
  const dir = tempDir(t);
  const env = withNodeWarningsShown(baseEnv({ DATABASE_URL: `sqlite:${dir}/fresh.db` }));
  const started = async () => {
    const server = await startServerProcess({ env });
    t.after(() => server.stop("SIGKILL"));
    // The reference page loads @fastify/static and its file serving on the first request.
    assert.equal((await fetch(`${server.url}/docs`)).status, 200);
    const lines = server
      .output()
      .map((line) => (line.startsWith("{") ? (JSON.parse(line) as { msg: string; database?: string; tenants?: number }) : { msg: line }));
    assert.equal(await server.stop(), 0);
    // Issue 29: on every Node the CI runs (docs/operations.md#supported-runtimes), start-up is quiet.
    assert.deepEqual(nodeWarnings(server.output()), [], server.output().join("\n"));
    return lines;
  };
  const first = await started();
  const created = first.find((l) => l.msg === "created a new, empty database");
  assert.deepEqual(
    created && { database: created.database, tenants: created.tenants },
    { database: `SQLite ${dir}/fresh.db`, tenants: 0 },
    JSON.stringify(first),
  );
  assert.ok(
    first.some((l) => l.msg.startsWith("no tenant yet: every call and page answers unknown_tenant")),
    JSON.stringify(first),
  );

  const second = await started();
  assert.ok(
    second.some((l) => l.msg === "opened the database" && l.database === `SQLite ${dir}/fresh.db`),
    JSON.stringify(second),
  );
  assert.ok(!second.some((l) => l.msg === "created a new, empty database"));
});

test("the CLI creates a database only for `migrate` and `tenant create`, never beside dev mode's, and says so", async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, "data"));
  const env = baseEnv({});
  delete env.DATABASE_URL;
  const latch = (...args: string[]) => runToExit("src/cli/main.ts", env, { cwd: dir, args });
  const settings = JSON.stringify({
    emailVerificationWebhook: "https://hooks.example.net/v",
    passwordResetWebhook: "https://hooks.example.net/r",
    magicLoginWebhook: "https://hooks.example.net/m",
  });

  const listed = await latch("tenant", "list");
  assert.equal(listed.code, 1, listed.output);
  assert.ok(listed.output.includes(`there is no SQLite database at ${join(dir, "data", "latch.db")}`), listed.output);
  assert.doesNotMatch(listed.output, /^\s+at /m);
  assert.ok(!existsSync(join(dir, "data", "latch.db")), "a list created nothing");

  writeFileSync(join(dir, "data", "dev.db"), ""); // dev mode ran here; the operator forgot DATABASE_URL
  const besideDev = await latch("tenant", "create", "--domain", "shop.test", "--settings", settings);
  assert.equal(besideDev.code, 1, besideDev.output);
  assert.ok(
    besideDev.output.includes(`Dev mode's database is ${join(dir, "data", "dev.db")}: DATABASE_URL=sqlite:./data/dev.db npm run latch`),
    besideDev.output,
  );
  assert.ok(!existsSync(join(dir, "data", "latch.db")), "no tenant in a file the dev server never reads");
  rmSync(join(dir, "data", "dev.db"));

  const created = await latch("tenant", "create", "--domain", "shop.test", "--settings", settings);
  assert.equal(created.code, 0, created.output);
  assert.ok(created.output.includes(`latch: creating a new, empty database: SQLite ${join(dir, "data", "latch.db")}`), created.output);
  const again = await latch("tenant", "list");
  assert.equal(again.code, 0, again.output);
  assert.ok(again.output.includes(`latch: database sqlite:${join(dir, "data", "latch.db")}`), again.output);
  assert.deepEqual(
    (JSON.parse(again.stdout) as { tenants: { domain: string }[] }).tenants.map((tenant) => tenant.domain),
    ["shop.test"],
  );

  const elsewhere = join(dir, "elsewhere.db");
  const migrated = await runToExit("src/cli/main.ts", { ...env, DATABASE_URL: `sqlite:${elsewhere}` }, { cwd: dir, args: ["migrate"] });
  assert.equal(migrated.code, 0, migrated.output);
  assert.ok(existsSync(elsewhere), "`latch migrate` creates it");
});

test("`npm start` builds only when the build is missing or older than its sources", async (t) => {
  const dir = tempDir(t);
  // A project of the same shape whose build only leaves a mark, run by the real script and npm.
  const build =
    "node -e \"const f=require('fs');f.mkdirSync('dist/ui',{recursive:true});for(const p of ['dist/main.js','dist/ui/hosted.js'])f.writeFileSync(p,'');f.appendFileSync('builds','x')\"";
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "fixture", private: true, scripts: { build } }));
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "main.ts"), "");
  const builds = () => (existsSync(join(dir, "builds")) ? readFileSync(join(dir, "builds"), "utf8").length : 0);
  const prestart = () => runToExit("scripts/build-if-stale.mjs", { ...process.env }, { cwd: dir });

  assert.equal((await prestart()).code, 0);
  assert.equal(builds(), 1, "no build yet: it builds");
  assert.equal((await prestart()).code, 0);
  assert.equal(builds(), 1, "up to date: no second build");

  const later = new Date(Date.now() + 60_000);
  utimesSync(join(dir, "src", "main.ts"), later, later);
  assert.equal((await prestart()).code, 0);
  assert.equal(builds(), 2, "a source newer than the build: it rebuilds");

  rmSync(join(dir, "dist", "ui", "hosted.js"));
  assert.equal((await prestart()).code, 0);
  assert.equal(builds(), 3, "half a build counts as none");

  const packageJson = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  assert.equal(packageJson.scripts.prestart, "node scripts/build-if-stale.mjs", "the script `npm start` runs first");
});
