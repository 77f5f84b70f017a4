/**
 * The measurements of `npm run bench`, one function per group: the peer (Better Auth), Latch's
 * scenarios on one store (SQLite or PostgreSQL, the same code for both), the memory spray. Every
 * run is judged against the status its answers should have (report.ts judge()).
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import type { ImportFormat } from "../src/flows/admin/import.js";
import { runLoad } from "./load-client.js";
import type { LoadRequest, LoadResult, LoadSpec } from "./load-types.js";
import { openDatabase } from "../src/store/database.js";
import { judge, judgeOutcome } from "./report.js";
import * as requests from "./requests.js";
import type { UpstreamIdp } from "../test/support/upstream-idp.js";
import { BENCH_CONNECTION, BENCH_PASSWORD, BENCH_SECRETS_KEY, type Seeded } from "./seed.js";
import {
  eventLoopDelay,
  log,
  type EventLoopDelay,
  ROOT,
  scrapeMetrics,
  startLatch,
  serverCommand,
  startServer,
  THREAD_POOL,
  type LatchStore,
  type Running,
} from "./servers.js";

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
export const SPRAY_SECONDS = Number(process.env.BENCH_SPRAY_SECONDS ?? 60);
export const WARMUP = Math.min(3, Math.max(1, Math.round(SECONDS / 4)));
/** BENCH_ONLY=session,login,...: run only these groups (for development; the report says so). */
export const ONLY = process.env.BENCH_ONLY?.split(",")
  .map((s) => s.trim())
  .filter(Boolean);
export const GROUPS = [
  "session",
  "peer",
  "login",
  "writes",
  "import",
  "spray",
  "growth",
  "postgres",
  "oidc",
  "change-password",
  "imported-login",
  "federated",
] as const;
export const runs = (group: (typeof GROUPS)[number]) => ONLY === undefined || ONLY.includes(group);

/** One run of the load generator, judged: every answer must have status `expect`. */
export function load(scenario: string, expect: number, url: string | string[], list: LoadRequest[], options: Partial<LoadSpec> = {}): Promise<LoadResult> {
  return runLoad({ url, connections: CONNECTIONS, durationSeconds: SECONDS, warmupSeconds: WARMUP, requests: list, ...options }).then((result) =>
    judge(scenario, result, expect),
  );
}

/** Each request of the list once, no warm-up: for single-use requests. */
const eachOnce = (list: LoadRequest[]): Partial<LoadSpec> => ({ durationSeconds: undefined, warmupSeconds: undefined, amount: list.length });

/**
 * How many single-use entries the seed makes for each hash-bound scenario sized by singleUseRun:
 * room for 200 a second over SECONDS (the quiet machine's hash floor is about 120) and the warm-up.
 */
export const SINGLE_USE_ENTRIES = CONNECTIONS + 200 * SECONDS;

/**
 * Single-use requests for about SECONDS: a list sent once has no duration, so its first CONNECTIONS
 * entries are a warm-up (judged like the run) whose rate sizes the measured run over the rest.
 */
async function singleUseRun(scenario: string, expect: number, url: string, list: LoadRequest[], connections = CONNECTIONS): Promise<LoadResult> {
  const warm = list.slice(0, connections);
  const rest = list.slice(connections);
  const warmup = await load(`${scenario} (warm-up)`, expect, url, warm, { ...eachOnce(warm), connections });
  const wanted = Math.max(connections, Math.round(SECONDS * warmup.rps));
  if (wanted > rest.length) log(`${scenario}: ${rest.length} entries left of the ${wanted} that ${SECONDS} s would take; the run is shorter`);
  const amount = Math.min(rest.length, wanted);
  return load(scenario, expect, url, rest.slice(0, amount), { ...eachOnce(rest.slice(0, amount)), connections });
}

/** The run with the median throughput. */
export function median(results: LoadResult[]): LoadResult {
  return [...results].sort((a, b) => a.rps - b.rps)[Math.floor(results.length / 2)]!;
}

