/**
 * Requests to addresses a tenant chose (webhook URLs, a bot provider's `verifyUrl`, an upstream identity
 * provider's issuer, token and JWKS URLs): the SSRF guard of contract.md#d9 (contract.md#d21 extends it to
 * `verifyUrl`, contract.md#d27 to federation) and one bounded request through it. A tenant's URL can't reach
 * loopback, private, link-local or other internal addresses (unless the operator allows private
 * networks), by name, by literal or by a DNS answer that changes between check and connect.
 */
import { lookup as lookupDns } from "node:dns";
import { request as requestHttp, type IncomingMessage, type RequestOptions } from "node:http";
import { request as requestHttps } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { urlToHttpOptions } from "node:url";

/** guardedPost reads answers up to this many bytes: enough for any provider's JSON, and a hostile one stops there. */
const MAX_POST_RESPONSE_BYTES = 64 * 1024;
/** createGuardedFetch's default cap: a large provider's JWKS (Microsoft's is about 20 KiB) or discovery document fits many times. */
const MAX_FETCH_RESPONSE_BYTES = 256 * 1024;
const INTERNAL_ADDRESS_CODE = "ELATCH_INTERNAL_ADDRESS";

// 192.0.0.0/24 (IETF protocol) and 198.18.0.0/15 (benchmarking) are not routed on the internet either.
const internalIPv4 = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  internalIPv4.addSubnet(network, prefix, "ipv4");
}
// fec0::/10 is the deprecated site-local range; some stacks still route it inside the site.
const internalIPv6 = new BlockList();
// 64:ff9b:1::/48 (local-use NAT64, RFC 8215), 100::/64 (discard), 2001::/32 (Teredo, which wraps
// an IPv4 address obfuscated) and ::ffff:0:0:0/96 (SIIT) can reach IPv4 hosts or nowhere: refused whole.
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 32],
  ["::ffff:0:0:0", 96],
] as const) {
  internalIPv6.addSubnet(network, prefix, "ipv6");
}

