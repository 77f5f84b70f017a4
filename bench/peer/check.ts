/**
 * Smoke test for the Better Auth benchmark peer (better-auth-server.ts): starts it on a temp
 * SQLite file, then over real HTTP signs up, signs in, reads the session, checks a wrong password
 * is refused and that the stored hash is Argon2id with Latch's parameters. Prints the request
 * shapes the benchmark harness must use. Exits non-zero on any failure.
 *
 *   node --import tsx bench/peer/check.ts   (npm run bench:check runs it, the last step of npm test)
 *
 * What it asserts holds on any machine, however busy: statuses, the cookie, the stored hash. The
 * start-up time is printed, not judged; the limits below only keep a hung server from hanging CI.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";

// Latch's Argon2id parameters. @node-rs/argon2 writes them in the order m,t,p and node-argon2 in the
// order m,p,t ("$argon2id$v=19$m=19456,p=1,t=2$..."), so compare them as a set, not as a fixed prefix.
const EXPECTED_HASH = { id: "argon2id", v: "19", params: "m=19456,p=1,t=2" };
const COOKIE_NAME = "better-auth.session_token";
const serverFile = fileURLToPath(new URL("./better-auth-server.ts", import.meta.url));
const projectRoot = fileURLToPath(new URL("../../", import.meta.url));

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** How long the server may take to print its address: a hang guard (it starts in about 5 s). */
const START_LIMIT_MS = 120_000;
/** How long any one request, or the exit on SIGTERM, may take: a hang guard too (each takes milliseconds). */
const REQUEST_LIMIT_MS = 60_000;
const request = (url: string, init: RequestInit = {}) => fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_LIMIT_MS) });

const started = performance.now();
const dir = mkdtempSync(join(tmpdir(), "latch-peer-"));
const dbFile = join(dir, "peer.db");
const child = spawn(process.execPath, ["--import", "tsx", serverFile], {
  cwd: projectRoot,
  // The pool size must be in the environment at launch to be sure to take effect (see the server).
  env: { ...process.env, BENCH_DB_FILE: dbFile, PORT: "0", HOST: "127.0.0.1", UV_THREADPOOL_SIZE: String(Math.max(4, availableParallelism())) },
  stdio: ["ignore", "pipe", "inherit"],
});
const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;

try {
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within ${START_LIMIT_MS / 1000} s`)), START_LIMIT_MS);
    child.once("exit", (code) => reject(new Error(`server exited early with code ${code}`)));
    createInterface({ input: child.stdout }).once("line", (line) => {
      clearTimeout(timer);
      const match = /^listening (http:\/\/\S+)$/.exec(line);
      if (match?.[1]) resolve(match[1]);
      else reject(new Error(`unexpected first line: ${line}`));
    });
  });
  const startupMs = performance.now() - started;

  const email = "bench-user@example.com";
  const password = "Correct-Horse-9";
  const json = { "content-type": "application/json" };

  const signUp = await request(`${base}/api/auth/sign-up/email`, {
    method: "POST",
    headers: json,
    body: JSON.stringify({ email, password, name: "Bench User" }),
  });
  assert(signUp.status === 200, `sign-up status ${signUp.status}: ${await signUp.text()}`);

  const signInRequest = { method: "POST", headers: json, body: JSON.stringify({ email, password }) };
  const signIn = await request(`${base}/api/auth/sign-in/email`, signInRequest);
  assert(signIn.status === 200, `sign-in status ${signIn.status}: ${await signIn.text()}`);
  const sessionCookie = signIn.headers.getSetCookie().find((c) => c.startsWith(`${COOKIE_NAME}=`));
  assert(sessionCookie, `no ${COOKIE_NAME} in set-cookie: ${signIn.headers.getSetCookie().join(" | ")}`);
  const cookie = sessionCookie.split(";")[0] ?? ""; // "name=value", value sent back verbatim

  const getSession = await request(`${base}/api/auth/get-session`, { headers: { cookie } });
  assert(getSession.status === 200, `get-session status ${getSession.status}`);
  const body = (await getSession.json()) as { user?: { email?: string } } | null;
  assert(body?.user?.email === email, `get-session returned ${JSON.stringify(body)}`);

  const noCookie = await request(`${base}/api/auth/get-session`);
  assert((await noCookie.json()) === null, "get-session without a cookie must return null");

  const wrong = await request(`${base}/api/auth/sign-in/email`, { method: "POST", headers: json, body: JSON.stringify({ email, password: "Wrong-Horse-9" }) });
  assert(wrong.status === 401, `wrong password gave status ${wrong.status}`);
  assert(wrong.headers.getSetCookie().length === 0, "wrong password must not set a cookie");

  const reader = new Database(dbFile, { readonly: true });
  const row = reader.prepare("SELECT password FROM account WHERE providerId = 'credential'").get() as { password: string } | undefined;
  reader.close();
  const [, id, version, params] = row?.password.split("$") ?? [];
  const sortedParams = params?.split(",").sort().join(",");
  assert(
    id === EXPECTED_HASH.id && version === `v=${EXPECTED_HASH.v}` && sortedParams === EXPECTED_HASH.params,
    `stored hash ${row?.password} is not ${JSON.stringify(EXPECTED_HASH)}`,
  );
  const storedHashPrefix = `$${id}$${version}$${params}$`;

  child.kill("SIGTERM");
  const stuck = setTimeout(() => child.kill("SIGKILL"), REQUEST_LIMIT_MS); // then the assertion below fails
  const [code, signal] = await exited;
  clearTimeout(stuck);
  assert(code === 0, `server exit on SIGTERM: code ${code} signal ${signal}`);

  console.log(`OK  Better Auth peer at ${base} (startup ${Math.round(startupMs)} ms, total ${Math.round(performance.now() - started)} ms)`);
  console.log(`Stored password hash: ${storedHashPrefix}<salt 32 B>$<hash> (Argon2id, Latch's m/t/p)`);
  console.log("Request shapes for the benchmark:");
  console.log(`  sign-in:     POST ${base}/api/auth/sign-in/email`);
  console.log(`               headers: ${JSON.stringify(json)}   (no Origin, no Cookie)`);
  console.log(`               body:    ${signInRequest.body}`);
  console.log(`               -> 200 JSON {redirect,token,user}; set-cookie ${COOKIE_NAME}=<token>.<signature> (HttpOnly, SameSite=Lax, Path=/)`);
  console.log(`               wrong password -> 401 {"code":"INVALID_EMAIL_OR_PASSWORD"}`);
  console.log(`  get-session: GET  ${base}/api/auth/get-session`);
  console.log(`               headers: {"cookie":"${COOKIE_NAME}=<value from set-cookie, verbatim>"}`);
  console.log(`               e.g.     ${cookie}`);
  console.log("               -> 200 JSON {session,user}; null when no/invalid cookie");
  console.log(`  sign-up:     POST ${base}/api/auth/sign-up/email  body {"email","password","name"}  (same headers as sign-in)`);
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
} finally {
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
}