async function hashFloor(): Promise<number> {
  const [command, args] = serverCommand(["--import", "tsx", "bench/hash-floor.ts", String(SECONDS), THREAD_POOL]);
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { ...process.env, UV_THREADPOOL_SIZE: THREAD_POOL },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number];
  if (code !== 0) throw new Error(`hash floor exited with ${code}`);
  return (JSON.parse(out.trim().split("\n").pop()!) as { verifiesPerSecond: number }).verifiesPerSecond;
}

export interface PeerFigures {
  session: LoadResult;
  login: LoadResult;
}

/** Better Auth on its own SQLite file: 100 users signed up, then the session check and the login. */
export async function measurePeer(dir: string): Promise<PeerFigures> {
  log("Better Auth: seeding");
  const peer = await startServer(
    "better-auth",
    ["--import", "tsx", "bench/peer/better-auth-server.ts"],
    { BENCH_DB_FILE: join(dir, "peer.db") },
    "/api/auth/ok",
  );
  const users = Array.from({ length: 100 }, (_, i) => `u${i}@bench.example`);
  const cookies: string[] = [];
  for (const email of users) {
    const res = await fetch(`${peer.url}/api/auth/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: BENCH_PASSWORD, name: "Bench" }),
    });
    if (!res.ok) throw new Error(`Better Auth sign-up failed: ${res.status} ${await res.text()}`);
    cookies.push(/better-auth\.session_token=[^;]+/.exec(res.headers.get("set-cookie") ?? "")![0]);
  }
  log("Better Auth: session check");
  const session = await load(
    "Better Auth: session check",
    200,
    peer.url,
    cookies.map((cookie) => ({ method: "GET", path: "/api/auth/get-session", headers: { cookie } })),
  );
  log("Better Auth: login");
  const login = await load(
    "Better Auth: login",
    200,
    peer.url,
    users.map((email) => ({
      method: "POST",
      path: "/api/auth/sign-in/email",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: BENCH_PASSWORD }),
    })),
  );
  await peer.stop();
  return { session, login };
}

export interface LatchFigures {
  store: string;
  floorRuns: LoadResult[];
  sessionRuns: LoadResult[];
  halfRate?: { result: LoadResult; rate: number; floor: LoadResult; loop: EventLoopDelay };
  hashRuns: number[];
  loginRuns: LoadResult[];
  burstOneMember?: LoadResult;
  burstTenMembers?: LoadResult;
  wrong?: LoadResult;
  register?: LoadResult;
  forgot?: LoadResult;
  verify?: LoadResult;
  magic?: LoadResult;
  passkey?: LoadResult;
  /** `POST /auth/session/token`: the session check, then an ES256 signature (contract.md#d28). */
  sessionToken?: LoadResult;
  /** contract.md#d28: the OpenID token endpoint, a code exchange and a refresh, each code or refresh token used once. */
  codeExchange?: LoadResult;
  refresh?: LoadResult;
  /** contract.md#d28: a session token verified with the tenant's JWKS held locally (jose), as a backend at the edge does. */
  edgeVerify?: EdgeVerifyFigures;
  /** contract.md#spec-4-3: change-password by distinct members, each once (one Argon2id verify and one hash). */
  passwordChange?: LoadResult;
  /** decisions.md#importing-members: the first login of imported members, one run per foreign format (its verify, then the Argon2id rehash). */
  importedLogins?: Array<{ label: string; result: LoadResult }>;
  /** decisions.md#federated-sign-in: the callback of flows started and signed in at the upstream just before, each once, in rounds. */
  federatedCallback?: LoadResult[];
  /** PostgreSQL: the session check on one instance and on two behind the generator, medians of 3. */
  instances?: { one: LoadResult[]; two: LoadResult[] };
  spray?: SprayFigures;
  import?: ImportFigures;
}

/** contract.md#d29: `latch import` of IMPORT_MEMBERS lines on the running store, timed from the outside, once per hash format. */
export interface ImportFigures {
  members: number;
  runs: ImportRun[];
}

export interface ImportRun {
  /** The answer's `formats` key: the hash every line of the file carries. */
  format: ImportFormat;
  seconds: number;
  imported: number;
}

/** Issue 32's row: a 50,000-member file, as a tenant leaving another system brings it. */
export const IMPORT_MEMBERS = Number(process.env.BENCH_IMPORT_MEMBERS ?? 50_000);

/**
 * One hash per format, the same on every line (verifying is login's cost, not the import's), from
 * test/fixtures/import/hashes.json: made by other implementations or published vectors.
 */
function importHashes(): { hashes: Record<ImportFormat, string | undefined>; firebaseParams: unknown } {
  const f = JSON.parse(readFileSync(join(ROOT, "test/fixtures/import/hashes.json"), "utf8")) as {
    bcrypt2b: string;
    scrypt: string;
    django: string;
    aspnetSha256: string;
    argon2idPublished: { hash: string };
    firebasePublished: { salt: string; hash: string; params: unknown };
  };
  return {
    hashes: {
      bcrypt: f.bcrypt2b,
      argon2: f.argon2idPublished.hash,
      scrypt: f.scrypt,
      firebaseScrypt: `firebase-scrypt$${f.firebasePublished.salt}$${f.firebasePublished.hash}`,
      pbkdf2Django: f.django,
      pbkdf2AspNet: f.aspnetSha256,
      none: undefined,
    },
    firebaseParams: f.firebasePublished.params,
  };
}

const FLOOR_REQUEST: LoadRequest = { method: "GET", path: "/auth/session", headers: { cookie: "session_id=x" } };

/**
 * Latch's scenarios on one store. The framework floor and the session check are measured three
 * times in alternation and the median of each kept (a single pair is too noisy on a shared 2-core
 * machine); the hash floor and the login likewise.
 */
export async function measureLatch(
  store: string,
  seeded: Seeded,
  latchStore: LatchStore,
  options: { twoInstances: boolean; spray: boolean; upstream?: UpstreamIdp },
): Promise<LatchFigures> {
  const figures: LatchFigures = { store, floorRuns: [], sessionRuns: [], hashRuns: [], loginRuns: [] };
  const latch = await startLatch(latchStore);
  const scenario = (name: string) => `${store}: ${name}`;
  if (runs("session")) {
    const floorServer = await startServer("floor", ["--import", "tsx", "bench/floor-server.ts"], {}, "/auth/session");
    for (let round = 1; round <= 3; round++) {
      log(`${store}: framework floor and session check, round ${round} of 3`);
      figures.floorRuns.push(await load("Floor: bare Fastify route", 200, floorServer.url, [FLOOR_REQUEST]));
      figures.sessionRuns.push(await load(scenario("session check"), 200, latch.url, requests.sessionChecks(seeded)));
    }
    const rate = Math.max(1, Math.floor(median(figures.sessionRuns).rps / 2));
    log(`${store}: session check at half the peak rate, ${rate} req/s`);
    await eventLoopDelay(latch.url); // the histogram restarts at each scrape: this one starts the window
    const result = await load(scenario("session check at half its peak rate"), 200, latch.url, requests.sessionChecks(seeded), { rate });
    const loop = await eventLoopDelay(latch.url);
    // The same paced load on the bare floor server: what this machine and generator add on their own.
    const floor = await load("Floor at the same paced rate", 200, floorServer.url, [FLOOR_REQUEST], { rate });
    figures.halfRate = { result, rate, floor, loop };
    await floorServer.stop();
    log(`${store}: session token`);
    figures.sessionToken = await load(scenario("session token"), 200, latch.url, requests.sessionTokens(seeded));
  }
  if (runs("session") && options.twoInstances) {
    const second = await startLatch(latchStore);
    figures.instances = { one: [], two: [] };
    for (let round = 1; round <= 3; round++) {
      log(`${store}: session check on one instance and on two, round ${round} of 3`);
      figures.instances.one.push(await load(scenario("session check, one instance"), 200, latch.url, requests.sessionChecks(seeded)));
      figures.instances.two.push(await load(scenario("session check, two instances"), 200, [latch.url, second.url], requests.sessionChecks(seeded)));
    }
    await second.stop();
  }
  if (runs("oidc")) await measureOidc(figures, latch, seeded, scenario);
  if (runs("login")) await measureLogins(figures, latch, seeded, scenario);
  if (runs("writes")) await measureWrites(figures, latch, seeded, scenario);
  if (runs("change-password") || runs("imported-login")) await measurePasswordWork(figures, latch, seeded, scenario);
  if (runs("federated") && options.upstream) await measureFederated(figures, latch, seeded, options.upstream, scenario);
  if (runs("import")) figures.import = await measureImport(store, latchStore, seeded.domains[0]!);
  if (options.spray && runs("spray")) figures.spray = await sprayMemory(latch, seeded.domains[0]!, scenario("memory spray"));
  await latch.stop();
  return figures;
}

/** How many authorization codes (and as many refresh tokens) each token endpoint row spends. Codes live 60 s: they are made just before. */
export const OIDC_GRANTS = 1000;

export interface EdgeVerifyFigures {
  verifiesPerSecond: number;
  seconds: number;
}

/** Reads the Set-Cookie lines of an answer into a jar, as a browser would (a cleared cookie leaves it). */
function keepCookies(jar: Map<string, string>, answer: Response): void {
  for (const line of answer.headers.getSetCookie()) {
    const pair = line.split(";")[0]!;
    const eq = pair.indexOf("=");
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    if (value === "" || /max-age=0\b/i.test(line)) jar.delete(name);
    else jar.set(name, value);
  }
}

/**
 * contract.md#d28: one authorization code of the bench's first-party client, through the real flow
 * as a signed-in browser goes: authorize → interaction (standing consent) → resume → the callback.
 */
async function authorizationCode(latch: Running, seeded: Seeded, i: number): Promise<string> {
  const c = seeded.oidcClient;
  const sessions = seeded.sessions.filter((s) => s.domain === c.domain);
  const jar = new Map([["session_id", sessions[i % sessions.length]!.cookie]]);
  const challenge = createHash("sha256").update(requests.BENCH_PKCE_VERIFIER).digest("base64url");
  const query = new URLSearchParams({
    client_id: c.clientId,
    response_type: "code",
    redirect_uri: c.redirectUri,
    scope: "openid email profile offline_access",
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: `s${i}`,
    nonce: `n${i}`,
  });
  let path = `/oauth/authorize?${query.toString()}`;
  for (let hop = 0; hop < 10; hop++) {
    const answer = await fetch(`${latch.url}${path}`, {
      redirect: "manual",
      headers: {
        "x-tenant-domain": c.domain,
        "x-forwarded-for": requests.clientIp(requests.SEQ_BLOCKS.oidc + i),
        cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; "),
      },
    });
    keepCookies(jar, answer);
    const body = await answer.text();
    const location = answer.headers.get("location") ?? /url=(.*)$/i.exec(answer.headers.get("refresh") ?? "")?.[1];
    if (!location) throw new Error(`authorization stopped at ${path.split("?")[0]}: ${answer.status} ${body.slice(0, 200)}`);
    const next = new URL(location, `https://${c.domain}`);
    if (next.href.startsWith(c.redirectUri)) {
      const code = next.searchParams.get("code");
      if (!code) throw new Error(`no code at the callback: ${next.search}`);
      return code;
    }
    path = next.pathname + next.search;
  }
  throw new Error("authorization: too many redirects");
}

/** `count` codes, a few authorizations at a time. */
async function authorizationCodes(latch: Running, seeded: Seeded, count: number): Promise<string[]> {
  const codes: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < count) codes.push(await authorizationCode(latch, seeded, next++));
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return codes;
}

