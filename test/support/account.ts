/**
 * Helpers for the tests of a signed-in member's account (D24, D30): a member on a tenant that sends
 * security alerts (and lifecycle events, unless told) to the harness's receiver, signing in,
 * calling a session route, and reading the alerts and events delivered so far.
 */
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { ok } from "./assertions.js";
import { lastWebhookFor, nextIp, storeTenantSettings } from "./flows.js";
import {
  createHarness,
  deliverWebhooks,
  login,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  settle,
  STRONG_PASSWORD,
  type Harness,
} from "./harness.js";

export const EMAIL = "ada@example.org";

/** Points the harness tenant's securityAlertWebhook (`/alerts`) and eventsWebhook (`/events`) at the receiver. */
export async function sendAlertsAndEvents(h: Harness, settings: Record<string, unknown> = {}): Promise<void> {
  await storeTenantSettings(h, { securityAlertWebhook: `${h.receiver.url}/alerts`, eventsWebhook: `${h.receiver.url}/events`, ...settings });
}

export interface MemberOptions {
  /** The member's email: EMAIL unless told. */
  email?: string;
  /** More tenant settings, written with the webhooks. */
  settings?: Record<string, unknown>;
  /** False: the tenant sends security alerts only, no lifecycle events. */
  events?: boolean;
  /** How the member signs in: `signIn` (the JSON API, a fresh IP, user agent Browser/1) unless told; returns the cookie. */
  signIn?: (h: Harness, email: string) => Promise<string>;
}

/** A harness whose tenant sends alerts (and events), with a verified member (EMAIL) signed in. */
export async function member(
  t: { after(fn: () => Promise<void>): void },
  options: MemberOptions = {},
): Promise<{ h: Harness; recordId: string; cookie: string }> {
  const { email = EMAIL, settings = {}, events = true } = options;
  const h = await createHarness();
  t.after(() => h.close());
  if (events) await sendAlertsAndEvents(h, settings);
  else await storeTenantSettings(h, { securityAlertWebhook: `${h.receiver.url}/alerts`, ...settings });
  const recordId = await registerVerifiedMember(h, email);
  const cookie = await (options.signIn ?? signIn)(h, email);
  return { h, recordId, cookie };
}

/** Logs in from a fresh IP (it must answer 200); returns the session cookie. */
export async function signIn(h: Harness, email: string, password = STRONG_PASSWORD, userAgent = "Browser/1"): Promise<string> {
  const res = await login(h, email, password, { ip: nextIp(), headers: { "user-agent": userAgent } });
  assert.equal(res.statusCode, 200, res.body);
  return sessionCookieOf(res)!;
}

/** A call with the session cookie (when given), waiting for the work it left behind. */
export function call(
  h: Harness,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  cookie: string | undefined,
  body?: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return h.app
    .inject({
      method,
      url,
      ...(body === undefined ? {} : { payload: body }),
      remoteAddress: "203.0.113.10",
      headers: { "x-tenant-domain": h.tenant.domain, ...(cookie ? { cookie: `session_id=${cookie}` } : {}), ...headers },
    })
    .then(async (res) => {
      await settle(h);
      return res;
    });
}

/** Every lifecycle event delivered so far (D25). */
export async function events(h: Harness): Promise<Record<string, string>[]> {
  await deliverWebhooks(h);
  return h.receiver.received.filter((w) => w.path === "/events").map((w) => w.body);
}

/** Every security alert delivered so far (D16). */
export async function alerts(h: Harness): Promise<Record<string, string>[]> {
  await deliverWebhooks(h);
  return h.receiver.ofType("security_alert").map((w) => w.body);
}

/** The "this wasn't me" link of the newest alert of this kind sent to `email`. */
export async function secureLinkOf(h: Harness, alert: string, email: string): Promise<{ recordId: string; token: string }> {
  const found = (await alerts(h)).filter((a) => a.alert === alert && a.email === email).at(-1);
  assert.ok(found, `no ${alert} alert to ${email}`);
  return parseLink(found.secureAccountLink!);
}

/** Asks to change the session's email (re-authenticated by `password` when given) and confirms it through the new mailbox. */
export async function changeEmail(h: Harness, cookie: string, newEmail: string, password?: string): Promise<void> {
  ok(await call(h, "POST", "/auth/change-email", cookie, { newEmail, ...(password === undefined ? {} : { password }) }));
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "email_change", newEmail).body.verificationLink!);
  ok(await post(h, "/auth/confirm-email-change", { recordId: link.recordId, token: link.token }, { cookie }));
}
