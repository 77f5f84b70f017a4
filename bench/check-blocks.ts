/**
 * Self-check for the benchmark building blocks: load.ts (via runLoad), floor-server.ts and
 * hash-floor.ts. Prints their numbers; exits non-zero on any failure. Takes about 20 s.
 *
 *   node --import tsx bench/check-blocks.ts
 */
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { runLoad } from "./load-client.js";

const repoRoot = fileURLToPath(new URL("../", import.meta.url));
const benchFile = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`check failed: ${message}`);
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
    assert(result.rps > 0, "rps must be > 0");
    // Sub-millisecond resolution: autocannon's histogram would say 0 or a whole number here.
    assert(result.p50 > 0 && result.p50 < 5, `p50 ${result.p50} ms must be > 0 and < 5`);
    assert(!Number.isInteger(result.p50) || !Number.isInteger(result.p99), `p50 ${result.p50} and p99 ${result.p99} look like whole ms`);
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

// 3. A rate is paced evenly over each second (not sent in a burst at its start) and timed finely.
{
  const arrivals: number[] = [];
  const server = createServer((req, res) => {
    arrivals.push(performance.now());
    req.resume().on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  try {
    const { port } = server.address() as AddressInfo;
    const rate = 200;
    const result = await runLoad({ url: `http://127.0.0.1:${port}`, connections: 4, durationSeconds: 3, rate, requests: [{ method: "GET", path: "/paced" }] });
    // Most arrivals in any window of `ms` (sliding, starting at an arrival).
    const densest = (ms: number) => {
      let most = 0;
      for (let i = 0, j = 0; i < arrivals.length; i++) {
        while (j < arrivals.length && arrivals[j]! < arrivals[i]! + ms) j++;
        most = Math.max(most, j - i);
      }
      return most;
    };
    const span = arrivals.length > 1 ? arrivals.at(-1)! - arrivals[0]! : 0;
    const in100 = densest(100);
    const in10 = densest(10);
    console.log(
      `rate ${rate}, 3 s:`,
      JSON.stringify(result),
      `arrivals ${arrivals.length} over ${span.toFixed(0)} ms; most in any 100 ms ${in100} (fair ${rate / 10}), in any 10 ms ${in10} (fair ${rate / 100})`,
    );
    assert(result.errors === 0 && result.non2xx === 0, `errors ${result.errors}, non2xx ${result.non2xx}`);
    assert(arrivals.length === 600 && result.requests === 600, `600 requests expected, ${arrivals.length} arrived and ${result.requests} answered`);
    assert(span > 2900, `arrivals span ${span.toFixed(0)} ms, expected about 3000`);
    assert(in100 <= (2 * rate) / 10, `${in100} arrivals in one 100 ms window, more than twice the fair ${rate / 10}`);
    assert(result.p50 > 0 && result.p50 < 5, `paced p50 ${result.p50} ms must be > 0 and < 5`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

// 4. The hash floor.
{
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", benchFile("hash-floor.ts"), "2", "4"], { cwd: repoRoot });
  console.log("hash-floor, 2 s, concurrency 4:", stdout.trim());
  const result = JSON.parse(stdout) as { verifiesPerSecond: number; count: number };
  assert(result.verifiesPerSecond > 0 && result.count > 0, "verifiesPerSecond must be > 0");
}

console.log("check-blocks: ok");
