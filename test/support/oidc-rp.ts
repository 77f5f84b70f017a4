/**
 * A relying party and a browser for the tenant's OpenID Provider (test/oidc-provider.test.ts):
 * openid-client's calls and the browser's navigations go to the app through app.inject, with the
 * tenant's Host, so the issuer is https://{domain} as behind the TLS-terminating proxy.
 */
import assert from "node:assert/strict";
import * as client from "openid-client";
import type { Harness } from "./harness.js";

/** Sends a fetch of https://{domain}/… to the app (no socket), as the proxy would. */
export function injectFetch(h: Harness): typeof fetch {
  const fetchLike = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => (headers[name] = value));
    headers.host = url.host;
    const body = request.body ? Buffer.from(await request.arrayBuffer()) : undefined;
    const answer = await h.app.inject({
      method: request.method as "GET",
      url: url.pathname + url.search,
      headers,
      ...(body ? { payload: body } : {}),
    });
    const out = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of [value].flat()) out.append(name, String(one));
    }
    return new Response(answer.statusCode === 204 || answer.statusCode === 304 ? null : answer.rawPayload, { status: answer.statusCode, headers: out });
  };
  return fetchLike;
}

export async function discover(h: Harness, clientId: string, secret?: string, domain = h.tenant.domain): Promise<client.Configuration> {
  return client.discovery(
    new URL(`https://${domain}`),
    clientId,
    secret ? { client_secret: secret } : { token_endpoint_auth_method: "none" },
    secret ? client.ClientSecretBasic(secret) : client.None(),
    { [client.customFetch]: injectFetch(h) },
  );
}

/** A browser without a UI: a cookie jar per origin, following 3xx and Refresh until a URL matches `stop`. */
export class Browser {
  readonly cookies = new Map<string, string>();
  /** Every URL visited, in order. */
  readonly visited: URL[] = [];

  constructor(private readonly h: Harness) {}

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  async request(url: URL, options: { method?: "GET" | "POST"; form?: Record<string, string> } = {}) {
    this.visited.push(url);
    const headers: Record<string, string> = { host: url.host, cookie: this.cookieHeader() };
    let payload: string | undefined;
    if (options.form) {
      headers["content-type"] = "application/x-www-form-urlencoded";
      headers.origin = url.origin;
      payload = new URLSearchParams(options.form).toString();
    }
    const answer = await this.h.app.inject({ method: options.method ?? "GET", url: url.pathname + url.search, headers, ...(payload ? { payload } : {}) });
    for (const cookie of answer.cookies) {
      if (cookie.maxAge === 0 || (cookie.expires && cookie.expires.getTime() < Date.now()) || cookie.value === "") this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
    return answer;
  }

  /** Follows redirects and Refresh from `start`; answers the first URL that `stop` accepts, or the page it stopped on. */
  async follow(start: URL, stop: (url: URL) => boolean, first: { method?: "GET" | "POST"; form?: Record<string, string> } = {}) {
    let url = start;
    let options = first;
    for (let hop = 0; hop < 15; hop++) {
      if (stop(url)) return { url, answer: undefined };
      const answer = await this.request(url, options);
      options = {};
      const refresh = answer.headers.refresh;
      const location = answer.headers.location ?? (typeof refresh === "string" ? /url=(.*)$/i.exec(refresh)?.[1] : undefined);
      if (typeof location !== "string") return { url, answer };
      url = new URL(location, url);
    }
    assert.fail("redirect loop");
  }
}