/** Eight 16-bit groups of a valid IPv6 address (checked with isIP first); a trailing dotted quad becomes two groups. */
function parseIPv6Groups(address: string): number[] {
  let text = address.split("%")[0]!; // a zone id ("%eth0") names an interface, not part of the address
  if (text.includes(".")) {
    const cut = text.lastIndexOf(":");
    const [a, b, c, d] = text
      .slice(cut + 1)
      .split(".")
      .map(Number) as [number, number, number, number];
    text = `${text.slice(0, cut + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const toGroups = (part: string): number[] => (part === "" ? [] : part.split(":").map((group) => parseInt(group, 16)));
  const [head, tail] = text.split("::") as [string, string | undefined];
  if (tail === undefined) return toGroups(head);
  const left = toGroups(head);
  const right = toGroups(tail);
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function formatIPv4(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * IPv4 carried inside IPv6 would reach the same host as the IPv4 itself: mapped (::ffff:0:0/96) and compatible
 * (::/96) forms are handled by the socket layer, NAT64 (64:ff9b::/96) and 6to4 (2002::/16) by translators.
 */
function embeddedIPv4(groups: number[]): string | undefined {
  const isZero = (from: number, to: number): boolean => groups.slice(from, to).every((group) => group === 0);
  if (isZero(0, 5) && (groups[5] === 0xffff || groups[5] === 0)) return formatIPv4(groups[6]!, groups[7]!);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && isZero(2, 6)) return formatIPv4(groups[6]!, groups[7]!);
  if (groups[0] === 0x2002) return formatIPv4(groups[1]!, groups[2]!);
  return undefined;
}

/** True for loopback, private (RFC1918), link-local, CGNAT 100.64/10, 0.0.0.0/8, multicast, reserved/broadcast, IPv6 ::1, ::, fc00::/7, fe80::/10, ff00::/8, and IPv4-mapped/compatible IPv6 forms of the IPv4 ones. */
export function isInternalAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 4) return internalIPv4.check(address, "ipv4");
  if (version !== 6) return true; // not an address at all: fail closed
  const groups = parseIPv6Groups(address);
  const inner = embeddedIPv4(groups);
  if (inner !== undefined && internalIPv4.check(inner, "ipv4")) return true;
  return internalIPv6.check(groups.map((group) => group.toString(16)).join(":"), "ipv6");
}

/**
 * Resolves once and hands the socket exactly the addresses it checked, so a DNS answer that changes between
 * check and connect (rebinding) cannot reach an internal host. Any internal answer refuses the whole name.
 */
function createGuardedLookup(allowPrivateNetworks: boolean): LookupFunction {
  return (hostname, options, callback) => {
    lookupDns(hostname, { family: options.family, hints: options.hints, all: true }, (error, addresses) => {
      if (error) return callback(error, "");
      if (addresses.length === 0) return callback(Object.assign(new Error("no address"), { code: "ENOTFOUND" }), "");
      if (!allowPrivateNetworks && addresses.some((entry) => isInternalAddress(entry.address))) {
        return callback(Object.assign(new Error("internal address refused"), { code: INTERNAL_ADDRESS_CODE }), "");
      }
      // Node's happy-eyeballs connect asks for all addresses; the classic path wants one.
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

// Error strings are stored and shown to operators: built from error codes only, never from messages,
// which can carry the host or path. The body and URL never appear.
const errorTexts: Record<string, string> = {
  [INTERNAL_ADDRESS_CODE]: "internal address refused",
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ENOTFOUND: "dns lookup failed",
  EAI_AGAIN: "dns lookup failed",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ETIMEDOUT: "timeout",
};

function describeRequestError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== "string" || !/^[A-Z0-9_]{1,64}$/.test(code)) return "request failed";
  if (errorTexts[code] !== undefined) return errorTexts[code];
  if (code.startsWith("HPE_")) return "invalid http response";
  return code.includes("CERT") || code.includes("TLS") ? `tls error ${code}` : `network error ${code}`;
}

export interface OutboundRequest {
  url: string;
  method: string;
  headers: Record<string, string | number>;
  /** Sent as is, with its content-length; none for a GET. */
  body?: string | Buffer | undefined;
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Bytes of the answer read at most; past them the answer is cut short. */
  maxResponseBytes: number;
  /** The caller's own cancellation (fetch's `signal`); an abort ends the request at once. */
  signal?: AbortSignal | undefined;
}

/**
 * What came back: the status, the headers as sent (name/value pairs, names lowercased) and as much of
 * the body as arrived. `cutShort` says why it is not all of it (over the size cap, the overall time,
 * the connection closed); absent when the body is complete. Or a short operator-safe error built from
 * error codes only, when no answer began.
 */
export type OutboundAnswer =
  | { status: number; headers: Array<[string, string]>; body: Buffer; cutShort?: "response too large" | "timeout" | "connection closed" | "aborted" }
  | { error: string };

/** One request bounded by timeoutMs overall (the socket `timeout` alone only bounds idle gaps, not a slow drip). */
function requestOnce(options: RequestOptions, useHttps: boolean, outbound: OutboundRequest): Promise<OutboundAnswer> {
  if (outbound.signal?.aborted) return Promise.resolve({ error: "aborted" });
  return new Promise((resolve) => {
    let settled = false;
    let response: IncomingMessage | undefined; // once headers arrive, the receiver has answered
    const chunks: Buffer[] = [];
    let received = 0;
    const request = (useHttps ? requestHttps : requestHttp)({ ...options, timeout: outbound.timeoutMs });
    const finish = (answer: OutboundAnswer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outbound.signal?.removeEventListener("abort", onAbort);
      request.destroy();
      resolve(answer);
    };
    const answered = (cutShort?: "response too large" | "timeout" | "connection closed" | "aborted"): OutboundAnswer => {
      const headers: Array<[string, string]> = [];
      const raw = response!.rawHeaders;
      for (let i = 0; i + 1 < raw.length; i += 2) headers.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
      const body = Buffer.concat(chunks);
      return cutShort === undefined ? { status: response!.statusCode ?? 0, headers, body } : { status: response!.statusCode ?? 0, headers, body, cutShort };
    };
    const stop = (error: string, cutShort: "timeout" | "connection closed" | "aborted") => (): void =>
      finish(response === undefined ? { error } : answered(cutShort));
    const onAbort = stop("aborted", "aborted");
    const timer = setTimeout(stop("timeout", "timeout"), outbound.timeoutMs);
    outbound.signal?.addEventListener("abort", onAbort, { once: true });
    request.on("timeout", stop("timeout", "timeout"));
    request.on("error", (error) => finish(response === undefined ? { error: describeRequestError(error) } : answered("connection closed")));
    request.on("response", (incoming) => {
      response = incoming;
      incoming.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > outbound.maxResponseBytes) return finish(answered("response too large"));
        chunks.push(chunk);
      });
      incoming.on("end", () => finish(answered()));
      incoming.on("close", () => finish(answered("connection closed")));
      incoming.on("error", () => finish(answered("connection closed")));
    });
    request.end(outbound.body);
  });
}

/** Never throws; never follows a redirect (it would carry the body, and a secret, elsewhere): a 3xx is the answer. */
export async function guardedRequest(outbound: OutboundRequest): Promise<OutboundAnswer> {
  try {
    let url: URL;
    try {
      url = new URL(outbound.url);
    } catch {
      return { error: "invalid url" };
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return { error: "unsupported url scheme" };
    const target = urlToHttpOptions(url); // strips IPv6 brackets; the WHATWG parser already normalised 0x7f.1 etc.
    const hostname = target.hostname ?? "";
    // Node connects to IP-literal hosts without calling `lookup`, so they are checked here.
    if (!outbound.allowPrivateNetworks && isIP(hostname) !== 0 && isInternalAddress(hostname)) return { error: "internal address refused" };
    const headers = outbound.body === undefined ? outbound.headers : { "content-length": Buffer.byteLength(outbound.body), ...outbound.headers };
    const options: RequestOptions = {
      ...target,
      method: outbound.method,
      agent: false, // no pooled sockets: each request connects to an address checked for this request's policy
      lookup: createGuardedLookup(outbound.allowPrivateNetworks),
      headers,
    };
    return await requestOnce(options, url.protocol === "https:", outbound);
  } catch (error) {
    return { error: describeRequestError(error) };
  }
}

export interface OutboundPost {
  url: string;
  headers: Record<string, string | number>;
  body: string;
  timeoutMs: number;
  allowPrivateNetworks: boolean;
}

/**
 * What came back: the status and as much of the body as arrived (`complete` when all of it did,
 * within the size cap and the time), or a short operator-safe error built from error codes only.
 */
export type OutboundResult = { status: number; body: string; complete: boolean } | { error: string };

/** One POST of a webhook or a siteverify call: never throws, never follows a redirect, reads 64 KiB at most. */
export async function guardedPost(post: OutboundPost): Promise<OutboundResult> {
  const answer = await guardedRequest({ ...post, method: "POST", maxResponseBytes: MAX_POST_RESPONSE_BYTES });
  if ("error" in answer) return answer;
  return { status: answer.status, body: answer.body.toString("utf8"), complete: answer.cutShort === undefined };
}

/** The part of fetch's `init` that openid-client's `customFetch` passes (its CustomFetchOptions), and plain callers may. */
export interface GuardedFetchInit {
  method?: string;
  headers?: Record<string, string> | Headers | Array<[string, string]>;
  body?: string | URLSearchParams | Uint8Array | ArrayBuffer | ReadableStream | null;
  /** Only "manual" is honoured whatever is asked: a redirect is answered as is, never followed. */
  redirect?: "manual" | "follow" | "error";
  signal?: AbortSignal | null;
}

export type GuardedFetch = (url: string, init?: GuardedFetchInit) => Promise<Response>;

/** Statuses whose Response may carry no body (the Fetch standard's "null body status"). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

function encodeBody(body: GuardedFetchInit["body"], headers: Record<string, string>): string | Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return body;
  if (body instanceof URLSearchParams) {
    headers["content-type"] ??= "application/x-www-form-urlencoded;charset=UTF-8";
    return body.toString();
  }
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError("unsupported request body"); // a stream: nothing Latch sends upstream needs one
}

/**
 * A fetch for openid-client (`[client.customFetch]`, contract.md#d27): every request goes through
 * guardedRequest, so the issuer's discovery, token and JWKS URLs get the SSRF guard of contract.md#d9.
 * A refused or failed request rejects with a TypeError, as fetch does, whose message is built from
 * error codes only (no URL, host or body); an answer cut short (over `maxResponseBytes`, default
 * 256 KiB, or past `timeoutMs`) rejects too, so a partial JWKS or token answer is never parsed.
 * The caller's signal aborts with its reason, as fetch does.
 */
export function createGuardedFetch(options: { allowPrivateNetworks: boolean; timeoutMs: number; maxResponseBytes?: number }): GuardedFetch {
  const maxResponseBytes = options.maxResponseBytes ?? MAX_FETCH_RESPONSE_BYTES;
  return async (url, init = {}) => {
    const headers: Record<string, string> = {};
    for (const [name, value] of new Headers(init.headers ?? {})) headers[name] = value;
    // The Response below is built from raw bytes and decodes nothing: ask for none.
    headers["accept-encoding"] = "identity";
    const body = encodeBody(init.body, headers);
    const signal = init.signal ?? undefined;
    const method = (init.method ?? "GET").toUpperCase();
    const answer = await guardedRequest({ ...options, url, method, headers, body, signal, maxResponseBytes });
    if (signal?.aborted) throw signal.reason ?? new DOMException("This operation was aborted", "AbortError");
    if ("error" in answer) throw new TypeError(answer.error);
    if (answer.cutShort !== undefined) throw new TypeError(answer.cutShort);
    if (answer.status < 200 || answer.status > 599) throw new TypeError("invalid http response");
    const encoding = answer.headers
      .find(([name]) => name === "content-encoding")?.[1]
      .trim()
      .toLowerCase();
    if (encoding !== undefined && encoding !== "" && encoding !== "identity") throw new TypeError("unsupported content encoding");
    const responseHeaders = new Headers();
    for (const [name, value] of answer.headers) responseHeaders.append(name, value);
    return new Response(NULL_BODY_STATUSES.has(answer.status) ? null : answer.body, { status: answer.status, headers: responseHeaders });
  };
}
