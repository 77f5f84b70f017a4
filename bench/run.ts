/**
 * `npm run bench [-- --store postgres]`: drives running servers over real HTTP from a separate
 * process (bench/load.ts) and prints Latch's scenarios as ratios to their floors (a bare Fastify
 * cookie route, raw Argon2id verifies) and to Better Auth on the same machine, SQLite and hash
 * cost; logins as members make them (rate limits on, one IP per client, bursts of ten); the
 * event-loop delay beside the session check's tail; memory over a spray of email requests; growth
 * to 1M members and 1,000 tenants; with --store postgres the same Latch scenarios on PostgreSQL
 * and Redis, one instance and two. Every figure is printed against its target and goes into
 * docs/performance.md between the bench markers. Numbers are measured here, never asserted in tests.
 *
 * Every answer is checked against its scenario's expected status: any other, or any error or
 * timeout, is listed and the run exits 1 after writing the report.
 *
 * BENCH_SECONDS (default 10) sets each run's length, BENCH_CONNECTIONS (default 20) the load,
 * BENCH_SPRAY_SECONDS (default 60) the memory spray, BENCH_IMPORT_MEMBERS (default 50,000) the
 * lines of each `latch import` file (one per hash format); BENCH_ONLY=<groups> (session, peer, login,
 * writes, import, spray, growth, postgres, oidc, change-password, imported-login, federated) runs only some, for development.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, cpus, tmpdir, totalmem, type } from "node:os";
import { join } from "node:path";
import type { LoadResult } from "./load-types.js";
import { createBenchStore } from "./postgres.js";
import {
  percent,
  ratio,
  renderComparison,
  renderRows,
  renderTargets,
  renderUnexpected,
  unexpectedAnswers,
  writeReport,
  type Row,
  type Target,
} from "./report.js";
import { logins, sessionChecks } from "./requests.js";
import {
  CONNECTIONS,
  load,
  measureLatch,
  measurePeer,
  median,
  OIDC_GRANTS,
  ONLY,
  FEDERATED_FLOWS,
  FEDERATED_ROUNDS,
  runs,
  SECONDS,
  SINGLE_USE_ENTRIES,
  SPRAY_SECONDS,
  WARMUP,
  type ImportFigures,
  type LatchFigures,
  type PeerFigures,
  type SprayFigures,
} from "./scenarios.js";
import { startUpstreamIdp } from "../test/support/upstream-idp.js";
import { BENCH_CONNECTION, seedLatch, tenantDomain } from "./seed.js";
import { cleanups, log, pinServers, runCleanups, startLatch, startWebhookSink, THREAD_POOL, type EventLoopDelay } from "./servers.js";

/**
 * --store sqlite (default): SQLite only. --store postgres: the SQLite scenarios and then the same
 * ones on PostgreSQL in the same run, so that PostgreSQL's figures are ratios to SQLite's measured
 * minutes apart on the same machine, not to an older run.
 */
function parseStore(argv: string[]): "sqlite" | "postgres" {
  const at = argv.indexOf("--store");
  const value = at >= 0 ? argv[at + 1] : "sqlite";
  if (value !== "sqlite" && value !== "postgres") throw new Error("--store must be sqlite or postgres");
  return value;
}

const STORE = parseStore(process.argv.slice(2));

interface Growth {
  label: string;
  session: LoadResult;
  login: LoadResult;
}

async function measureGrowth(dir: (name: string) => string, sink: string, label: string, tenants: number, membersPerTenant: number): Promise<Growth> {
  log(`Latch ${label}: seeding`);
  const seeded = await seedLatch({ dataDir: dir(label.replace(/\W+/g, "-")), tenants, membersPerTenant, sessions: 1000, webhookUrl: sink });
  const latch = await startLatch({ databaseUrl: seeded.databaseUrl });
  const session = await load(`Session check, ${label}`, 200, latch.url, sessionChecks(seeded));
  const login = await load(`Password login, ${label}`, 200, latch.url, logins(seeded).slice(0, 1000));
  await latch.stop();
  return { label, session, login };
}

