/**
 * Load generator, run as its own process so it does not share an event loop with the server:
 *
 *   node --import tsx bench/load.ts <spec.json>
 *
 * Reads a LoadSpec (load-types.ts) and prints one line of JSON, a LoadResult. The spec's requests
 * are handed out round-robin through one shared index, their `{{seq}}` and `{{ip}}` filled in.
 *  - Without a rate: closed loop, autocannon (pipelining 1) keeps every connection busy.
 *  - With a rate: open loop, paced() below sends one request every 1000/rate ms over raw keep-alive
 *    sockets with a minimal HTTP/1.1 client of its own, cheap enough per request that the generator
 *    keeps its schedule at thousands of requests/s (autocannon's overallRate would send each second's
 *    quota in a burst at its start; node:http's client costs too much CPU per request).
 * Latency percentiles are exact (sorted samples, sub-millisecond), over responses of any status;
 * responses are counted by status, which the caller judges.
 * Exits 2 with a message on stderr if the spec is invalid, 1 if the run fails.
 */
import type { EventEmitter } from "node:events";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import tls from "node:tls";
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
  /** Several URLs: connection i goes to url[i % length] (autocannon/lib/run.js). */
  url: string | string[];
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

const isHttpUrl = (value: unknown): value is string => typeof value === "string" && /^https?:$/.test(URL.canParse(value) ? new URL(value).protocol : "");

function parseLoadSpec(value: unknown): LoadSpec {
  check(typeof value === "object" && value !== null && !Array.isArray(value), "not an object");
  const spec = value as Partial<LoadSpec>;
  check(
    isHttpUrl(spec.url) || (Array.isArray(spec.url) && spec.url.length > 0 && spec.url.every(isHttpUrl)),
    "url must be an http(s) URL or a non-empty array of them",
  );
  check(!Array.isArray(spec.url) || spec.url.length === 1 || spec.rate === undefined, "several urls are for closed-loop runs (no rate)");
  check(spec.seqStart === undefined || (Number.isInteger(spec.seqStart) && spec.seqStart >= 0), "seqStart must be an integer >= 0");
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
    // The paced client writes requests as they are: nothing that would end the request line or a header.
    check(/^[\x21-\x7e\x80-\xff]*$/.test(r.path), `requests[${i}].path must not contain spaces, control or non-Latin-1 characters`);
    check(r.headers === undefined || isStringRecord(r.headers), `requests[${i}].headers must map names to strings`);
    Object.entries(r.headers ?? {}).forEach(([name, value]) => {
      check(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name), `requests[${i}].headers: invalid header name ${JSON.stringify(name)}`);
      check(/^[\t\x20-\x7e\x80-\xff]*$/.test(value), `requests[${i}].headers.${name}: control or non-Latin-1 characters in the value`);
    });
    check(r.body === undefined || typeof r.body === "string", `requests[${i}].body must be a string`);
  });
  return spec as LoadSpec;
}

const PLACEHOLDER = /\{\{(seq|ip)\}\}/g;

/** The IPv4 address numbered n (mod 2^24) in 10.0.0.0/8. */
function ipOf(n: number): string {
  const i = n % 2 ** 24;
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}

const fill = (text: string, seq: number) => text.replace(PLACEHOLDER, (_, name: string) => (name === "seq" ? String(seq) : ipOf(seq)));

function isTemplate(entry: LoadRequest): boolean {
  return [entry.path, entry.body ?? "", ...Object.values(entry.headers ?? {})].some((text) => text.includes("{{"));
}

/** The request as sent as number `seq`: `{{seq}}` and `{{ip}}` filled in (see LoadSpec.requests). */
function instantiate(entry: LoadRequest, seq: number): LoadRequest {
  if (!isTemplate(entry)) return entry;
  return {
    method: entry.method,
    path: fill(entry.path, seq),
    ...(entry.headers && { headers: Object.fromEntries(Object.entries(entry.headers).map(([name, value]) => [name, fill(value, seq)])) }),
    ...(entry.body !== undefined && { body: fill(entry.body, seq) }),
  };
}

