/**
 * Self-check for the benchmark building blocks: load.ts (via runLoad: statuses, templates, several
 * URLs, pacing), floor-server.ts and hash-floor.ts. Prints their numbers; exits non-zero on any
 * failure. Takes about 30 s.
 *
 *   npm run bench:check   (this, then peer/check.ts; the last step of npm test)
 *
 * It runs in CI on a shared, busy machine, so it asserts what the machinery does, never how fast:
 * every status and count exact, templates filled in, no paced request sent ahead of its slot,
 * latencies that a correct clock and unit can give. Speed (requests/s, latency, how late the paced
 * sends were, the generator's CPU per request) is printed, not judged: there it would measure the
 * neighbours. The benchmark itself judges speed, in docs/performance.md.
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { type AddressInfo, createServer as createTcpServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { type LoadResult, type LoadSpec, runLoad } from "./load-client.js";

const repoRoot = fileURLToPath(new URL("../", import.meta.url));
const benchFile = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
}

// A guard against a hang (CI would wait for it), not a measure: the check takes well under a minute.
setTimeout(() => {
  console.error("check-blocks: still running after 5 minutes, giving up");
  process.exit(1);
}, 300_000).unref();

/**
 * What a closed-loop run's latencies are on any machine, however busy: positive, p50 <= p99, and no
 * more than the run allows. Each connection carries one request at a time, so their latencies add up
 * to at most connections x the run's length; at least half the samples are >= p50, so p50 is at most
 * twice that sum over the count. Catches a wrong unit or clock, not a slow machine.
 */
function assertClosedLoopLatencies(label: string, result: LoadResult, connections: number): void {
  assert(result.p50 > 0 && result.p50 <= result.p99, `${label}: p50 ${result.p50} ms, p99 ${result.p99} ms`);
  const ceiling = (2 * connections * result.seconds * 1000) / result.requests + 0.01;
  assert(
    result.p50 <= ceiling,
    `${label}: p50 ${result.p50} ms is more than ${ceiling.toFixed(2)} ms, twice the mean latency ${connections} connections allow over ${result.requests} responses in ${result.seconds.toFixed(3)} s`,
  );
}

/** Latencies kept to fractions of a millisecond: autocannon's histogram would say 0 or a whole number. */
function assertSubMillisecond(label: string, result: LoadResult): void {
  assert(!Number.isInteger(result.p50) || !Number.isInteger(result.p99), `${label}: p50 ${result.p50} and p99 ${result.p99} look like whole ms`);
}

/** load.ts's account of a paced run on stderr: its CPU time, and its schedule on the monotonic clock. */
function pacedReport(stderr: string): { cpuLine: string; slot0Ns: bigint; intervalMs: number; slots: number } {
  const cpu = /paced run used (\d+) ms CPU .*? for (\d+) requests, ([\d.]+) µs each/.exec(stderr);
  const schedule = /paced schedule: slot 0 at monotonic (\d+) ns, one slot every ([\d.]+) ms, (\d+) slots/.exec(stderr);
  assert(cpu, `load.ts printed no CPU line: ${stderr.trim()}`);
  assert(schedule, `load.ts printed no schedule: ${stderr.trim()}`);
  return {
    cpuLine: `generator CPU ${cpu[1]} ms for ${cpu[2]} requests (${cpu[3]} µs each)`,
    slot0Ns: BigInt(schedule[1]!),
    intervalMs: Number(schedule[2]),
    slots: Number(schedule[3]),
  };
}

/** load.ts's other stderr lines (e.g. that it fell behind), indented under the result. */
function printLoadNotes(stderr: string): void {
  for (const line of stderr.split("\n"))
    if (line !== "" && !line.includes("paced run used") && !line.includes("paced schedule:")) console.log(`  load.ts: ${line.replace(/^load\.ts: /, "")}`);
}