/** The event-loop delay over a paced run (its warm-up included), as scraped before and after it. */
function loopNote(loop: EventLoopDelay): string {
  return `event-loop delay p50 ${loop.p50.toFixed(2)} ms, p99 ${loop.p99.toFixed(2)} ms, max ${loop.max.toFixed(2)} ms (latch_event_loop_delay_seconds)`;
}
const mib = (n: number) => `${n.toFixed(0)} MiB`;

/** Start, peak and end of RSS and heap, and whether the last third's peak stays within 10 % of the first third's. */
function memorySummary(spray: SprayFigures): { note: string; flat: boolean; measured: string } {
  const { samples } = spray;
  const span = samples.at(-1)!.seconds;
  const first = samples.filter((s) => s.seconds <= span / 3);
  const last = samples.filter((s) => s.seconds >= (2 * span) / 3);
  const peak = (list: typeof samples, key: "rssMiB" | "heapMiB") => Math.max(...list.map((s) => s[key]));
  const growth = (key: "rssMiB" | "heapMiB") => peak(last, key) / peak(first, key);
  const flat = growth("rssMiB") <= 1.1 && growth("heapMiB") <= 1.1;
  const line = (key: "rssMiB" | "heapMiB", name: string) => `${name} ${mib(samples[0]![key])} → peak ${mib(peak(samples, key))} → ${mib(samples.at(-1)![key])}`;
  return {
    note: `${line("rssMiB", "RSS")}; ${line("heapMiB", "heap used")}; ${samples.length} samples over ${span.toFixed(0)} s`,
    flat,
    measured: `last third's peak / first third's: RSS ${growth("rssMiB").toFixed(2)}, heap ${growth("heapMiB").toFixed(2)}`,
  };
}

/** contract.md#d29: one row per hash format, members/s from the `latch import` process's start to its exit. */
function importRows(figures: ImportFigures, store?: string): Row[] {
  return figures.runs.map((run) => ({
    scenario: `${store ? `${store}: ` : ""}Import of ${figures.members.toLocaleString("en")} members, ${run.format === "none" ? "no password" : `${run.format} hashes`} (\`latch import\`, batches of 1,000)`,
    value: `${run.seconds.toFixed(1)} s, ${Math.round(run.imported / run.seconds).toLocaleString("en")} members/s`,
    note: run.imported === figures.members ? "every line imported" : `only ${run.imported} imported`,
  }));
}

