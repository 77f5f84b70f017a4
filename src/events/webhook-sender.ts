/**
 * Standard Webhooks signing and ONE guarded delivery attempt (DECISIONS D9). The outbox dispatcher
 * owns retries, backoff and the webhook-id's stability; this file owns what a single POST may touch.
 */
import { createHmac } from "node:crypto";
import { lookup as lookupDns } from "node:dns";
import { request as requestHttp, type RequestOptions } from "node:http";
import { request as requestHttps } from "node:https";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { urlToHttpOptions } from "node:url";
import type { Random } from "../core/random.js";

const SECRET_PREFIX = "whsec_";
/** Receivers' answers are discarded; reading a little lets well-behaved ones finish, the cap stops a hostile one. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const INTERNAL_ADDRESS_CODE = "ELATCH_INTERNAL_ADDRESS";

export function generateWebhookSecret(random: Random): string {
  return SECRET_PREFIX + random.bytes(32).toString("base64");
}

export function generateWebhookId(random: Random): string {
  return "msg_" + random.bytes(16).toString("base64url");
}

/** Standard Webhooks: "v1," + base64(HMAC-SHA256(key, `${id}.${timestampSeconds}.${body}`)), key = base64-decoded part after "whsec_". */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const encodedKey = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encodedKey, "base64");
  if (key.length === 0) throw new Error("webhook secret is empty");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
}

export interface WebhookRequest { url: string; secret: string; id: string; timestampSeconds: number; body: string; allowPrivateNetworks: boolean; timeoutMs: number; }
export type WebhookResult = { ok: true; status: number } | { ok: false; status?: number; error: string };

// 192.0.0.0/24 (IETF protocol) and 198.18.0.0/15 (benchmarking) are not routed on the internet either.
const internalIPv4 = new BlockList();
for (const [network, prefix] of [["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16],
  ["172.16.0.0", 12], ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4]] as const) {
  internalIPv4.addSubnet(network, prefix, "ipv4");
}
// fec0::/10 is the deprecated site-local range; some stacks still route it inside the site.
const internalIPv6 = new BlockList();
for (const [network, prefix] of [["::", 128], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8]] as const) {
  internalIPv6.addSubnet(network, prefix, "ipv6");
}

/** Eight 16-bit groups of a valid IPv6 address (checked with isIP first); a trailing dotted quad becomes two groups. */
function parseIPv6Groups(address: string): number[] {
  let text = address.split("%")[0]!; // a zone id ("%eth0") names an interface, not part of the address
  if (text.includes(".")) {
    const cut = text.lastIndexOf(":");
    const [a, b, c, d] = text.slice(cut + 1).split(".").map(Number) as [number, number, number, number];
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
  [INTERNAL_ADDRESS_CODE]: "internal address refused", ECONNREFUSED: "connection refused", ECONNRESET: "connection reset",
  ENOTFOUND: "dns lookup failed", EAI_AGAIN: "dns lookup failed", EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable", ETIMEDOUT: "timeout",
};

function describeRequestError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== "string" || !/^[A-Z0-9_]{1,64}$/.test(code)) return "request failed";
  if (errorTexts[code] !== undefined) return errorTexts[code];
  if (code.startsWith("HPE_")) return "invalid http response";
  return code.includes("CERT") || code.includes("TLS") ? `tls error ${code}` : `network error ${code}`;
}

function describeStatus(status: number): WebhookResult {
  if (status >= 200 && status < 300) return { ok: true, status };
  if (status >= 300 && status < 400) return { ok: false, status, error: "redirect not followed" };
  return { ok: false, status, error: `http ${status}` };
}

/** One POST bounded by timeoutMs overall (the socket `timeout` alone only bounds idle gaps, not a slow drip). */
function postOnce(options: RequestOptions, useHttps: boolean, body: string, timeoutMs: number): Promise<WebhookResult> {
  return new Promise((resolve) => {
    let settled = false;
    let statusResult: WebhookResult | undefined; // once headers arrive, the receiver has answered
    const request = (useHttps ? requestHttps : requestHttp)({ ...options, timeout: timeoutMs });
    const finish = (result: WebhookResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve(result);
    };
    const finishOnTimeout = (): void => finish(statusResult ?? { ok: false, error: "timeout" });
    const timer = setTimeout(finishOnTimeout, timeoutMs);
    request.on("timeout", finishOnTimeout);
    request.on("error", (error) => finish(statusResult ?? { ok: false, error: describeRequestError(error) }));
    request.on("response", (response) => {
      const result = describeStatus(response.statusCode ?? 0);
      statusResult = result;
      let received = 0;
      response.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > MAX_RESPONSE_BYTES) finish(result); // discarded anyway; stop reading
      });
      response.on("end", () => finish(result));
      response.on("close", () => finish(result));
      response.on("error", () => finish(result));
    });
    request.end(body);
  });
}

async function attemptWebhook(webhook: WebhookRequest): Promise<WebhookResult> {
  let url: URL;
  try {
    url = new URL(webhook.url);
  } catch {
    return { ok: false, error: "invalid url" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, error: "unsupported url scheme" };
  const target = urlToHttpOptions(url); // strips IPv6 brackets; the WHATWG parser already normalised 0x7f.1 etc.
  const hostname = target.hostname ?? "";
  // Node connects to IP-literal hosts without calling `lookup`, so they are checked here.
  if (!webhook.allowPrivateNetworks && isIP(hostname) !== 0 && isInternalAddress(hostname)) {
    return { ok: false, error: "internal address refused" };
  }
  let signature: string;
  try {
    signature = signWebhook(webhook.secret, webhook.id, webhook.timestampSeconds, webhook.body);
  } catch {
    return { ok: false, error: "invalid secret" };
  }
  const options: RequestOptions = {
    ...target,
    method: "POST",
    agent: false, // no pooled sockets: each attempt connects to an address checked for this attempt's policy
    lookup: createGuardedLookup(webhook.allowPrivateNetworks),
    headers: {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(webhook.body),
      "user-agent": "Latch-Webhooks/1",
      "webhook-id": webhook.id,
      "webhook-timestamp": String(webhook.timestampSeconds),
      "webhook-signature": signature,
    },
  };
  return postOnce(options, url.protocol === "https:", webhook.body, webhook.timeoutMs);
}

/** Never throws: every failure becomes { ok: false, error } with a short, operator-safe error string. */
export async function sendWebhook(request: WebhookRequest): Promise<WebhookResult> {
  try {
    return await attemptWebhook(request);
  } catch (error) {
    return { ok: false, error: describeRequestError(error) };
  }
}
