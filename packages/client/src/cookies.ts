/**
 * The "memory" cookie mode for Node, where fetch has no cookie jar: the cookies Latch's calls read,
 * kept from Set-Cookie and sent back as Cookie. `session_id`, and `__Host-latch_fed_pending`, the step a
 * federated callback leaves for finishFederatedSecondFactor or confirmFederatedLink. No Domain or
 * Path matching: a client talks to one Latch. (`latch_fed` is read only by the callback, a
 * navigation, so it is never sent; setCookies() still hands it to the browser.)
 */
const LATCH_COOKIES = ["session_id", "__Host-latch_fed_pending"] as const;
export type LatchCookieName = (typeof LATCH_COOKIES)[number];

export interface SessionCookieJar {
  /** The Cookie header to send, if any cookie is held. */
  header(): string | undefined;
  /** Reads the answer's Set-Cookie headers: keeps a new value, forgets a cleared one. */
  update(headers: Headers): void;
}

/** True when the Set-Cookie attributes end the cookie: Max-Age of 0 or less, or an Expires in the past. */
function isExpired(attributes: string[], now: number): boolean {
  for (const attribute of attributes) {
    const [name = "", value = ""] = attribute.split("=", 2).map((part) => part.trim());
    if (name.toLowerCase() === "max-age" && /^-?\d+$/.test(value)) return Number(value) <= 0;
  }
  for (const attribute of attributes) {
    const [name = "", value = ""] = attribute.split("=", 2).map((part) => part.trim());
    if (name.toLowerCase() === "expires") return Date.parse(value) <= now;
  }
  return false;
}

function isLatchCookie(name: string): name is LatchCookieName {
  return (LATCH_COOKIES as readonly string[]).includes(name);
}

/** `initial`: the cookies to start from, the browser's when server code forwards its request. */
export function createSessionCookieJar(initial: Partial<Record<LatchCookieName, string>> = {}): SessionCookieJar {
  const held = new Map<LatchCookieName, string>();
  for (const name of LATCH_COOKIES) {
    const value = initial[name];
    if (value !== undefined && value !== "") held.set(name, value);
  }
  return {
    header: () => (held.size === 0 ? undefined : [...held].map(([name, value]) => `${name}=${value}`).join("; ")),
    update(headers) {
      for (const line of headers.getSetCookie()) {
        const [pair = "", ...attributes] = line.split(";");
        const separator = pair.indexOf("=");
        const name = separator < 0 ? "" : pair.slice(0, separator).trim();
        if (!isLatchCookie(name)) continue;
        const value = pair.slice(separator + 1).trim();
        // Max-Age wins over Expires (RFC 6265 5.3), which isExpired follows by checking it first.
        if (value === "" || isExpired(attributes, Date.now())) held.delete(name);
        else held.set(name, value);
      }
    },
  };
}
