/**
 * Load generator, run as its own process so it does not share an event loop with the server:
 *
 *   node --import tsx bench/load.ts <spec.json>
 *
 * Reads a LoadSpec (load-types.ts) and prints one line of JSON, a LoadResult. The spec's requests
 * are handed out round-robin through one shared index.
 *  - Without a rate: closed loop, autocannon (pipelining 1) keeps every connection busy.
 *  - With a rate: open loop, paced() below sends one request every 1000/rate ms over a keep-alive
 *    http.Agent (autocannon's overallRate would send each second's quota in a burst at its start).
 * Latency percentiles are exact (sorted samples, sub-millisecond), over responses of any status.
 * Exits 2 with a message on stderr if the spec is invalid, 1 if the run fails.
 */
import type { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import type { LoadRequest, LoadResult, LoadSpec } from "./load-types.js";

export type { LoadRequest, LoadResult, LoadSpec } from "./load-types.js";

// autocannon ships no types; this is the part of its API (README "API") used here.
interface AutocannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
}
interface AutocannonOptions {
  url: string;
  connections: number;
  pipelining: number;
  duration?: number;
  amount?: number;
  requests: AutocannonRequest[];
}
interface AutocannonResult {
  non2xx: number;
  errors: number;
  timeouts: number;
}
type Autocannon = (options: AutocannonOptions, done: (error: Error | null, result: AutocannonResult) => void) => EventEmitter;

const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

class SpecError extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new SpecError(`invalid load spec: ${message}`);
}

const isPositiveInteger = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 1;
const isPositiveNumber = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value) && value > 0;
const isStringRecord = (value: unknown): value is Record<string, string> =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string");

function parseLoadSpec(value: unknown): LoadSpec {
  check(typeof value === "object" && value !== null && !Array.isArray(value), "not an object");
  const spec = value as Partial<LoadSpec>;
  check(typeof spec.url === "string" && /^https?:$/.test(URL.canParse(spec.url) ? new URL(spec.url).protocol : ""), "url must be an http(s) URL");
  check(isPositiveInteger(spec.connections), "connections must be an integer >= 1");
  check((spec.durationSeconds === undefined) !== (spec.amount === undefined), "give exactly one of durationSeconds and amount");
  check(spec.durationSeconds === undefined || isPositiveNumber(spec.durationSeconds), "durationSeconds must be > 0");
  check(spec.amount === undefined || isPositiveInteger(spec.amount), "amount must be an integer >= 1");
  check(spec.rate === undefined || isPositiveInteger(spec.rate), "rate must be an integer >= 1");
  check(spec.warmupSeconds === undefined || isPositiveNumber(spec.warmupSeconds), "warmupSeconds must be > 0");
  check(Array.isArray(spec.requests) && spec.requests.length > 0, "requests must be a non-empty array");
  spec.requests.forEach((r: Partial<LoadRequest>, i) => {
    check(typeof r === "object" && r !== null, `requests[${i}] is not an object`);
    check(r.method === "GET" || r.method === "POST", `requests[${i}].method must be GET or POST`);
    check(typeof r.path === "string" && r.path.startsWith("/"), `requests[${i}].path must start with /`);
    check(r.headers === undefined || isStringRecord(r.headers), `requests[${i}].headers must map names to strings`);
    check(r.body === undefined || typeof r.body === "string", `requests[${i}].body must be a string`);
  });
  return spec as LoadSpec;
}

/** A request gets this long from its send (paced: its scheduled send) to the end of its response. */
const TIMEOUT_MS = 10_000;

/** Latency samples in ms; percentiles exactly, by nearest rank over the sorted samples. */
class Latencies {
  private values = new Float64Array(1 << 16);
  private count = 0;

  add(ms: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = ms;
  }

  /** p50 and p99 in ms, rounded to 2 decimals; 0 without samples. */
  percentiles(): { p50: number; p99: number } {
    const sorted = this.values.subarray(0, this.count).sort();
    const at = (p: number) => (sorted.length === 0 ? 0 : Math.round(sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]! * 100) / 100);
    return { p50: at(50), p99: at(99) };
  }
}

/**
 * One closed-loop autocannon run; counts and times responses itself (autocannon's duration overshoots
 * an amount run by up to 1 s, and its histogram keeps whole milliseconds of 2xx responses only).
 */