/** runLoad, plus load.ts's stderr: a paced run reports its own CPU time there. */
async function runLoadWithStderr(spec: LoadSpec): Promise<{ result: LoadResult; stderr: string }> {
  const dir = await mkdtemp(join(tmpdir(), "latch-check-"));
  try {
    const specFile = join(dir, "spec.json");
    await writeFile(specFile, JSON.stringify(spec));
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", "tsx", benchFile("load.ts"), specFile], { cwd: repoRoot });
    return { result: JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as LoadResult, stderr };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// 1. The framework floor under load, with a warm-up.
{
  const child = spawn(process.execPath, ["--import", "tsx", benchFile("floor-server.ts")], {
    cwd: repoRoot,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit") as Promise<[number | null, NodeJS.Signals | null]>;
  try {
    const [line] = (await Promise.race([
      once(createInterface({ input: child.stdout }), "line"),
      exited.then(([code]) => Promise.reject(new Error(`floor-server exited early with ${code}`))),
    ])) as [string];
    const url = /^listening (http:\/\/\S+)$/.exec(line)?.[1];
    assert(url, `unexpected first line from floor-server: ${line}`);

    assert((await fetch(`${url}/auth/session`)).status === 401, "no cookie must be 401");
    const ok = await fetch(`${url}/auth/session`, { headers: { cookie: "session_id=x" } });
    assert(ok.status === 200 && (await ok.text()) === '{"authorized":true}', "cookie must be 200 {authorized:true}");

    const result = await runLoad({
      url,
      connections: 10,
      durationSeconds: 3,
      warmupSeconds: 1,
      requests: [{ method: "GET", path: "/auth/session", headers: { cookie: "session_id=x" } }],
    });
    console.log("floor-server, 10 connections, 3 s:", JSON.stringify(result));
    assert(result.non2xx === 0, `non2xx ${result.non2xx}`);
    assert(result.errors === 0, `errors ${result.errors}`);
    assert(result.requests > 0 && result.rps > 0, `requests ${result.requests}, rps ${result.rps}: the floor must answer`);
    assert(
      result.statuses["200"] === result.requests && Object.keys(result.statuses).length === 1,
      `statuses ${JSON.stringify(result.statuses)} for ${result.requests} responses`,
    );
    assertClosedLoopLatencies("floor-server", result, 10);
    assertSubMillisecond("floor-server", result);

    // A high rate, paced: every slot is sent and answered. Whether the generator kept up (its CPU per
    // request, its late sends) is printed for whoever tunes it; on a busy machine it says little.
    const rate = 2000;
    const paced = await runLoadWithStderr({
      url,
      connections: 10,
      durationSeconds: 3,
      rate,
      requests: [{ method: "GET", path: "/auth/session", headers: { cookie: "session_id=x" } }],
    });
    const report = pacedReport(paced.stderr);
    console.log(`floor-server, paced at ${rate}/s, 10 connections, 3 s:`, JSON.stringify(paced.result), report.cpuLine);
    printLoadNotes(paced.stderr);
    assert(report.slots === rate * 3 && report.intervalMs === 1000 / rate, `schedule of ${report.slots} slots every ${report.intervalMs} ms`);
    assert(paced.result.errors === 0 && paced.result.non2xx === 0, `errors ${paced.result.errors}, non2xx ${paced.result.non2xx}`);
    assert(
      paced.result.requests === rate * 3 && paced.result.statuses["200"] === rate * 3,
      `${paced.result.requests} responses (${JSON.stringify(paced.result.statuses)}), expected ${rate * 3} 200s`,
    );
    assert(paced.result.p50 > 0 && paced.result.p50 <= paced.result.p99, `paced p50 ${paced.result.p50} ms, p99 ${paced.result.p99} ms`);
  } finally {
    child.kill("SIGTERM");
  }
  const [code, signal] = await exited;
  assert(code === 0, `floor-server must exit 0 on SIGTERM, got ${code ?? signal}`);
}

// 2. amount = requests.length sends each request exactly once, whatever the connection count.
{
  const seen = new Map<string, number>();
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const key = `${req.method} ${req.url} ${body}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const { port } = server.address() as AddressInfo;
    const paths = Array.from({ length: 50 }, (_, i) => `/single-use/${i}`);
    const result = await runLoad({
      url: `http://127.0.0.1:${port}`,
      connections: 8, // does not divide 50: connections get 7 or 6 requests
      amount: paths.length,
      requests: paths.map((path, i) => ({ method: "POST", path, headers: { "content-type": "application/json" }, body: `{"i":${i}}` })),
    });
    console.log("amount 50, 8 connections:", JSON.stringify(result));
    assert(result.requests === 50, `requests ${result.requests}`);
    assertClosedLoopLatencies("amount 50", result, 8);
    assert(seen.size === 50, `${seen.size} distinct requests arrived, expected 50`);
    paths.forEach((path, i) => {
      const count = seen.get(`POST ${path} {"i":${i}}`);
      assert(count === 1, `${path} arrived ${count ?? 0} times`);
    });
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

// 3. A rate is paced over each second, not sent in a burst at its start: no request arrives before its
//    slot. load.ts reports slot 0 on the machine's monotonic clock, which this process reads at each
//    arrival. The k-th arrival comes after k + 1 sends, the last of them due at slot k or later, and a
//    send goes at most 0.5 ms before its slot (SEND_AHEAD_MS); a generator that sent each second's
//    quota at its start would be up to a second early. A stalled generator sends late and catches up,
//    which is allowed: how late, and the densest windows, are printed.
{
  const arrivals: bigint[] = [];
  const server = createServer((req, res) => {
    arrivals.push(process.hrtime.bigint());
    req.resume().on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const { port } = server.address() as AddressInfo;
    const rate = 200;
    const { result, stderr } = await runLoadWithStderr({
      url: `http://127.0.0.1:${port}`,
      connections: 4,
      durationSeconds: 3,
      rate,
      requests: [{ method: "GET", path: "/paced" }],
    });
    const report = pacedReport(stderr);
    // Milliseconds from slot 0, in order of arrival.
    const times = arrivals.map((at) => Number(at - report.slot0Ns) / 1e6).sort((a, b) => a - b);
    const lead = times.map((time, k) => k * report.intervalMs - time); // > 0: before its slot
    const worst = lead.reduce((at, value, k) => (value > lead[at]! ? k : at), 0);
    // Most arrivals in any window of `ms` (sliding, starting at an arrival).
    const densest = (ms: number) => {
      let most = 0;
      for (let i = 0, j = 0; i < times.length; i++) {
        while (j < times.length && times[j]! < times[i]! + ms) j++;
        most = Math.max(most, j - i);
      }
      return most;
    };
    const lateness = lead.map((value) => -value).sort((a, b) => a - b);
    console.log(
      `rate ${rate}, 3 s:`,
      JSON.stringify(result),
      `arrivals ${times.length}, the last ${(times.at(-1) ?? 0).toFixed(0)} ms after slot 0; after their slot by median ${(lateness[Math.floor(lateness.length / 2)] ?? 0).toFixed(2)} ms,` +
        ` at most ${(lateness.at(-1) ?? 0).toFixed(2)} ms; most in any 100 ms ${densest(100)} (fair ${rate / 10}), in any 10 ms ${densest(10)} (fair ${rate / 100})`,
    );
    printLoadNotes(stderr);
    assert(result.errors === 0 && result.non2xx === 0, `errors ${result.errors}, non2xx ${result.non2xx}`);
    assert(report.slots === 600 && report.intervalMs === 1000 / rate, `schedule of ${report.slots} slots every ${report.intervalMs} ms`);
    assert(times.length === 600 && result.requests === 600, `600 requests expected, ${times.length} arrived and ${result.requests} answered`);
    assert(
      lead[worst]! <= 1,
      `arrival ${worst} came ${lead[worst]!.toFixed(2)} ms before its slot (${(worst * report.intervalMs).toFixed(0)} ms after slot 0): sent ahead of the schedule`,
    );
    assert(result.p50 > 0 && result.p50 <= result.p99, `paced p50 ${result.p50} ms, p99 ${result.p99} ms`);
    assertSubMillisecond("paced", result);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

// 4. The paced client's own HTTP/1.1 handling, against a raw TCP server answering each path its own
//    way: responses split across writes, chunked, after a 100 Continue, 204, Connection: close, and
//    two broken ones (no length; closed mid-body) that must count as errors and reopen the socket.
{
  const styles: Record<string, (socket: Socket) => void> = {
    plain: (s) => s.write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 2\r\n\r\n{}"),
    split: (s) => {
      const parts = ["HTTP/1.1 200 OK\r\nConTent-LenGth: 5\r", "\n\r", "\n12", "345"];
      parts.forEach((part, i) => setTimeout(() => s.write(part), i * 3));
    },
    chunked: (s) => {
      s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhel");
      setTimeout(() => s.write("lo\r\n3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n"), 3);
    },
    continue: (s) => s.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
    empty: (s) => s.write("HTTP/1.1 204 No Content\r\n\r\n"),
    close: (s) => s.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"),
    unframed: (s) => s.write("HTTP/1.1 200 OK\r\n\r\n{}"), // no length: an error, the client closes
    cut: (s) => s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345", () => s.destroy()), // an error
  };
  const names = Object.keys(styles);
  const arrived: string[] = [];
  let connections = 0;
  const server = createTcpServer((socket) => {
    connections++;
    socket.setNoDelay(true);
    let buffered = "";
    socket.setEncoding("latin1").on("data", (chunk: string) => {
      buffered += chunk;
      for (;;) {
        const end = buffered.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffered.slice(0, end);
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffered.length < end + 4 + length) return;
        const body = buffered.slice(end + 4, end + 4 + length);
        buffered = buffered.slice(end + 4 + length);
        const [method, path] = head.split(" ");
        const host = /\r\nhost: *([^\r]*)/i.exec(head)?.[1];
        arrived.push(`${method} ${path} ${body} host=${host} keep-alive=${/\r\nconnection: *keep-alive/i.test(head)}`);
        styles[path!.slice(1)]!(socket);
      }
    });
    socket.on("error", () => {});
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const { port } = server.address() as AddressInfo;
    const rounds = 10;
    const result = await runLoad({
      url: `http://127.0.0.1:${port}`,
      connections: 3,
      rate: 400,
      amount: names.length * rounds,
      requests: names.map((name, i) =>
        i % 2 ? { method: "GET", path: `/${name}`, headers: { "x-check": name } } : { method: "POST", path: `/${name}`, body: `{"style":"${name}"}` },
      ),
    });
    console.log(`paced client vs ${names.length} response styles x ${rounds}:`, JSON.stringify(result), `${connections} connections opened`);
    assert(arrived.length === names.length * rounds, `${arrived.length} requests arrived, expected ${names.length * rounds}`);
    names.forEach((name, i) => {
      const expected = `${i % 2 ? "GET" : "POST"} /${name} ${i % 2 ? "" : `{"style":"${name}"}`} host=127.0.0.1:${port} keep-alive=true`;
      const count = arrived.filter((a) => a === expected).length;
      assert(count === rounds, `${count} requests arrived as ${JSON.stringify(expected)}, expected ${rounds}`);
    });
    // unframed and cut fail; every other response counts, and only continue's (404) is non-2xx.
    assert(result.errors === 2 * rounds && result.timeouts === 0, `errors ${result.errors} (timeouts ${result.timeouts}), expected ${2 * rounds} (0)`);
    assert(result.requests === (names.length - 2) * rounds, `requests ${result.requests}, expected ${(names.length - 2) * rounds}`);
    assert(result.non2xx === rounds, `non2xx ${result.non2xx}, expected ${rounds}`);
    const statuses = JSON.stringify(result.statuses);
    assert(
      statuses === JSON.stringify({ 200: 4 * rounds, 204: rounds, 404: rounds }),
      `statuses ${statuses}: expected 200 x${4 * rounds}, 204 x${rounds}, 404 x${rounds}`,
    );
  } finally {
    server.close();
  }
}

// 5. {{seq}} and {{ip}} filled in per request on both paths, counted from seqStart; several URLs
//    share the connections (closed loop), and each status is counted apart.
{
  const seen: Array<{ server: number; seq: number; ip: string | undefined }> = [];
  const servers = [200, 201].map((status, server) =>
    createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      req.on("end", () => {
        seen.push({ server, seq: (JSON.parse(body) as { n: number }).n, ip: req.headers["x-forwarded-for"] as string | undefined });
        res.writeHead(status, { "content-type": "application/json" }).end("{}");
      });
    }),
  );
  const urls: string[] = [];
  for (const server of servers) {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }
  const ipOf = (n: number) => `10.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  const template = [
    { method: "POST" as const, path: "/t", headers: { "content-type": "application/json", "x-forwarded-for": "{{ip}}" }, body: '{"n":{{seq}}}' },
  ];
  const expectEach = (from: number, count: number) => {
    const seqs = seen.map((s) => s.seq).sort((a, b) => a - b);
    assert(seqs.length === count && seqs.every((seq, i) => seq === from + i), `seqs ${seqs.join(",")}: expected ${from}..${from + count - 1} once each`);
    assert(
      seen.every((s) => s.ip === ipOf(s.seq)),
      `an X-Forwarded-For is not the IP of its seq: ${JSON.stringify(seen.find((s) => s.ip !== ipOf(s.seq)))}`,
    );
  };
  try {
    const closed = await runLoad({ url: urls, connections: 4, amount: 40, requests: template, seqStart: 65_790 });
    console.log("template, two urls, closed loop:", JSON.stringify(closed));
    expectEach(65_790, 40);
    assertClosedLoopLatencies("template, two urls", closed, 4);
    const perServer = [0, 1].map((server) => seen.filter((s) => s.server === server).length);
    assert(perServer[0]! > 0 && perServer[1]! > 0, `requests per server ${perServer.join(", ")}: both must get some`);
    assert(
      closed.statuses["200"] === perServer[0] && closed.statuses["201"] === perServer[1],
      `statuses ${JSON.stringify(closed.statuses)} vs arrivals ${perServer.join(", ")}`,
    );
    seen.length = 0;
    const paced = await runLoad({ url: urls[0]!, connections: 2, rate: 400, amount: 20, requests: template, seqStart: 7 });
    console.log("template, paced:", JSON.stringify(paced));
    expectEach(7, 20);
    assert(paced.statuses["200"] === 20, `paced statuses ${JSON.stringify(paced.statuses)}`);
    const refused = await runLoad({ url: urls, connections: 2, rate: 10, amount: 2, requests: template }).then(
      () => "",
      (error: Error) => error.message,
    );
    assert(refused.includes("several urls are for closed-loop runs"), `several urls with a rate must be refused, got ${JSON.stringify(refused)}`);
  } finally {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
  }
}

// 6. The hash floor.
{
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", benchFile("hash-floor.ts"), "2", "4"], { cwd: repoRoot });
  console.log("hash-floor, 2 s, concurrency 4:", stdout.trim());
  const result = JSON.parse(stdout) as { verifiesPerSecond: number; count: number };
  assert(result.verifiesPerSecond > 0 && result.count > 0, "verifiesPerSecond must be > 0");
}

// 7. The profile's stages: each that names a Latch file matches a file of the build. When the session
// rules moved to flows/kernel/, the stage kept matching flows/sessions.js and read 0 µs without a word.
{
  const { STAGES } = (await import(benchFile("cpuprofile-stages.mjs"))) as {
    STAGES: Array<[string, (frame: { url: string; functionName: string }) => boolean]>;
  };
  const sourceFiles = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
    );
  const src = join(repoRoot, "src");
  // The URL each source file has in a profile of dist/.
  const builtUrls = sourceFiles(src).map((file) => `file:///srv/latch/dist/${relative(src, file).replace(/\.ts$/, ".js")}`);
  // A pattern that starts with /dist/ names Latch's own file (not a library's dist/, as cookie/dist/).
  const naming = STAGES.filter(([, matches]) => /[/|(]\\\/dist\\\//.test(matches.toString()));
  assert(naming.length >= 5, `the stages that name Latch's own files: ${naming.length}`);
  for (const [name, matches] of naming) {
    assert(
      builtUrls.some((url) => matches({ url, functionName: "f" })),
      `the profile stage "${name}" matches no file of dist/: ${matches.toString()}`,
    );
  }
  console.log(`cpuprofile stages: ${naming.length} name files of the build, each matches one`);
}

console.log("check-blocks: ok");
