/**
 * Small request helpers shared by the test files: client addresses, the tenant's admin key and
 * the operator key, registering (by password or magic link) and verifying, logging in, changing a
 * password, locking a member, forgot/reset password, webhook lookups, the session, enrolling in
 * 2FA, admin calls, the tenant's id and settings, and a second tenant.
 */
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { createTenant } from "../../src/flows/tenants/tenants.js";
import { SECOND } from "../../src/core/clock.js";
import { assertRecoveryCodes } from "./assertions.js";
import { totpAt } from "./totp.js";
import {
  deliverWebhooks,
  get,
  login,
  OPERATOR_KEY,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
  type PostOptions,
  type ReceivedWebhook,
} from "./harness.js";

/** A password that is no member's. */
export const WRONG_PASSWORD = "Wrong-Guess-99-Pass";

/** A third password that passes the policy, for tests that change a password twice. */
export const THIRD_STRONG_PASSWORD = "Quiet-Lantern-77-Orbit";

/** The domain addOtherTenant gives its tenant. */
export const OTHER_DOMAIN = "other.example.com";

let ipCounter = 0;
/** A fresh client address, so per-IP limits never get in the way of a test about something else. */
export function nextIp(): string {
  ipCounter += 1;
  return `198.51.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

/** The harness tenant's internal API key (its application's admin key). */
export function internalApiKeyOf(h: Harness): string {
  const key = h.tenant.internalApiKey;
  assert.ok(key, "harness tenant has no internal API key");
  return key;
}

/** Authorization for the admin endpoints with the harness tenant's key. */
export function adminHeaders(h: Harness): Record<string, string> {
  return { authorization: `Bearer ${internalApiKeyOf(h)}` };
}

/** Authorization for the operator API. */
export function operatorHeaders(): Record<string, string> {
  return { authorization: `Bearer ${OPERATOR_KEY}` };
}

/** How a test registers: the request's options, and the member's name ("Ada Lovelace" unless told). */
export interface RegisterOptions extends PostOptions {
  name?: string;
}

/** POST /auth/register-password, from a fresh IP unless options say otherwise. */
export async function register(h: Harness, email: string, password = STRONG_PASSWORD, options: RegisterOptions = {}): Promise<LightMyRequestResponse> {
  const { name = "Ada Lovelace", ...postOptions } = options;
  return post(h, "/auth/register-password", { email, name, password, "bot-challenge-response": "x" }, { ip: nextIp(), ...postOptions });
}

/** Registers and delivers; returns the verification link's parts (member stays pending). */
export async function registerPending(
  h: Harness,
  email: string,
  password = STRONG_PASSWORD,
  options: RegisterOptions = {},
): Promise<{ recordId: string; token: string }> {
  const res = await register(h, email, password, options);
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "verify_email", email, options.domain ?? h.tenant.domain).body.verificationLink!);
  return { recordId: link.recordId, token: link.token };
}

/** POST /auth/register-magic-link as "Grace Hopper", from a fresh IP unless options say otherwise. */
export async function registerMagic(h: Harness, email: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/register-magic-link", { email, name: "Grace Hopper", "bot-challenge-response": "x" }, { ip: nextIp(), ...options });
}

/** POST /auth/verify-email with a link's parts. */
export async function verify(h: Harness, recordId: string, token: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/verify-email", { recordId, token }, options);
}

/** Logs in (it must answer 200) and returns the session cookie's value. */
export async function loginCookie(h: Harness, email: string, password = STRONG_PASSWORD, options: PostOptions = {}): Promise<string> {
  const res = await login(h, email, password, options);
  assert.equal(res.statusCode, 200, res.body);
  const cookie = sessionCookieOf(res);
  assert.ok(cookie, "no session cookie");
  return cookie;
}

/** A verified member (registered from the harness's default address), logged in; the login must answer 200. */
export async function signedInMember(h: Harness, email: string): Promise<{ recordId: string; cookie: string }> {
  const recordId = await registerVerifiedMember(h, email);
  return { recordId, cookie: await loginCookie(h, email) };
}

/** POST /auth/change-password with the session cookie (none: undefined). */
export async function changePassword(h: Harness, cookie: string | undefined, currentPassword: string, newPassword: string): Promise<LightMyRequestResponse> {
  return post(h, "/auth/change-password", { currentPassword, newPassword }, cookie === undefined ? {} : { cookie });
}

/** Locks the member through the admin endpoint; it must answer 200. */
export async function lockMember(h: Harness, recordId: string): Promise<void> {
  const res = await post(h, "/auth/lock-account", { recordId, action: "lock" }, { headers: adminHeaders(h) });
  assert.equal(res.statusCode, 200, res.body);
}

export async function forgotPassword(h: Harness, email: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/forgot-password", { email, "bot-challenge-response": "x" }, options);
}

export async function resetPassword(
  h: Harness,
  recordId: string,
  token: string,
  newPassword: string,
  options: PostOptions = {},
): Promise<LightMyRequestResponse> {
  return post(h, "/auth/reset-password", { recordId, token, newPassword }, options);
}

/** Asks for a reset (it must answer 200) and returns the link's parts from the delivered password_reset webhook. */
export async function requestResetLink(h: Harness, email: string): Promise<{ recordId: string; token: string }> {
  const res = await forgotPassword(h, email);
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "password_reset", email).body.resetLink!);
  return { recordId: link.recordId, token: link.token };
}

export async function requestMagicLink(h: Harness, email: string, options: PostOptions = {}): Promise<LightMyRequestResponse> {
  return post(h, "/auth/request-magic-link", { email, "bot-challenge-response": "x" }, options);
}

/** Requests a link, delivers the magic_login webhook, returns the link's parts. */
export async function magicLinkFor(
  h: Harness,
  email: string,
  options: PostOptions = {},
): Promise<{ recordId: string; token: string; link: string; code: string }> {
  const res = await requestMagicLink(h, email, options);
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const body = lastWebhookFor(h, "magic_login", email, options.domain ?? h.tenant.domain).body;
  const parts = parseLink(body.magicLoginLink!);
  return { recordId: parts.recordId, token: parts.token, link: body.magicLoginLink!, code: body.code! };
}

/** The received webhooks of one type for one email; with a domain, only those whose link is on it. */
export function webhooksFor(h: Harness, eventType: string, email: string, domain?: string): ReceivedWebhook[] {
  return h.receiver.ofType(eventType).filter((w) => {
    if (w.body.email !== email) return false;
    if (domain === undefined) return true;
    const link = w.body.verificationLink ?? w.body.resetLink ?? w.body.magicLoginLink ?? "";
    return new URL(link).hostname === domain;
  });
}

export function lastWebhookFor(h: Harness, eventType: string, email: string, domain?: string): ReceivedWebhook {
  const hook = webhooksFor(h, eventType, email, domain).at(-1);
  assert.ok(hook, `no ${eventType} webhook for ${email}`);
  return hook;
}

/** The status GET /auth/session answers for the cookie. */
export async function sessionStatus(h: Harness, cookie: string, options: PostOptions = {}): Promise<number> {
  return (await get(h, "/auth/session", { cookie, ...options })).statusCode;
}

/** GET /auth/session, which must answer 200; returns its body. */
export async function sessionData(h: Harness, cookie: string, options: PostOptions = {}): Promise<Record<string, unknown>> {
  const res = await get(h, "/auth/session", { cookie, ...options });
  assert.equal(res.statusCode, 200, res.body);
  return res.json<Record<string, unknown>>();
}

/** Tenant settings whose three webhooks go to the harness's receiver, with no bot protection. */
export function receiverSettings(h: Harness) {
  return {
    emailVerificationWebhook: `${h.receiver.url}/verify`,
    passwordResetWebhook: `${h.receiver.url}/reset`,
    magicLoginWebhook: `${h.receiver.url}/magic`,
    botProtection: { provider: "none" as const },
  };
}

/** The id of the tenant on `domain` (the harness's own unless told), which must exist. */
export async function tenantIdOf(h: Harness, domain = h.tenant.domain): Promise<string> {
  const tenant = await h.deps.store.tenants.findTenantByDomain(domain);
  assert.ok(tenant, `no tenant ${domain}`);
  return tenant.id;
}

/**
 * Writes `changes` over the tenant's settings straight into the store (no validation: as a version
 * before a rule could have, or to turn on a webhook in one line), and drops the cached tenant.
 */
export async function storeTenantSettings(h: Harness, changes: Record<string, unknown>, domain = h.tenant.domain): Promise<void> {
  const tenant = await h.deps.store.tenants.findTenantByDomain(domain);
  assert.ok(tenant, `no tenant ${domain}`);
  assert.ok(await h.deps.store.tenants.updateTenantSettings(tenant.id, tenant.settings, { ...tenant.settings, ...changes }, h.clock.now()));
  h.deps.tenantCache.invalidate(domain);
}

/** A second tenant, on OTHER_DOMAIN unless told, whose webhooks go to the harness's receiver. */
export async function addOtherTenant(h: Harness, domain = OTHER_DOMAIN): Promise<void> {
  await createTenant(h.deps, { domain, settings: receiverSettings(h) });
}

/**
 * Enrols the member in 2FA through a session, re-authenticating with `password` at setup (D30; a
 * member without a password needs a session under 10 minutes old instead), with a code from the
 * independent TOTP; the enable answer must be the ten recovery codes (assertRecoveryCodes).
 * Returns the secret and the codes. The clock then moves one step on, so the enrolment step is
 * not a replay.
 */
export async function enrolTwoFactor(h: Harness, cookie: string, password = STRONG_PASSWORD): Promise<{ secret: string; recoveryCodes: string[] }> {
  const setup = await post(h, "/auth/2fa/setup", { password }, { cookie });
  assert.equal(setup.statusCode, 200, setup.body);
  const secret = setup.json<{ secret: string }>().secret;
  const recoveryCodes = assertRecoveryCodes(await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie }));
  // The enrolment code's step is now used: move on so the next code is fresh.
  h.clock.advance(30 * SECOND);
  return { secret, recoveryCodes };
}

/** An admin call as a tenant's backend makes it: the tenant's domain and, unless `key` says otherwise, its admin key. */
export interface AdminOptions {
  key?: string | null;
  domain?: string;
}

export function adminRequestHeaders(h: Harness, options: AdminOptions): Record<string, string> {
  const key = options.key === undefined ? internalApiKeyOf(h) : options.key;
  return {
    "x-tenant-domain": options.domain ?? h.tenant.domain,
    ...(key === null ? {} : { authorization: `Bearer ${key}` }),
  };
}

/** An admin call with any method (a body only when given); it does not wait for the work the call left behind. */
export function adminRequest(
  h: Harness,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  body?: unknown,
  options: AdminOptions = {},
): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method,
    url,
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
    remoteAddress: "198.51.100.7",
    headers: adminRequestHeaders(h, options),
  });
}

export function adminPost(h: Harness, url: string, body: unknown, options: AdminOptions = {}): Promise<LightMyRequestResponse> {
  return adminRequest(h, "POST", url, body, options);
}

export function adminGet(h: Harness, url: string, options: AdminOptions = {}): Promise<LightMyRequestResponse> {
  return adminRequest(h, "GET", url, undefined, options);
}