function cannon(spec: LoadSpec, limit: { durationSeconds: number } | { amount: number }): Promise<LoadResult> {
  let next = 0; // one index shared by every connection
  const pick: AutocannonRequest = {
    setupRequest: (request) => {
      const entry = spec.requests[next++ % spec.requests.length]!;
      // Fresh headers object: autocannon adds Content-Length to it.
      return { ...request, method: entry.method, path: entry.path, headers: { ...entry.headers }, body: entry.body ?? "" };
    },
  };
  const options: AutocannonOptions = {
    url: spec.url,
    // autocannon throws if connections > amount; one request per connection is the most an amount allows.
    connections: "amount" in limit ? Math.min(spec.connections, limit.amount) : spec.connections,
    pipelining: 1,
    requests: [pick],
    ...("amount" in limit ? { amount: limit.amount } : { duration: limit.durationSeconds }),
  };

  let completed = 0;
  let lastResponseAt = 0;
  const latencies = new Latencies();
  const startedAt = performance.now();
  return new Promise((resolve, reject) => {
    const instance = autocannon(options, (error, result) => {
      if (error) return reject(error);
      const seconds = ((completed > 0 ? lastResponseAt : performance.now()) - startedAt) / 1000;
      resolve({
        requests: completed,
        rps: seconds > 0 ? completed / seconds : 0,
        ...latencies.percentiles(),
        non2xx: result.non2xx,
        errors: result.errors,
        timeouts: result.timeouts,
        seconds,
      });
    });
    // responseTime: ms as a float, process.hrtime() from writing the request to its last byte
    // (autocannon/lib/pipelinedRequestsQueue.js terminateRequest).
    instance.on("response", (_client: unknown, _statusCode: number, _resBytes: number, responseTime: number) => {
      completed++;
      lastResponseAt = performance.now();
      latencies.add(responseTime);
    });
  });
}

/**
 * Timers fire 0-1 ms late (libuv keeps whole milliseconds), so a request due within this much is sent
 * now: sends land within about ±0.5 ms of their slot instead of 0-1 ms behind it.
 */
const SEND_AHEAD_MS = 0.5;

/**
 * One open-loop run at spec.rate: request i (counting warm-up) is due at start + i * 1000/rate ms,
 * whatever the earlier ones are doing, over at most spec.connections keep-alive sockets (requests
 * beyond that wait in the agent's queue). Latency runs from the request's slot (or its actual send
 * if that was earlier) to the last byte of its response, so time spent queued, in this process or
 * the server, counts: no coordinated omission. If this process's event loop stalls, the missed
 * slots are caught up at most `burst` per timer tick rather than all at once; that lag counts as
 * latency too, so stderr gets a warning when more than 1% of sends were over 5 ms late.
 */
