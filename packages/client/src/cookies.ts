/**
 * The "memory" cookie mode for Node, where fetch has no cookie jar: the one cookie Latch sets,
 * `session_id`, kept from Set-Cookie and sent back as Cookie. Only that cookie, and no Domain
 * or Path matching: a client talks to one Latch.
 */
const SESSION_COOKIE = "session_id";

export interface SessionCookieJar {
  /** The Cookie header to send, if a session is held. */
  header(): string | undefined;
  /** Reads the answer's Set-Cookie headers: keeps a new session_id, forgets a cleared one. */
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

/** `initial`: a session to start from, the browser's when server code forwards its request. */
export function createSessionCookieJar(initial?: string): SessionCookieJar {
  let sessionId = initial;
  return {
    header: () => (sessionId === undefined ? undefined : `${SESSION_COOKIE}=${sessionId}`),
    update(headers) {
      for (const line of headers.getSetCookie()) {
        const [pair = "", ...attributes] = line.split(";");
        const separator = pair.indexOf("=");
        if (separator < 0 || pair.slice(0, separator).trim() !== SESSION_COOKIE) continue;
        const value = pair.slice(separator + 1).trim();
        // Max-Age wins over Expires (RFC 6265 5.3), which isExpired follows by checking it first.
        sessionId = value === "" || isExpired(attributes, Date.now()) ? undefined : value;
      }
    },
  };
}
