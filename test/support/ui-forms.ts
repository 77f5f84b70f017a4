/**
 * Driving the hosted pages as a browser without JavaScript would: GET a page, POST its form as
 * application/x-www-form-urlencoded with the page's Origin, follow nothing automatically; sign in
 * by the login form.
 */
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { PAGE_CSP } from "../../src/ui/layout.js";
import { nextIp } from "./flows.js";
import { sessionCookieOf, settle, STRONG_PASSWORD, type Harness } from "./harness.js";

export const UI_IP = "203.0.113.77";

export interface UiRequestOptions {
  /** The session id, sent as the session_id cookie. */
  cookie?: string;
  /** Other cookies the browser holds for the page (name -> value, sent URI-encoded as set). */
  cookies?: Record<string, string>;
  origin?: string | null;
  domain?: string;
  ip?: string;
}

function headersFor(h: Harness, options: UiRequestOptions): Record<string, string> {
  const domain = options.domain ?? h.tenant.domain;
  const headers: Record<string, string> = { host: domain };
  const cookies = [
    ...(options.cookie ? [`session_id=${options.cookie}`] : []),
    ...Object.entries(options.cookies ?? {}).map(([name, value]) => `${name}=${encodeURIComponent(value)}`),
  ];
  if (cookies.length > 0) headers.cookie = cookies.join("; ");
  const origin = options.origin === undefined ? `https://${domain}` : options.origin;
  if (origin !== null) headers.origin = origin;
  return headers;
}

export async function getPage(h: Harness, url: string, options: UiRequestOptions = {}): Promise<LightMyRequestResponse> {
  const { origin: _origin, ...rest } = options;
  const headers = headersFor(h, { ...rest, origin: null });
  const res = await h.app.inject({ method: "GET", url, headers, remoteAddress: options.ip ?? UI_IP });
  await h.deps.background.drain();
  return res;
}

export async function postForm(h: Harness, url: string, fields: Record<string, string>, options: UiRequestOptions = {}): Promise<LightMyRequestResponse> {
  const res = await h.app.inject({
    method: "POST",
    url,
    payload: new URLSearchParams(fields).toString(),
    headers: { ...headersFor(h, options), "content-type": "application/x-www-form-urlencoded" },
    remoteAddress: options.ip ?? UI_IP,
  });
  await settle(h);
  return res;
}

/** Signs in by the login form from a fresh IP: a 303 to "/" that sets the session cookie; returns the cookie. */
export async function signInOnPage(h: Harness, email: string, password = STRONG_PASSWORD): Promise<string> {
  const res = await postForm(h, "/ui/login", { email, password }, { ip: nextIp() });
  assertSeeOther(res, "/");
  const cookie = sessionCookieOf(res);
  assert.ok(cookie, "login sets the session cookie");
  return cookie;
}

/** A 303 to `location` (post, redirect, get). */
export function assertSeeOther(res: LightMyRequestResponse, location: string | RegExp): string {
  assert.equal(res.statusCode, 303, res.body);
  const actual = String(res.headers.location);
  if (typeof location === "string") assert.equal(actual, location);
  else assert.match(actual, location);
  return actual;
}

/** An HTML page with the hosted pages' security headers. */
export function assertPage(res: LightMyRequestResponse, status = 200): string {
  assert.equal(res.statusCode, status, res.body);
  assert.match(String(res.headers["content-type"]), /^text\/html; charset=utf-8/);
  assert.equal(res.headers["content-security-policy"], PAGE_CSP);
  assert.equal(res.headers["referrer-policy"], "same-origin");
  assert.equal(res.headers["x-content-type-options"], "nosniff");
  assert.equal(res.headers["cache-control"], "no-store");
  return res.body;
}

/** The error summary: role=alert, focused on load, with `message` in it. */
export function assertErrorSummary(body: string, message: RegExp): void {
  const summary = /<div id="error-summary" class="error-summary" role="alert" tabindex="-1" autofocus>([\s\S]*?)<\/div>/.exec(body);
  assert.ok(summary, `no error summary in ${body}`);
  assert.match(summary[1]!, message);
}

/** The value attribute of the input named `name`, unescaped as a browser reads it; undefined when it has none. */
export function inputValue(body: string, name: string): string | undefined {
  const input = new RegExp(`<input[^>]*name="${name}"[^>]*>`).exec(body)?.[0];
  assert.ok(input, `no input ${name}`);
  const value = /value="([^"]*)"/.exec(input)?.[1];
  const entities: Record<string, string> = { "&amp;": "&", "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'" };
  return value?.replace(/&(amp|lt|gt|quot|#39);/g, (e) => entities[e]!);
}