function paced(spec: LoadSpec & { rate: number }): Promise<LoadResult> {
  const target = new URL(spec.url);
  const secure = target.protocol === "https:";
  const agent = secure
    ? new https.Agent({ keepAlive: true, maxSockets: spec.connections, rejectUnauthorized: false })
    : new http.Agent({ keepAlive: true, maxSockets: spec.connections });
  const request = secure ? https.request : http.request;
  const prepared = spec.requests.map((entry) => {
    const body = entry.body === undefined || entry.body === "" ? undefined : Buffer.from(entry.body);
    const headers: Record<string, string> = { ...entry.headers };
    if (body) headers["content-length"] = String(body.length);
    return { method: entry.method, path: entry.path, headers, body };
  });

  const interval = 1000 / spec.rate;
  const warmupSlots = spec.warmupSeconds === undefined ? 0 : Math.round(spec.warmupSeconds * spec.rate);
  const measuredSlots = spec.amount ?? Math.max(1, Math.round(spec.durationSeconds! * spec.rate));
  const totalSlots = warmupSlots + measuredSlots;
  // Most sends per timer tick: 4 ms' worth (at least 4). Ticks come every 1-2 ms, so a backlog after
  // a stall drains at 2-4 times the rate, in bursts no bigger than this.
  const burst = Math.max(4, Math.ceil((spec.rate * 4) / 1000));

  interface InFlight {
    measured: boolean;
    from: number; // latency (and the timeout) runs from here: its slot, or its actual send if earlier
    req: http.ClientRequest;
    timedOut: boolean;
    settled: boolean;
  }
  const inFlight = new Set<InFlight>(); // in send order, which is slot order
  const latencies = new Latencies();
  let completed = 0;
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  let lastResponseAt = 0;
  let sent = 0;
  let lateSends = 0;

  const start = performance.now();
  const measuredStart = start + warmupSlots * interval;

  return new Promise((resolve) => {
    const finishIfDone = () => {
      if (sent < totalSlots || inFlight.size > 0) return;
      clearInterval(sweeper);
      agent.destroy();
      if (lateSends > totalSlots / 100) {
        console.error(`load.ts: ${lateSends} of ${totalSlots} requests were sent over 5 ms after their slot (this process fell behind); latencies include that`);
      }
      const seconds = ((completed > 0 ? lastResponseAt : performance.now()) - measuredStart) / 1000;
      resolve({ requests: completed, rps: seconds > 0 ? completed / seconds : 0, ...latencies.percentiles(), non2xx, errors, timeouts, seconds });
    };

    const settle = (flight: InFlight, status: number | undefined) => {
      if (flight.settled) return;
      flight.settled = true;
      inFlight.delete(flight);
      if (flight.measured) {
        if (status !== undefined) {
          const now = performance.now();
          completed++;
          lastResponseAt = now;
          latencies.add(now - flight.from);
          if (status < 200 || status > 299) non2xx++;
        } else {
          // Like autocannon: a timeout is an error too.
          errors++;
          if (flight.timedOut) timeouts++;
        }
      }
      finishIfDone();
    };

    const send = (slot: number, now: number) => {
      const measured = slot >= warmupSlots;
      const entry = prepared[(measured ? slot - warmupSlots : slot) % prepared.length]!;
      const due = start + slot * interval;
      if (now - due > 5) lateSends++;
      const req = request({
        protocol: target.protocol,
        hostname: target.hostname.replace(/^\[(.*)\]$/, "$1"),
        port: target.port || (secure ? 443 : 80),
        method: entry.method,
        path: entry.path,
        headers: entry.headers,
        agent,
      });
      const flight: InFlight = { measured, from: Math.min(due, now), req, timedOut: false, settled: false };
      inFlight.add(flight);
      req.on("response", (res) => {
        res.on("data", () => {});
        res.on("end", () => settle(flight, res.statusCode ?? 0));
        res.on("error", () => {}); // reported through req's "close"
      });
      req.on("error", () => {}); // reported through "close"
      req.on("close", () => settle(flight, undefined));
      req.end(entry.body);
    };

    // Sends every slot due by now (+ SEND_AHEAD_MS), at most `burst` of them, then sleeps until the next.
    const tick = () => {
      const now = performance.now();
      for (let n = 0; n < burst && sent < totalSlots && start + sent * interval <= now + SEND_AHEAD_MS; n++) send(sent++, now);
      if (sent >= totalSlots) return finishIfDone();
      const wait = start + sent * interval - SEND_AHEAD_MS - performance.now();
      setTimeout(tick, Math.max(1, Math.floor(wait)));
    };

    // In-flight requests are in slot order, so the expired ones are at the front.
    const sweeper = setInterval(() => {
      const now = performance.now();
      for (const flight of inFlight) {
        if (now - flight.from < TIMEOUT_MS) break;
        if (flight.timedOut) continue;
        flight.timedOut = true;
        flight.req.destroy(new Error("request timed out"));
      }
    }, 100);

    tick();
  });
}

async function main(specFile: string): Promise<LoadResult> {
  const spec = parseLoadSpec(JSON.parse(readFileSync(specFile, "utf8")));
  if (spec.rate !== undefined) return paced({ ...spec, rate: spec.rate });
  if (spec.warmupSeconds !== undefined) await cannon(spec, { durationSeconds: spec.warmupSeconds });
  return cannon(spec, spec.amount !== undefined ? { amount: spec.amount } : { durationSeconds: spec.durationSeconds! });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const specFile = process.argv[2];
  if (!specFile) {
    console.error("usage: node --import tsx bench/load.ts <spec.json>");
    process.exit(2);
  }
  try {
    console.log(JSON.stringify(await main(specFile)));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(error instanceof SpecError || error instanceof SyntaxError ? 2 : 1);
  }
}