/** Refresh tokens: codes exchanged here, each answer's refresh token kept for the row. */
async function refreshTokens(latch: Running, seeded: Seeded, count: number): Promise<string[]> {
  const exchanges = requests.codeExchanges(seeded.oidcClient, await authorizationCodes(latch, seeded, count));
  const tokens: string[] = [];
  for (const request of exchanges) {
    const answer = await fetch(`${latch.url}${request.path}`, { method: "POST", headers: request.headers, body: request.body });
    const body = (await answer.json()) as { refresh_token?: string };
    if (!body.refresh_token) throw new Error(`code exchange gave no refresh token: ${answer.status} ${JSON.stringify(body)}`);
    tokens.push(body.refresh_token);
  }
  return tokens;
}

/**
 * What a backend pays to verify a session token itself (contract.md#d28) instead of calling
 * `GET /auth/session`: jose's jwtVerify with the tenant's JWKS fetched once and held (createLocalJWKSet),
 * iss, aud, typ and exp checked, for SECONDS in this process, one verify after another.
 */
async function edgeVerify(latch: Running, seeded: Seeded): Promise<EdgeVerifyFigures> {
  const c = seeded.oidcClient;
  const session = seeded.sessions.find((s) => s.domain === c.domain)!;
  const headers = { "x-tenant-domain": c.domain, "x-forwarded-for": requests.clientIp(requests.SEQ_BLOCKS.logins) };
  const issued = await fetch(`${latch.url}/auth/session/token`, { method: "POST", headers: { ...headers, cookie: `session_id=${session.cookie}` } });
  const { token } = (await issued.json()) as { token: string };
  const jwks = createLocalJWKSet((await (await fetch(`${latch.url}/oauth/jwks`, { headers })).json()) as JSONWebKeySet);
  const options = { issuer: `https://${c.domain}`, audience: c.domain, typ: "latch-session+jwt", algorithms: ["ES256"] };
  await jwtVerify(token, jwks, options); // throws if the recipe is wrong
  const started = performance.now();
  const until = started + SECONDS * 1000;
  let count = 0;
  while (performance.now() < until) {
    for (let i = 0; i < 100; i++) await jwtVerify(token, jwks, options);
    count += 100;
  }
  const seconds = (performance.now() - started) / 1000;
  return { verifiesPerSecond: count / seconds, seconds };
}