function latchRows(f: LatchFigures, peer: PeerFigures | undefined): Row[] {
  const rows: Row[] = [];
  const framework = f.floorRuns.length > 0 ? median(f.floorRuns) : undefined;
  const session = f.sessionRuns.length > 0 ? median(f.sessionRuns) : undefined;
  const hashes = f.hashRuns.length > 0 ? [...f.hashRuns].sort((a, b) => a - b)[Math.floor(f.hashRuns.length / 2)]! : 0;
  const login = f.loginRuns.length > 0 ? median(f.loginRuns) : undefined;
  const of3 = (list: LoadResult[]) => `median of 3: ${list.map((r) => r.rps.toFixed(0)).join(", ")}`;
  if (framework && session) {
    rows.push({ scenario: "Floor: bare Fastify route reading the cookie", result: framework, note: of3(f.floorRuns) });
    rows.push({
      scenario: "Session check (`GET /auth/session`)",
      result: session,
      floor: percent(session.rps, framework.rps),
      peer: peer && ratio(session.rps, peer.session.rps),
      note: of3(f.sessionRuns),
    });
  }
  if (f.halfRate) {
    const { result, rate, floor, loop } = f.halfRate;
    rows.push({
      scenario: "Session check at half its peak rate",
      result,
      note: `evenly paced at ${rate} req/s, latency from each request's scheduled time; ${loopNote(loop)}`,
    });
    rows.push({ scenario: "Floor at the same paced rate", result: floor, note: "the machine's and the generator's own share of that latency" });
  }
  if (f.sessionToken)
    rows.push({
      scenario: "Session token (`POST /auth/session/token`)",
      result: f.sessionToken,
      floor: framework && percent(f.sessionToken.rps, framework.rps),
      note: session && `${ratio(f.sessionToken.rps, session.rps)} session check: the same check, the key read and one ES256 signature`,
    });
  if (f.codeExchange)
    rows.push({
      scenario: "OpenID token endpoint, code exchange (`POST /oauth/token`, `authorization_code`)",
      result: f.codeExchange,
      floor: framework && percent(f.codeExchange.rps, framework.rps),
      note: `${OIDC_GRANTS} codes made through the flow just before, each exchanged once: client secret, PKCE, ID token and access token (ES256), a refresh token stored`,
    });
  if (f.refresh)
    rows.push({
      scenario: "OpenID token endpoint, refresh (`POST /oauth/token`, `refresh_token`)",
      result: f.refresh,
      floor: framework && percent(f.refresh.rps, framework.rps),
      note: `${OIDC_GRANTS} refresh tokens, each used once: rotation (the old one consumed, a new one stored), a new ID token and access token`,
    });
  if (f.edgeVerify)
    rows.push({
      scenario: "Session token verified at the edge (jose `jwtVerify`, the tenant's JWKS held locally)",
      value: `${f.edgeVerify.verifiesPerSecond.toFixed(0)} verifies/s`,
      note:
        `one core of the bench's own process, ${f.edgeVerify.seconds.toFixed(0)} s, no request to Latch: what a backend pays instead of a round trip to \`GET /auth/session\`` +
        (session ? `; ${ratio(f.edgeVerify.verifiesPerSecond, session.rps)} the session check's requests/s` : ""),
    });
  if (f.hashRuns.length > 0)
    rows.push({
      scenario: "Floor: Argon2id verify (19456 KiB, t=2, p=1), raw",
      value: `${hashes.toFixed(1)} verifies/s`,
      note: `${f.hashRuns.length === 3 ? "median of 3" : "one run"}: ${f.hashRuns.map((h) => h.toFixed(1)).join(", ")}`,
    });
  if (login) {
    rows.push({
      scenario: "Password login, distinct members, one IP each",
      result: login,
      floor: percent(login.rps, hashes),
      peer: peer && ratio(login.rps, peer.login.rps),
      note: `median of 3: ${f.loginRuns.map((r) => r.rps.toFixed(1)).join(", ")}`,
    });
  }
  const burstNote = (r?: LoadResult) => r && `${r.statuses["200"] ?? 0} of 10 answered 200; p99 is the slowest's wait`;
  if (f.burstOneMember) rows.push({ scenario: "Ten concurrent logins of one member (one IP)", result: f.burstOneMember, note: burstNote(f.burstOneMember) });
  if (f.burstTenMembers)
    rows.push({ scenario: "Ten concurrent logins of ten members (an IP each)", result: f.burstTenMembers, note: burstNote(f.burstTenMembers) });
  if (f.wrong)
    rows.push({
      scenario: "Password login, wrong password",
      result: f.wrong,
      floor: percent(f.wrong.rps, hashes),
      note: "401 expected; at most two per member (a third locks it)",
    });
  if (f.passwordChange)
    rows.push({
      scenario: "Change password (`POST /auth/change-password`), distinct members, one IP each",
      result: f.passwordChange,
      floor: percent(f.passwordChange.rps, hashes / 2),
      note: "vs floor is against half the hash floor: one Argon2id verify (the current password) and one hash (the new); each member once, with its own session",
    });
  for (const imported of f.importedLogins ?? [])
    rows.push({
      scenario: `First login of an imported member, ${imported.label}`,
      result: imported.result,
      floor: percent(imported.result.rps, hashes),
      note: `the foreign hash verified, then rehashed to Argon2id in the login's transaction; each member once, one IP each; ${THREAD_POOL} connections, as many as hashes run at once${login ? `; ${ratio(imported.result.rps, login.rps)} password login` : ""}`,
    });
  if (f.register)
    rows.push({
      scenario: "Registration with password",
      result: f.register,
      floor: percent(f.register.rps, hashes),
      note: "one Argon2id hash each; a new email and IP each",
    });
  const vsFramework = (r: LoadResult) => (framework ? percent(r.rps, framework.rps) : undefined);
  if (f.forgot)
    rows.push({
      scenario: "Forgot-password, unknown emails",
      result: f.forgot,
      floor: vsFramework(f.forgot),
      note: "a new email and IP each: the limits are counted, never reached",
    });
  if (f.verify) rows.push({ scenario: "Verify email (pre-issued tokens, each used once)", result: f.verify, floor: vsFramework(f.verify) });
  if (f.magic) rows.push({ scenario: "Verify magic link (pre-issued tokens, each used once)", result: f.magic, floor: vsFramework(f.magic) });
  if (f.passkey)
    rows.push({
      scenario: "Passkey login (pre-signed answers, each challenge used once)",
      result: f.passkey,
      floor: vsFramework(f.passkey),
      note: login && `${ratio(f.passkey.rps, login.rps)} password login: no Argon2, one ECDSA verify`,
    });
  const federated = f.federatedCallback && median(f.federatedCallback);
  if (federated)
    rows.push({
      scenario: "Federated sign-in callback (`GET /auth/federated/{id}/callback`), new members",
      result: federated,
      expect: 302,
      floor: vsFramework(federated),
      note:
        `302 expected, and a member's identity made by each; median of ${FEDERATED_ROUNDS} rounds (${f.federatedCallback!.map((r) => r.rps.toFixed(0)).join(", ")}) of ${FEDERATED_FLOWS} flows started and signed in at the upstream just before, each called back once ` +
        "(the upstream's in-memory store keeps about 170 sign-ins' codes): the code exchanged at the upstream (oidc-provider in the bench's own process, on the same cores), the ID token checked (RS256), a member created, a session issued",
    });
  if (f.import) rows.push(...importRows(f.import));
  if (f.spray)
    rows.push({ scenario: `Spray of forgot-password and magic-link requests, ${SPRAY_SECONDS} s`, result: f.spray.result, note: memorySummary(f.spray).note });
  return rows;
}

