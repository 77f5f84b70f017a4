/**
 * Calls made by server code on behalf of a browser (decisions.md#the-sdk-in-server-code-issue-29):
 * the browser's session cookie (and the step a federated callback left, `__Host-latch_fed_pending`),
 * User-Agent and, only when asked, its IP go on to Latch. Structural
 * types only, so the SDK keeps no Node types: a Fetch `Request` and a Node or Express
 * `IncomingMessage` both fit.
 */
import type { LatchCookieName } from "./cookies.js";

/** What a client forwards. Given any of it, the client keeps the session as "memory" mode does, starting from this cookie. */
export interface ForwardOptions {
  /** The browser's `Cookie` header as it came, or just `session_id=…`: only Latch's `session_id` and `__Host-latch_fed_pending` go on, the app's own cookies stay with the app. */
  cookie?: string;
  /** The bare `session_id` value, when the app's cookie parser already read it. */
  sessionId?: string;
  /** The browser's `User-Agent`, so audit events and the member's session list name the browser, not the server. */
  userAgent?: string;
  /**
   * The browser's IP as this server determined it (its socket address, or what this server's own
   * trusted proxy says), sent as `X-Forwarded-For`. Latch believes it only when this server's address
   * is in Latch's `TRUST_PROXY`; otherwise Latch ignores it and counts this server's address.
   * One IPv4 or IPv6 address; never the incoming `X-Forwarded-For` as it came, which the browser wrote.
   */
  clientIp?: string;
}

/** A Fetch `Request`, or a Node/Express/Fastify request (`headers` as a record of strings). */
export type IncomingRequestLike = { headers: Headers | { [name: string]: string | string[] | undefined } };

/** `withRequest`'s options: the IP is never read from the request, only taken from here. */
export type WithRequestOptions = Pick<ForwardOptions, "clientIp">;

/** The first cookie called `name` in a Cookie header, as Latch's own parser takes the first. */
export function cookieOfHeader(header: string, name: LatchCookieName): string | undefined {
  for (const pair of header.split(";")) {
    const separator = pair.indexOf("=");
    if (separator < 0 || pair.slice(0, separator).trim() !== name) continue;
    const value = pair.slice(separator + 1).trim();
    return value === "" ? undefined : value;
  }
  return undefined;
}

function headerOf(request: IncomingRequestLike, name: string): string | undefined {
  const headers = request.headers;
  if (typeof headers.get === "function") return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  // HTTP/2 may hand several cookie headers as an array; they are one list.
  return Array.isArray(value) ? value.join("; ") : value;
}

/** What `withRequest` forwards: the session cookie and User-Agent of the request, and `clientIp` only if given. */
export function forwardOfRequest(request: IncomingRequestLike, options: WithRequestOptions = {}): ForwardOptions {
  const forward: ForwardOptions = {};
  const cookie = headerOf(request, "cookie");
  if (cookie !== undefined) forward.cookie = cookie;
  const userAgent = headerOf(request, "user-agent");
  if (userAgent !== undefined) forward.userAgent = userAgent;
  if (options.clientIp !== undefined) forward.clientIp = options.clientIp;
  return forward;
}

/** Latch's cookies a ForwardOptions names: `sessionId` wins over the header's `session_id`. */
export function forwardedCookies(forward: ForwardOptions): Partial<Record<LatchCookieName, string>> {
  const header = forward.cookie ?? "";
  const sessionId = forward.sessionId !== undefined && forward.sessionId !== "" ? forward.sessionId : cookieOfHeader(header, "session_id");
  const pending = cookieOfHeader(header, "__Host-latch_fed_pending");
  return { ...(sessionId !== undefined ? { session_id: sessionId } : {}), ...(pending !== undefined ? { "__Host-latch_fed_pending": pending } : {}) };
}

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const IPV6 = /^[0-9a-f:]*:[0-9a-f:]*(\d{1,3}(\.\d{1,3}){3})?$/i;

/**
 * Refuses anything but one address: a list or a header as it came would let whoever wrote it choose
 * the IP Latch sees (a trusted proxy's X-Forwarded-For is taken from the right, entry by entry).
 */
export function assertClientIp(ip: string): void {
  if (!IPV4.test(ip) && !IPV6.test(ip)) throw new TypeError("clientIp must be one IPv4 or IPv6 address, such as the incoming request's socket address.");
}