async function measureOidc(figures: LatchFigures, latch: Running, seeded: Seeded, scenario: (name: string) => string): Promise<void> {
  const store = figures.store;
  log(`${store}: OpenID token endpoint, refresh (${OIDC_GRANTS} refresh tokens made through the flow first)`);
  const refresh = requests.refreshes(seeded.oidcClient, await refreshTokens(latch, seeded, OIDC_GRANTS));
  figures.refresh = await load(scenario("OpenID token endpoint, refresh"), 200, latch.url, refresh, eachOnce(refresh));
  log(`${store}: OpenID token endpoint, code exchange (${OIDC_GRANTS} codes made through the flow first)`);
  const exchanges = requests.codeExchanges(seeded.oidcClient, await authorizationCodes(latch, seeded, OIDC_GRANTS));
  figures.codeExchange = await load(scenario("OpenID token endpoint, code exchange"), 200, latch.url, exchanges, eachOnce(exchanges));
  log(`${store}: session token verified at the edge (jose, local JWKS)`);
  figures.edgeVerify = await edgeVerify(latch, seeded);
}

async function measureLogins(figures: LatchFigures, latch: Running, seeded: Seeded, scenario: (name: string) => string): Promise<void> {
  const store = figures.store;
  for (let round = 1; round <= 3; round++) {
    log(`${store}: hash floor and login, round ${round} of 3`);
    figures.hashRuns.push(await hashFloor());
    figures.loginRuns.push(await load(scenario("password login, distinct members and IPs"), 200, latch.url, requests.logins(seeded)));
  }
  // contract.md#issue-17: a member's own concurrent logins must all succeed (contract.md#d20: a correct password never
  // counts as a failure; a check past the budget of three waits for a place). One member is one
  // client, so one IP: ten IPs for one email within 15 minutes is contract.md#d13's velocity lockout.
  log(`${store}: ten concurrent logins of one member, then of ten members`);
  const all = requests.logins(seeded);
  const burst = { connections: 10, durationSeconds: undefined, warmupSeconds: undefined, amount: 10 };
  figures.burstOneMember = await load(
    scenario("ten concurrent logins of one member"),
    200,
    latch.url,
    Array.from({ length: 10 }, () => all[0]!),
    burst,
  );
  figures.burstTenMembers = await load(scenario("ten concurrent logins of ten members"), 200, latch.url, all.slice(10, 20), burst);
  // Lockouts stay on: each member gets at most two wrong passwords (three lock it, and the answer
  // becomes 429), so the run is sized to about SECONDS of hashing and no warm-up.
  log(`${store}: wrong password`);
  const wrongList = requests.logins(seeded, "Wrong-Password-42");
  const hashes = Math.max(...figures.hashRuns);
  figures.wrong = await load(scenario("password login, wrong password"), 401, latch.url, wrongList, {
    ...eachOnce(wrongList),
    amount: Math.min(2 * wrongList.length, Math.max(CONNECTIONS, Math.round(SECONDS * hashes))),
  });
}

