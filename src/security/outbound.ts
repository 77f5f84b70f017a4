/**
 * Requests to addresses a tenant chose (webhook URLs, a bot provider's `verifyUrl`): the SSRF guard
 * of contract.md#d9 (contract.md#d21 extends it to `verifyUrl`) and one bounded POST through it. A tenant's URL can't reach
 * loopback, private, link-local or other internal addresses (unless the operator allows private
 * networks), by name, by literal or by a DNS answer that changes between check and connect.
 */
import { lookup as lookupDns } from "node:dns";
import { request as requestHttp, type RequestOptions } from "node:http";
import { request as requestHttps } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { urlToHttpOptions } from "node:url";

/** Answers are read up to this many bytes: enough for any provider's JSON, and a hostile one stops there. */
const MAX_RESPONSE_BYTES = 64 * 1024;
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

/** One POST bounded by timeoutMs overall (the socket `timeout` alone only bounds idle gaps, not a slow drip). */
function postOnce(options: RequestOptions, useHttps: boolean, body: string, timeoutMs: number): Promise<OutboundResult> {
  return new Promise((resolve) => {
    let settled = false;
    let status: number | undefined; // once headers arrive, the receiver has answered
    const chunks: Buffer[] = [];
    let received = 0;
    const request = (useHttps ? requestHttps : requestHttp)({ ...options, timeout: timeoutMs });
    const finish = (result: OutboundResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const answered = (complete: boolean): OutboundResult => ({ status: status!, body: Buffer.concat(chunks).toString("utf8"), complete });
    const cutShort = (error: string) => (): void => finish(status === undefined ? { error } : answered(false));
    const timer = setTimeout(cutShort("timeout"), timeoutMs);
    request.on("timeout", cutShort("timeout"));
    request.on("error", (error) => finish(status === undefined ? { error: describeRequestError(error) } : answered(false)));
    request.on("response", (response) => {
      status = response.statusCode ?? 0;
      response.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) return finish(answered(false));
        chunks.push(chunk);
      });
      response.on("end", () => finish(answered(true)));
      response.on("close", () => finish(answered(false)));
      response.on("error", () => finish(answered(false)));
    });
    request.end(body);
  });
}

/** Never throws; never follows a redirect (it would carry the body, and a secret, elsewhere). */
export async function guardedPost(post: OutboundPost): Promise<OutboundResult> {
  try {
    let url: URL;
    try {
      url = new URL(post.url);
    } catch {
      return { error: "invalid url" };
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return { error: "unsupported url scheme" };
    const target = urlToHttpOptions(url); // strips IPv6 brackets; the WHATWG parser already normalised 0x7f.1 etc.
    const hostname = target.hostname ?? "";
    // Node connects to IP-literal hosts without calling `lookup`, so they are checked here.
    if (!post.allowPrivateNetworks && isIP(hostname) !== 0 && isInternalAddress(hostname)) return { error: "internal address refused" };
    const options: RequestOptions = {
      ...target,
      method: "POST",
      agent: false, // no pooled sockets: each request connects to an address checked for this request's policy
      lookup: createGuardedLookup(post.allowPrivateNetworks),
      headers: { "content-length": Buffer.byteLength(post.body), ...post.headers },
    };
    return await postOnce(options, url.protocol === "https:", post.body, post.timeoutMs);
  } catch (error) {
    return { error: describeRequestError(error) };
  }
}