function comparisonPairs(sqlite: LatchFigures, pg: LatchFigures) {
  const pick = (f: LatchFigures) => ({
    session: f.sessionRuns.length > 0 ? median(f.sessionRuns) : undefined,
    half: f.halfRate?.result,
    login: f.loginRuns.length > 0 ? median(f.loginRuns) : undefined,
    burstOne: f.burstOneMember,
    burstTen: f.burstTenMembers,
    wrong: f.wrong,
    register: f.register,
    forgot: f.forgot,
    verify: f.verify,
    magic: f.magic,
    passkey: f.passkey,
    sessionToken: f.sessionToken,
    codeExchange: f.codeExchange,
    refresh: f.refresh,
    passwordChange: f.passwordChange,
    federated: f.federatedCallback && median(f.federatedCallback),
  });
  const s = pick(sqlite);
  const p = pick(pg);
  const loop = pg.halfRate && `PostgreSQL ${loopNote(pg.halfRate.loop)}`;
  const pairs = [
    { scenario: "Session check (median of 3)", sqlite: s.session, postgres: p.session },
    { scenario: "Session check at half its peak rate (each store's own peak)", sqlite: s.half, postgres: p.half, note: loop },
    { scenario: "Session token", sqlite: s.sessionToken, postgres: p.sessionToken },
    { scenario: "OpenID token endpoint, code exchange", sqlite: s.codeExchange, postgres: p.codeExchange },
    { scenario: "OpenID token endpoint, refresh", sqlite: s.refresh, postgres: p.refresh },
    { scenario: "Password login, distinct members, one IP each (median of 3)", sqlite: s.login, postgres: p.login },
    { scenario: "Ten concurrent logins of one member", sqlite: s.burstOne, postgres: p.burstOne },
    { scenario: "Ten concurrent logins of ten members", sqlite: s.burstTen, postgres: p.burstTen },
    { scenario: "Password login, wrong password", sqlite: s.wrong, postgres: p.wrong },
    { scenario: "Registration with password", sqlite: s.register, postgres: p.register },
    { scenario: "Forgot-password, unknown emails", sqlite: s.forgot, postgres: p.forgot },
    { scenario: "Verify email", sqlite: s.verify, postgres: p.verify },
    { scenario: "Verify magic link", sqlite: s.magic, postgres: p.magic },
    { scenario: "Passkey login", sqlite: s.passkey, postgres: p.passkey },
    { scenario: "Change password", sqlite: s.passwordChange, postgres: p.passwordChange },
    { scenario: "Federated sign-in callback, new members", sqlite: s.federated, postgres: p.federated },
    ...(sqlite.importedLogins ?? []).map((imported) => ({
      scenario: `First login of an imported member, ${imported.label}`,
      sqlite: imported.result,
      postgres: pg.importedLogins?.find((other) => other.label === imported.label)?.result,
    })),
  ];
  if (pg.instances) {
    const one = median(pg.instances.one);
    const two = median(pg.instances.two);
    pairs.push({
      scenario: "Session check, one instance (alternating with two)",
      sqlite: undefined,
      postgres: one,
      note: `median of 3: ${pg.instances.one.map((r) => r.rps.toFixed(0)).join(", ")}`,
    });
    pairs.push({
      scenario: "Session check, two instances on one database",
      sqlite: undefined,
      postgres: two,
      note: `${ratio(two.rps, one.rps)} one instance; median of 3: ${pg.instances.two.map((r) => r.rps.toFixed(0)).join(", ")}; one generator, connections alternating over both`,
    });
  }
  return pairs;
}