async function measureWrites(figures: LatchFigures, latch: Running, seeded: Seeded, scenario: (name: string) => string): Promise<void> {
  const store = figures.store;
  const domain = seeded.domains[0]!;
  log(`${store}: registration`);
  figures.register = await load(scenario("registration"), 200, latch.url, requests.registrations(domain), { seqStart: requests.SEQ_BLOCKS.registration });
  log(`${store}: forgot-password, unknown emails`);
  figures.forgot = await load(scenario("forgot-password"), 200, latch.url, requests.forgotPasswords(domain), { seqStart: requests.SEQ_BLOCKS.forgot });
  log(`${store}: verify-email`);
  const verify = requests.verifyEmails(seeded);
  if (verify.length > 0)
    figures.verify = await load(scenario("verify email"), 200, latch.url, verify, { ...eachOnce(verify), seqStart: requests.SEQ_BLOCKS.verify });
  log(`${store}: verify-magic-link`);
  const magic = requests.verifyMagicLinks(seeded);
  if (magic.length > 0)
    figures.magic = await load(scenario("verify magic link"), 200, latch.url, magic, { ...eachOnce(magic), seqStart: requests.SEQ_BLOCKS.magic });
  log(`${store}: passkey login`);
  const passkey = requests.passkeyLogins(seeded);
  if (passkey.length > 0)
    figures.passkey = await load(scenario("passkey login"), 200, latch.url, passkey, { ...eachOnce(passkey), seqStart: requests.SEQ_BLOCKS.passkey });
}