/** Responses by status code. */
function countStatus(statuses: Record<string, number>, status: number): void {
  statuses[status] = (statuses[status] ?? 0) + 1;
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
 * `seq` numbers the requests for `{{seq}}`, shared with the warm-up run before this one.
 */
function cannon(spec: LoadSpec, limit: { durationSeconds: number } | { amount: number }, seq: { next: number }): Promise<LoadResult> {
  let next = 0; // one index shared by every connection
  const pick: AutocannonRequest = {
    setupRequest: (request) => {
      const entry = instantiate(spec.requests[next++ % spec.requests.length]!, seq.next++);
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
  const statuses: Record<string, number> = {};
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
        statuses,
        errors: result.errors,
        timeouts: result.timeouts,
        seconds,
      });
    });
    // responseTime: ms as a float, process.hrtime() from writing the request to its last byte
    // (autocannon/lib/pipelinedRequestsQueue.js terminateRequest).
    instance.on("response", (_client: unknown, statusCode: number, _resBytes: number, responseTime: number) => {
      completed++;
      countStatus(statuses, statusCode);
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

/** The longest response head, chunk-size line or trailer line accepted; a longer one is an error. */
const MAX_HEAD_BYTES = 64 * 1024;
const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");

/**
 * Reads HTTP/1.x responses off one connection's bytes, however they are split into chunks: only the
 * status code and the body's framing (Content-Length, or chunked), skipping the body itself. Interim
 * 1xx responses are skipped; a body delimited by the connection closing is not supported (an error).
 */
class ResponseReader {
  private state: "head" | "body" | "chunk-size" | "chunk-data" | "trailer" = "head";
  /** The incomplete head or line at the end of the bytes so far. */
  private pending: Buffer | undefined;
  /** body, chunk-data: bytes still to skip. */
  private remaining = 0;
  private status = 0;
  private close = false;

  /**
   * Feeds the next bytes, calling onResponse(status, close) for each response they complete (close:
   * the server closes the connection after it); onResponse returns false to stop reading. Returns an
   * error message if the bytes are not HTTP/1.x responses this reader handles, else undefined.
   */
  push(chunk: Buffer, onResponse: (status: number, close: boolean) => boolean): string | undefined {
    const buf = this.pending === undefined ? chunk : Buffer.concat([this.pending, chunk]);
    this.pending = undefined;
    let pos = 0;
    while (pos < buf.length) {
      if (this.state === "body" || this.state === "chunk-data") {
        const take = Math.min(this.remaining, buf.length - pos);
        pos += take;
        this.remaining -= take;
        if (this.remaining > 0) break;
        if (this.state === "chunk-data") {
          this.state = "chunk-size";
          continue;
        }
        this.state = "head";
        if (!onResponse(this.status, this.close)) return undefined;
        continue;
      }
      const delimiter = this.state === "head" ? HEAD_END : CRLF;
      const end = buf.indexOf(delimiter, pos);
      if (end < 0) {
        if (buf.length - pos > MAX_HEAD_BYTES) return `response ${this.state} longer than ${MAX_HEAD_BYTES} bytes`;
        this.pending = buf.subarray(pos);
        break;
      }
      const text = buf.toString("latin1", pos, end);
      pos = end + delimiter.length;
      if (this.state === "head") {
        const error = this.readHead(text);
        if (error !== undefined) return error;
        if (this.bodyless()) {
          this.state = "head";
          if (!onResponse(this.status, this.close)) return undefined;
        }
      } else if (this.state === "chunk-size") {
        const hex = /^[0-9a-f]{1,12}(?=[ \t;]|$)/i.exec(text)?.[0];
        if (hex === undefined) return `bad chunk size line ${JSON.stringify(text.slice(0, 40))}`;
        const size = parseInt(hex, 16);
        if (size === 0) this.state = "trailer";
        else {
          this.state = "chunk-data";
          this.remaining = size + 2; // the chunk and the CRLF after it
        }
      } else if (text === "") {
        // The empty line after the last chunk (and any trailers).
        this.state = "head";
        if (!onResponse(this.status, this.close)) return undefined;
      }
    }
    return undefined;
  }

  /** After a final response's head: it has no body (the narrowing of `state` does not see readHead). */
  private bodyless(): boolean {
    return this.state === "body" && this.remaining === 0;
  }

  /** Reads a head (status line and headers, without the final CRLFCRLF) and sets up for its body. */
  private readHead(head: string): string | undefined {
    const statusLine = /^HTTP\/1\.([01]) (\d{3})(?:[ \r]|$)/.exec(head);
    if (!statusLine) return `not an HTTP/1.x response: ${JSON.stringify(head.slice(0, 40))}`;
    const status = Number(statusLine[2]);
    if (status === 101) return "unexpected 101 Switching Protocols";
    if (status < 200) return undefined; // interim: the final response follows
    const lower = head.toLowerCase();
    const header = (name: string): string | undefined => {
      const at = lower.indexOf(`\r\n${name}:`);
      if (at < 0) return undefined;
      const from = at + name.length + 3;
      const to = lower.indexOf("\r\n", from);
      return lower.slice(from, to < 0 ? lower.length : to).trim();
    };
    const connection = header("connection");
    this.status = status;
    this.close = statusLine[1] === "0" ? !/\bkeep-alive\b/.test(connection ?? "") : /\bclose\b/.test(connection ?? "");
    if (status === 204 || status === 304) {
      this.state = "body";
      this.remaining = 0;
      return undefined;
    }
    const transferEncoding = header("transfer-encoding");
    if (transferEncoding !== undefined) {
      if (!/(?:^|,)\s*chunked$/.test(transferEncoding)) return `unsupported transfer-encoding: ${transferEncoding}`;
      this.state = "chunk-size";
      return undefined;
    }
    const contentLength = header("content-length");
    if (contentLength === undefined) return `${status} response without content-length or chunked encoding (a body up to close is not supported)`;
    if (!/^\d{1,15}$/.test(contentLength)) return `bad content-length: ${contentLength}`;
    this.state = "body";
    this.remaining = Number(contentLength);
    return undefined;
  }
}

/** The bytes of one request: request line, Host, Connection: keep-alive, its headers, Content-Length, body. */
function serialise(entry: LoadRequest, host: string): Buffer {
  const headers = Object.entries(entry.headers ?? {});
  const has = (name: string) => headers.some(([n]) => n.toLowerCase() === name);
  let head = `${entry.method} ${entry.path} HTTP/1.1\r\n`;
  if (!has("host")) head += `Host: ${host}\r\n`;
  if (!has("connection")) head += "Connection: keep-alive\r\n";
  for (const [name, value] of headers) {
    const lower = name.toLowerCase();
    if (lower !== "content-length" && lower !== "transfer-encoding") head += `${name}: ${value}\r\n`;
  }
  const body = Buffer.from(entry.body ?? "");
  // A POST always says how long its (maybe empty) body is.
  if (body.length > 0 || entry.method === "POST") head += `Content-Length: ${body.length}\r\n`;
  return Buffer.concat([Buffer.from(`${head}\r\n`, "latin1"), body]);
}

/**
 * One open-loop run at spec.rate: request i (counting warm-up) is due at start + i * 1000/rate ms,
 * whatever the earlier ones are doing. The transport is deliberately minimal so that the generator
 * costs little CPU per request (node:http's client costs enough to fall behind at a few thousand
 * requests/s on 2 cores, and then measures itself): spec.connections raw keep-alive sockets, each
 * carrying one request at a time (no pipelining), every request pre-serialised once, responses
 * parsed only for their status and length (ResponseReader). A due request goes to an idle socket,
 * or waits in a FIFO queue until one frees. A socket that errors, closes, times out or sends
 * something unreadable fails its request in flight (an error) and is reopened for the next request.
 *
 * Latency runs from the request's slot (or its actual send if that was earlier) to the last byte of
 * its response, so time spent queued, in this process or the server, counts: no coordinated
 * omission. If this process's event loop stalls, the missed slots are caught up at most `burst` per
 * timer tick rather than all at once; that lag counts as latency too, so stderr gets a warning when
 * more than 1% of sends were over 5 ms late. stderr also gets this process's CPU time for the run,
 * and the schedule (slot 0 on the monotonic clock, process.hrtime, and the interval).
 */
function paced(spec: LoadSpec & { rate: number }): Promise<LoadResult> {
  const target = new URL(Array.isArray(spec.url) ? spec.url[0]! : spec.url);
  const secure = target.protocol === "https:";
  const hostname = target.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = Number(target.port || (secure ? 443 : 80));
  const distinct = new Map<string, Buffer>(); // each distinct request serialised once
  // A template is serialised at each send, with its sequence number filled in.
  const prepared = spec.requests.map((entry) => {
    if (isTemplate(entry)) return (seq: number) => serialise(instantiate(entry, seq), target.host);
    const bytes = serialise(entry, target.host);
    const key = bytes.toString("latin1");
    const known = distinct.get(key);
    if (known) return known;
    distinct.set(key, bytes);
    return bytes;
  });

  const interval = 1000 / spec.rate;
  const warmupSlots = spec.warmupSeconds === undefined ? 0 : Math.round(spec.warmupSeconds * spec.rate);
  const measuredSlots = spec.amount ?? Math.max(1, Math.round(spec.durationSeconds! * spec.rate));
  const totalSlots = warmupSlots + measuredSlots;
  // Most sends per timer tick: 4 ms' worth (at least 4). Ticks come every 1-2 ms, so a backlog after
  // a stall drains at 2-4 times the rate, in bursts no bigger than this.
  const burst = Math.max(4, Math.ceil((spec.rate * 4) / 1000));

  interface Flight {
    measured: boolean;
    from: number; // latency (and the timeout) runs from here: its slot, or its actual send if earlier
    bytes: Buffer;
    conn: Conn | undefined; // while on a socket
    timedOut: boolean;
    settled: boolean;
  }
  interface Conn {
    socket: net.Socket | undefined; // opened on the first request after a close
    reader: ResponseReader;
    current: Flight | undefined;
  }
  const conns: Conn[] = Array.from({ length: spec.connections }, () => ({ socket: undefined, reader: new ResponseReader(), current: undefined }));
  const idle: Conn[] = [...conns]; // last freed first, like http.Agent's default "lifo"
  const queue: Flight[] = []; // FIFO from queueHead; settled (timed-out) entries are skipped
  let queueHead = 0;
  const inFlight = new Set<Flight>(); // queued or on a socket, in send order, which is slot order
  const latencies = new Latencies();
  let completed = 0;
  let non2xx = 0;
  const statuses: Record<string, number> = {};
  let errors = 0;
  let timeouts = 0;
  let lastResponseAt = 0;
  let sent = 0;
  let lateSends = 0;
  let protocolError: string | undefined;

  const cpuAtStart = process.cpuUsage();
  // The same instant on the machine's monotonic clock, which every process shares: a caller can
  // then check that no request arrived before its slot (bench/check-blocks.ts). Read just before
  // `start`, so it is never later than it.
  const startMonotonicNs = process.hrtime.bigint();
  const start = performance.now();
  const measuredStart = start + warmupSlots * interval;

  return new Promise((resolve) => {
    const finishIfDone = () => {
      if (sent < totalSlots || inFlight.size > 0) return;
      clearInterval(sweeper);
      for (const conn of conns) detach(conn);
      if (lateSends > totalSlots / 100) {
        console.error(
          `load.ts: ${lateSends} of ${totalSlots} requests were sent over 5 ms after their slot (this process fell behind); latencies include that`,
        );
      }
      if (protocolError !== undefined) console.error(`load.ts: unreadable response (counted as an error, socket reopened): ${protocolError}`);
      console.error(`load.ts: paced schedule: slot 0 at monotonic ${startMonotonicNs} ns, one slot every ${interval} ms, ${totalSlots} slots`);
      const cpu = process.cpuUsage(cpuAtStart);
      const cpuMs = (cpu.user + cpu.system) / 1000;
      console.error(
        `load.ts: paced run used ${cpuMs.toFixed(0)} ms CPU (user ${(cpu.user / 1000).toFixed(0)}, system ${(cpu.system / 1000).toFixed(0)}) for ${totalSlots} requests, ${((cpuMs * 1000) / totalSlots).toFixed(1)} µs each`,
      );
      const seconds = ((completed > 0 ? lastResponseAt : performance.now()) - measuredStart) / 1000;
      resolve({ requests: completed, rps: seconds > 0 ? completed / seconds : 0, ...latencies.percentiles(), non2xx, statuses, errors, timeouts, seconds });
    };

    const settle = (flight: Flight, status: number | undefined) => {
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
          countStatus(statuses, status);
        } else {
          // Like autocannon: a timeout is an error too.
          errors++;
          if (flight.timedOut) timeouts++;
        }
      }
      finishIfDone();
    };

    /** Closes conn's socket, if open, so that its events are ignored from now on. */
    const detach = (conn: Conn) => {
      const socket = conn.socket;
      conn.socket = undefined;
      socket?.destroy();
    };

    /** Puts flight on conn (idle), opening a socket if it has none. */
    const put = (conn: Conn, flight: Flight) => {
      conn.current = flight;
      flight.conn = conn;
      (conn.socket ?? open(conn)).write(flight.bytes);
    };

    /** conn has just become idle: give it the oldest queued request, if any. */
    const release = (conn: Conn) => {
      while (queueHead < queue.length) {
        const flight = queue[queueHead++]!;
        if (flight.settled) continue;
        if (queueHead > 1024 && queueHead * 2 > queue.length) {
          queue.splice(0, queueHead);
          queueHead = 0;
        }
        return put(conn, flight);
      }
      queue.length = queueHead = 0;
      idle.push(conn);
    };

    /** The socket broke (or the request on it timed out): fail the request in flight, if any, and reuse conn. */
    const fail = (conn: Conn) => {
      const flight = conn.current;
      detach(conn);
      if (!flight) return; // idle: it stays in `idle`, and reopens on its next request
      conn.current = undefined;
      flight.conn = undefined;
      settle(flight, undefined);
      release(conn);
    };

    const onData = (conn: Conn, chunk: Buffer) => {
      let freed = false;
      let broken = false;
      const error = conn.reader.push(chunk, (status, close) => {
        const flight = conn.current;
        if (!flight) {
          broken = true; // a response to no request
          protocolError ??= "a response arrived with no request in flight";
          return false;
        }
        conn.current = undefined;
        flight.conn = undefined;
        freed = true;
        broken = close;
        settle(flight, status);
        return !close;
      });
      if (error !== undefined) protocolError ??= error;
      if (error !== undefined || broken) fail(conn); // fails the request in flight, if the error came before its end
      if (freed) release(conn);
    };

    const open = (conn: Conn): net.Socket => {
      const socket = secure
        ? tls.connect({ host: hostname, port, rejectUnauthorized: false, ...(net.isIP(hostname) === 0 ? { servername: hostname } : {}) })
        : net.connect({ host: hostname, port });
      socket.setNoDelay(true);
      conn.socket = socket;
      conn.reader = new ResponseReader();
      socket.on("data", (chunk: Buffer) => {
        if (conn.socket === socket) onData(conn, chunk);
      });
      socket.on("error", () => {}); // "close" follows
      socket.on("close", () => {
        if (conn.socket === socket) fail(conn);
      });
      return socket;
    };

    const send = (slot: number, now: number) => {
      const measured = slot >= warmupSlots;
      const entry = prepared[(measured ? slot - warmupSlots : slot) % prepared.length]!;
      const bytes = typeof entry === "function" ? entry((spec.seqStart ?? 0) + slot) : entry;
      const due = start + slot * interval;
      if (now - due > 5) lateSends++;
      const flight: Flight = { measured, from: Math.min(due, now), bytes, conn: undefined, timedOut: false, settled: false };
      inFlight.add(flight);
      const conn = idle.pop();
      if (conn) put(conn, flight);
      else queue.push(flight);
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
        flight.timedOut = true;
        if (flight.conn)
          fail(flight.conn); // its socket may hold a late response: start afresh
        else settle(flight, undefined); // still queued: release() skips it
      }
    }, 100);

    tick();
  });
}

async function main(specFile: string): Promise<LoadResult> {
  const spec = parseLoadSpec(JSON.parse(readFileSync(specFile, "utf8")));
  if (spec.rate !== undefined) return paced({ ...spec, rate: spec.rate });
  const seq = { next: spec.seqStart ?? 0 };
  if (spec.warmupSeconds !== undefined) await cannon(spec, { durationSeconds: spec.warmupSeconds }, seq);
  return cannon(spec, spec.amount !== undefined ? { amount: spec.amount } : { durationSeconds: spec.durationSeconds! }, seq);
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