function targetsOf(sqlite: LatchFigures | undefined, pg: LatchFigures | undefined, peer: PeerFigures | undefined, growth: Growth[]): Target[] {
  const targets: Target[] = [];
  const framework = sqlite && sqlite.floorRuns.length > 0 ? median(sqlite.floorRuns) : undefined;
  const session = sqlite && sqlite.sessionRuns.length > 0 ? median(sqlite.sessionRuns) : undefined;
  const both = <T>(a: T | undefined, b: T | undefined): [T, T] | undefined => (a !== undefined && b !== undefined ? [a, b] : undefined);
  const measure = (
    target: string,
    values: [number, number] | undefined,
    show: (a: number, b: number) => string,
    met: (a: number, b: number) => boolean,
    beside?: string,
  ): Target => (values ? { target, measured: show(...values), met: met(...values), beside } : { target });
  targets.push(measure("Session check ≥ 60 % of the framework floor", both(session?.rps, framework?.rps), percent, (a, b) => a >= 0.6 * b));
  targets.push(measure("Session check ≥ 10× Better Auth", both(session && session.rps, peer?.session.rps), ratio, (a, b) => a >= 10 * b));
  const half = sqlite?.halfRate;
  targets.push(
    half
      ? {
          target: "Session-check p99 ≤ 5 ms at half its peak rate",
          measured: `${half.result.p99.toFixed(2)} ms`,
          met: half.result.p99 <= 5,
          beside: `event-loop delay p99 ${half.loop.p99.toFixed(2)} ms, max ${half.loop.max.toFixed(2)} ms; the floor's p99 at the same rate ${half.floor.p99.toFixed(2)} ms`,
        }
      : { target: "Session-check p99 ≤ 5 ms at half its peak rate" },
  );
  const hashes = sqlite && sqlite.hashRuns.length > 0 ? ([...sqlite.hashRuns].sort((a, b) => a - b)[1] ?? sqlite.hashRuns[0]) : undefined;
  const login = sqlite && sqlite.loginRuns.length > 0 ? median(sqlite.loginRuns).rps : undefined;
  targets.push(
    measure("Password login (rate limits on, distinct members and IPs) ≥ 90 % of the hash floor", both(login, hashes), percent, (a, b) => a >= 0.9 * b),
  );
  targets.push(measure("Password login ≥ 1.1× Better Auth at equal hash cost", both(login, peer?.login.rps), ratio, (a, b) => a >= 1.1 * b));
  for (const [label, burst] of [
    ["one member", sqlite?.burstOneMember],
    ["ten members", sqlite?.burstTenMembers],
  ] as const) {
    targets.push(
      burst
        ? { target: `Ten concurrent logins of ${label}: all 200`, measured: `${burst.statuses["200"] ?? 0} of 10`, met: (burst.statuses["200"] ?? 0) === 10 }
        : { target: `Ten concurrent logins of ${label}: all 200` },
    );
  }
  for (const g of growth) {
    targets.push(
      measure(
        `Large/small ≥ 0.8, session check, ${g.label}`,
        both(g.session.rps, session?.rps),
        (a, b) => (a / b).toFixed(2),
        (a, b) => a >= 0.8 * b,
      ),
    );
    targets.push(
      measure(
        `Large/small ≥ 0.8, password login, ${g.label}`,
        both(g.login.rps, login),
        (a, b) => (a / b).toFixed(2),
        (a, b) => a >= 0.8 * b,
      ),
    );
  }
  const memory = sqlite?.spray && memorySummary(sqlite.spray);
  targets.push(
    memory
      ? {
          target: `Memory flat over a ${SPRAY_SECONDS} s spray (last third's peak within 10 % of the first third's)`,
          measured: memory.measured,
          met: memory.flat,
        }
      : { target: "Memory flat over the spray" },
  );
  if (STORE === "postgres") {
    const pgSession = pg && pg.sessionRuns.length > 0 ? median(pg.sessionRuns).rps : undefined;
    targets.push(measure("Session check on PostgreSQL ≥ 50 % of SQLite, one instance", both(pgSession, session?.rps), percent, (a, b) => a >= 0.5 * b));
    const instances = pg?.instances;
    targets.push(
      measure(
        "Two instances on one PostgreSQL database faster than one (session check)",
        instances && [median(instances.two).rps, median(instances.one).rps],
        ratio,
        (a, b) => a > b,
      ),
    );
  }
  return targets;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "latch-bench-"));
  cleanups.push(() => rmSync(work, { recursive: true, force: true }));
  const sink = await startWebhookSink();
  const dir = (name: string) => mkdtempSync(join(work, `${name}-`));
  log(`${SECONDS} s per run, ${CONNECTIONS} connections, UV_THREADPOOL_SIZE=${THREAD_POOL}, store ${STORE}${ONLY ? `, only ${ONLY.join(",")}` : ""}`);
  const tokens = runs("writes") ? 20_000 : 0;
  const plan = {
    tenants: 1,
    membersPerTenant: 1000,
    sessions: 1000,
    verifyTokens: tokens,
    magicTokens: tokens,
    passkeyLogins: tokens,
    passwordChanges: runs("change-password") ? SINGLE_USE_ENTRIES : 0,
    importedPerFormat: runs("imported-login") ? SINGLE_USE_ENTRIES : 0,
    webhookUrl: sink,
  };
  // decisions.md#federated-sign-in: the upstream is the dev identity provider (panva's oidc-provider) in
  // this process, whose event loop is idle while the load generator's process runs.
  const upstream = runs("federated")
    ? await startUpstreamIdp({
        redirectUri: `https://${tenantDomain(0)}/auth/federated/${BENCH_CONNECTION}/callback`,
        tokenEndpointAuthMethod: "client_secret_basic",
      })
    : undefined;
  if (upstream) cleanups.push(() => upstream.close());
  const federation = upstream && { upstream: { issuer: upstream.issuer, clientId: upstream.client.client_id, clientSecret: upstream.client.client_secret } };

  const pinning = pinServers(true);
  log(pinning ? "BENCH_PIN=on: servers on core 0, this process and the load generators on the others" : "servers and load generators share every core");
  const peer = runs("peer") ? await measurePeer(dir("better-auth")) : undefined;
  log("Latch on SQLite: seeding");
  const base = await seedLatch({ ...plan, ...federation, dataDir: dir("base") });
  const sqlite = await measureLatch("SQLite", base, { databaseUrl: base.databaseUrl }, { twoInstances: false, spray: true, upstream });
  const growth: Growth[] = [];
  const memoryRows: Row[] = [];
  if (runs("growth")) {
    growth.push(await measureGrowth(dir, sink, "1,000,000 members", 1, 1_000_000));
    growth.push(await measureGrowth(dir, sink, "1,000 tenants", 1000, 1));
    log("Latch: 100,000 live sessions");
    const many = await seedLatch({ dataDir: dir("sessions"), tenants: 1, membersPerTenant: 1000, sessions: 100_000, webhookUrl: sink });
    const latch = await startLatch({ databaseUrl: many.databaseUrl });
    const manySessions = await load("Session check over 100,000 live sessions", 200, latch.url, sessionChecks(many));
    memoryRows.push({ scenario: "Session check over 100,000 live sessions", result: manySessions, note: `peak RSS ${latch.peakRssMiB().toFixed(0)} MiB` });
    await latch.stop();
  }
  let pg: LatchFigures | undefined;
  if (STORE === "postgres" && runs("postgres")) {
    // PostgreSQL's own processes need a core as much as Latch does: nothing is pinned for these runs.
    pinServers(false);
    const store = await createBenchStore();
    log("Latch on PostgreSQL: seeding");
    const seeded = await seedLatch({ ...plan, ...federation, databaseUrl: store.databaseUrl });
    pg = await measureLatch("PostgreSQL", seeded, store, { twoInstances: true, spray: false, upstream });
  }

  const rows: Row[] = [...latchRows(sqlite, peer)];
  if (peer)
    rows.push(
      { scenario: "Better Auth: session check (`get-session`)", result: peer.session },
      { scenario: "Better Auth: password login (`sign-in/email`)", result: peer.login },
    );
  const session = sqlite.sessionRuns.length > 0 ? median(sqlite.sessionRuns) : undefined;
  const login = sqlite.loginRuns.length > 0 ? median(sqlite.loginRuns) : undefined;
  for (const g of growth) {
    rows.push({ scenario: `Session check, ${g.label}`, result: g.session, note: session && `large/small ${ratio(g.session.rps, session.rps)}` });
    rows.push({ scenario: `Password login, ${g.label}`, result: g.login, note: login && `large/small ${ratio(g.login.rps, login.rps)}` });
  }
  rows.push(...memoryRows);
  if (pg?.import) rows.push(...importRows(pg.import, "PostgreSQL"));

  const unexpected = unexpectedAnswers();
  const sections = [renderRows(rows)];
  if (pg) sections.push(`PostgreSQL (one database, Redis counters) beside SQLite, in the same run:\n\n${renderComparison(comparisonPairs(sqlite, pg))}`);
  sections.push(renderTargets(targetsOf(sqlite, pg, peer, growth)), renderUnexpected(unexpected));
  const body = sections.join("\n\n");
  process.stdout.write(`\n${body}\n`);
  const heading =
    `Run of ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC: ${availableParallelism()} cores (${cpus()[0]?.model ?? "unknown CPU"}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ${type()}, Node ${process.version}; ` +
    `${SECONDS} s per run after ${WARMUP} s of warm-up, ${CONNECTIONS} connections, ${pinning ? `servers (Latch, floors, Better Auth) on core 0 and the load generator on the other${pg ? ", everything on every core for the PostgreSQL runs" : ""}` : "load generator on the same cores"}, UV_THREADPOOL_SIZE=${THREAD_POOL}; ` +
    `Latch with rate limits on behind TRUST_PROXY=127.0.0.1 (an X-Forwarded-For IP per simulated client) and METRICS_TOKEN set; SQLite for both${pg ? "; PostgreSQL with Redis counters for Latch's second table" : ""}` +
    `${ONLY ? `; only ${ONLY.join(", ")} (BENCH_ONLY)` : ""}.`;
  writeReport(heading, body);
  if (unexpected.length > 0) {
    process.stderr.write(`\n[bench] ${unexpected.length} run(s) had answers other than expected:\n${unexpected.map((u) => `  ${u}`).join("\n")}\n`);
    process.exitCode = 1;
  }
}

try {
  await main();
} finally {
  await runCleanups();
}