/**
 * The hash-bound rows beside the login: change-password (contract.md#spec-4-3) and the first login of
 * imported members (decisions.md#importing-members), each request by a member of its own from the
 * member's own IP, each member once (its password, or its stored hash, changes). Their ratios are to
 * the hash floor, measured here when the login group did not run.
 */
async function measurePasswordWork(figures: LatchFigures, latch: Running, seeded: Seeded, scenario: (name: string) => string): Promise<void> {
  const store = figures.store;
  if (figures.hashRuns.length === 0) {
    log(`${store}: hash floor`);
    figures.hashRuns.push(await hashFloor());
  }
  if (runs("change-password")) {
    log(`${store}: change password`);
    figures.passwordChange = await singleUseRun(scenario("change password"), 200, latch.url, requests.passwordChanges(seeded));
  }
  if (runs("imported-login")) {
    figures.importedLogins = [];
    let offset = 0;
    for (const imported of seeded.importedLogins) {
      log(`${store}: first login with an imported hash, ${imported.label}`);
      const list = requests.importedLogins(imported, offset);
      offset += list.length;
      const name = scenario(`first login, imported ${imported.label}`);
      // As many connections as hashes run at once (the thread pool): a 1,000,000-iteration PBKDF2 verify
      // takes about a second here, and twenty queued ones passed the generator's 10 s timeout.
      const connections = Number(THREAD_POOL);
      const result = await singleUseRun(name, 200, latch.url, list, connections);
      // Each 200 must have replaced its member's foreign hash (the row's point): warm-up included.
      const rehashed = await countRehashed(
        seeded.databaseUrl,
        imported.logins.map((l) => l.email),
      );
      const logins = connections + result.requests;
      judgeOutcome(name, rehashed === logins ? undefined : `${rehashed} members rehashed to Argon2id after ${logins} logins`);
      figures.importedLogins.push({ label: imported.label, result });
    }
  }
}

/**
 * The callback row's sign-ins, made and called back in FEDERATED_ROUNDS rounds of FEDERATED_FLOWS: the
 * upstream keeps codes in oidc-provider's in-memory store, an LRU of 1,000 entries, and each sign-in
 * leaves about six (session, interaction, grant, code...), so a round larger than about 170 finds its
 * first codes evicted (the callback then lands on the error page, `reason=provider_error`).
 */
export const FEDERATED_FLOWS = 150;
export const FEDERATED_ROUNDS = 3;

/**
 * decisions.md#federated-sign-in: one flow as a browser makes it up to the callback: Latch's start (its
 * `latch_fed` cookie kept), the upstream's sign-in page filled in by a new person with a confirmed
 * email; returns the callback request, code and state in its URL, from the start's IP.
 */
async function startedFederatedFlow(latch: Running, seeded: Seeded, upstream: UpstreamIdp, i: number): Promise<LoadRequest> {
  const domain = seeded.domains[0]!;
  const headers = { "x-tenant-domain": domain, "x-forwarded-for": requests.clientIp(requests.SEQ_BLOCKS.federated + i) };
  const start = await fetch(`${latch.url}/auth/federated/${BENCH_CONNECTION}/start`, { redirect: "manual", headers });
  const location = start.headers.get("location");
  if (start.status !== 302 || !location) throw new Error(`federated start answered ${start.status}: ${(await start.text()).slice(0, 200)}`);
  const jar = new Map<string, string>();
  keepCookies(jar, start);
  const back = await upstream.signIn(location, { email: `federated${i}@bench.example`, verified: true, name: "Federated Member" });
  if (!back.searchParams.has("code")) throw new Error(`the upstream sent no code: ${back.search}`);
  return { method: "GET", path: back.pathname + back.search, headers: { ...headers, cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") } };
}

async function measureFederated(
  figures: LatchFigures,
  latch: Running,
  seeded: Seeded,
  upstream: UpstreamIdp,
  scenario: (name: string) => string,
): Promise<void> {
  const store = figures.store;
  const name = scenario("federated callback");
  const calls = upstream.tokenCalls;
  const runs: LoadResult[] = [];
  let next = 0;
  for (let round = 1; round <= FEDERATED_ROUNDS; round++) {
    log(`${store}: federated callback, round ${round} of ${FEDERATED_ROUNDS} (${FEDERATED_FLOWS} sign-ins started and made at the upstream first)`);
    const callbacks: LoadRequest[] = [];
    const last = next + FEDERATED_FLOWS;
    const worker = async () => {
      while (next < last) callbacks.push(await startedFederatedFlow(latch, seeded, upstream, next++));
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    runs.push(await load(name, 302, latch.url, callbacks, eachOnce(callbacks)));
  }
  figures.federatedCallback = runs;
  // A failed callback is a 302 too (to the hosted error page): each sign-in must have made its member's identity.
  const identities = await countFederatedIdentities(seeded.databaseUrl);
  const exchanges = upstream.tokenCalls - calls;
  log(`${store}: ${exchanges} token requests at the upstream, ${identities} identities made`);
  judgeOutcome(name, identities === next ? undefined : `${identities} identities made for ${next} callbacks (${exchanges} token requests at the upstream)`);
}

/** How many of these members' stored hashes are Latch's own now (imported ones start as `foreign:…`). */
async function countRehashed(databaseUrl: string, emails: string[]): Promise<number> {
  const { db, reader } = openDatabase(databaseUrl);
  try {
    let count = 0;
    for (let start = 0; start < emails.length; start += 500) {
      const row = await db
        .selectFrom("members")
        .select((eb) => eb.fn.countAll<string | number>().as("n"))
        .where("email", "in", emails.slice(start, start + 500))
        .where("password_hash", "not like", "foreign:%")
        .executeTakeFirstOrThrow();
      count += Number(row.n);
    }
    return count;
  } finally {
    await db.destroy();
    reader?.close();
  }
}

/** The federated identities in the database, read beside the running server (only the callback row makes them). */
async function countFederatedIdentities(databaseUrl: string): Promise<number> {
  const { db, reader } = openDatabase(databaseUrl);
  try {
    const row = await db
      .selectFrom("federated_identities")
      .select((eb) => eb.fn.countAll<string | number>().as("n"))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  } finally {
    await db.destroy();
    reader?.close();
  }
}

/**
 * For each hash format, writes IMPORT_MEMBERS JSON lines (new emails, that format's hash, a name, a
 * createdAt) and runs `latch import` from dist/ on the store the server uses, while it runs; the time
 * is the process's, start to exit, so it includes Node's start and the migrations check. The files go
 * into one tenant one after the other, so the last meets 6 × IMPORT_MEMBERS members already there.
 */
async function measureImport(store: string, latchStore: LatchStore, domain: string): Promise<ImportFigures> {
  const { hashes, firebaseParams } = importHashes();
  const dir = mkdtempSync(join(tmpdir(), "latch-bench-import-"));
  const params = join(dir, "firebase-params.json");
  writeFileSync(params, JSON.stringify(firebaseParams));
  const runs: ImportRun[] = [];
  try {
    for (const [format, hash] of Object.entries(hashes) as [ImportFormat, string | undefined][]) {
      log(`${store}: import of ${IMPORT_MEMBERS} members, ${format} (latch import)`);
      const file = join(dir, `${format}.jsonl`);
      const lines = Array.from({ length: IMPORT_MEMBERS }, (_, i) =>
        JSON.stringify({
          email: `imported-${format.toLowerCase()}-${i}@bench.example`,
          emailVerified: true,
          name: `Imported ${i}`,
          passwordHash: hash,
          createdAt: "2024-01-01T00:00:00Z",
          externalId: `old|${i}`,
        }),
      );
      writeFileSync(file, `${lines.join("\n")}\n`);
      const args = ["dist/cli/main.js", "import", "--tenant", domain, file, ...(format === "firebaseScrypt" ? ["--firebase-scrypt", params] : [])];
      const started = performance.now();
      const child = spawn(process.execPath, args, {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: latchStore.databaseUrl, SECRETS_KEY: BENCH_SECRETS_KEY, LOG_LEVEL: "warn" },
        stdio: ["ignore", "pipe", "ignore"],
      });
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
      const [code] = (await once(child, "exit")) as [number | null];
      const seconds = (performance.now() - started) / 1000;
      rmSync(file, { force: true });
      if (code !== 0) throw new Error(`latch import exited ${code}`);
      const report = JSON.parse(stdout) as { imported: number; formats: Record<string, number> };
      runs.push({ format, seconds, imported: report.formats[format] ?? 0 });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { members: IMPORT_MEMBERS, runs };
}

export interface MemorySample {
  seconds: number;
  rssMiB: number;
  heapMiB: number;
}

export interface SprayFigures {
  result: LoadResult;
  samples: MemorySample[];
}

/**
 * contract.md#issue-17: forgot-password and request-magic-link for a new random email and a new client IP
 * each, for SPRAY_SECONDS flat out, while the server's RSS (/proc VmRSS) and used heap
 * (nodejs_heap_size_used_bytes from /metrics) are sampled every few seconds.
 */
async function sprayMemory(latch: Running, domain: string, scenario: string): Promise<SprayFigures> {
  log(`spray of forgot-password and magic-link requests, ${SPRAY_SECONDS} s`);
  const samples: MemorySample[] = [];
  const startedAt = performance.now();
  const sample = async () => {
    const heap = (await scrapeMetrics(latch.url)).get("nodejs_heap_size_used_bytes") ?? NaN;
    const taken = { seconds: (performance.now() - startedAt) / 1000, rssMiB: latch.rssMiB(), heapMiB: heap / 2 ** 20 };
    samples.push(taken);
    log(`memory at ${taken.seconds.toFixed(0)} s: RSS ${taken.rssMiB.toFixed(0)} MiB, heap used ${taken.heapMiB.toFixed(0)} MiB`);
  };
  await sample();
  const every = Math.min(3, Math.max(1, SPRAY_SECONDS / 20)) * 1000;
  let pending = Promise.resolve();
  const timer = setInterval(() => {
    pending = pending.then(sample).catch((error: unknown) => log(`memory sample failed: ${String(error)}`));
  }, every);
  try {
    const result = await load(scenario, 200, latch.url, requests.spray(domain), {
      durationSeconds: SPRAY_SECONDS,
      warmupSeconds: undefined,
      seqStart: requests.SEQ_BLOCKS.spray,
    });
    return { result, samples };
  } finally {
    clearInterval(timer);
    await pending;
    await sample();
  }
}
