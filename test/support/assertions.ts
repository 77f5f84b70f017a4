/**
 * Assertions on HTTP answers shared by the test files: a 200 and its body, the D4 error body, the
 * D5 plain success body, Retry-After, record ids, tokens, the session cookie, 2FA recovery codes
 * and the failed password rules.
 */
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { sessionCookieOf } from "./harness.js";

const BASE64URL_32_BYTES = /^[A-Za-z0-9_-]{43}$/;
const RECOVERY_CODE_FORM = /^[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}-[a-z0-9]{4}$/;

/** A 200; returns its JSON body. */
export function ok<T = Record<string, unknown>>(res: LightMyRequestResponse): T {
  assert.equal(res.statusCode, 200, res.body);
  return res.json<T>();
}

/** D4: every non-2xx body is { success:false, code, message, requestId } (+ extras); returns the body. */
export function assertError(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  assert.equal(res.statusCode, status, res.body);
  const body = res.json<Record<string, unknown>>();
  assert.equal(body.success, false, res.body);
  assert.equal(body.code, code, res.body);
  assert.equal(typeof body.message, "string", res.body);
  assert.ok((body.message as string).length > 0, res.body);
  assert.equal(typeof body.requestId, "string", res.body);
  assert.ok((body.requestId as string).length > 0, res.body);
  return body;
}

/** D4 with no extras: the body has only success, code, message, requestId and, if given, details. */
export function assertErrorNoExtras(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  const body = assertError(res, status, code);
  const allowed = new Set(["success", "code", "message", "requestId", "details"]);
  for (const key of Object.keys(body)) assert.ok(allowed.has(key), `unexpected key ${key} in ${res.body}`);
  return body;
}

/** A refused /auth/login: the error body plus authorized:false, and no session cookie. */
export function assertLoginRefused(res: LightMyRequestResponse, status: number, code: string): Record<string, unknown> {
  const body = assertError(res, status, code);
  assert.equal(body.authorized, false, res.body);
  assert.equal(sessionCookieOf(res), undefined, "no session cookie on a refusal");
  return body;
}

/** D5: 200 with exactly `keys` (success among them), success:true and a non-empty message; returns the body. */
export function assertSuccessBody(res: LightMyRequestResponse, keys: string[]): Record<string, unknown> {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<Record<string, unknown>>();
  assert.deepEqual(Object.keys(body).sort(), [...keys].sort(), res.body);
  assert.equal(body.success, true);
  assert.equal(typeof body.message, "string");
  assert.ok((body.message as string).length > 0);
  return body;
}

/** D5: 200 with exactly { success:true, message }. */
export function assertMessageSuccess(res: LightMyRequestResponse): void {
  assertSuccessBody(res, ["message", "success"]);
}

/** verify-email's 200 (D18): { success, message, passwordSet }; checks passwordSet when given. */
export function assertVerified(res: LightMyRequestResponse, passwordSet?: boolean): void {
  const body = assertSuccessBody(res, ["message", "passwordSet", "success"]);
  if (passwordSet !== undefined) assert.equal(body.passwordSet, passwordSet, res.body);
}

/** D5: a registration's 200 with exactly { success:true, message, recordid } and a valid record id; returns the body. */
export function assertRegistered(res: LightMyRequestResponse): { success: true; message: string; recordid: string } {
  const body = assertSuccessBody(res, ["message", "recordid", "success"]);
  assertRecordId(body.recordid);
  return body as { success: true; message: string; recordid: string };
}

/** The Retry-After header, which must be there and be whole seconds. */
export function retryAfterOf(res: LightMyRequestResponse): number {
  const header = res.headers["retry-after"];
  assert.ok(header !== undefined, `no Retry-After header: ${res.statusCode} ${res.body}`);
  assert.match(String(header), /^[0-9]+$/);
  return Number(header);
}

/** A record id: a decimal string of a safe integer in [1e14, 2^53); returns it. */
export function assertRecordId(value: unknown): string {
  assert.equal(typeof value, "string");
  const id = value as string;
  assert.match(id, /^[0-9]+$/);
  const n = Number(id);
  assert.ok(Number.isSafeInteger(n), `${id} is not a safe integer`);
  assert.ok(n >= 1e14 && n < 2 ** 53, `${id} is outside [1e14, 2^53)`);
  return id;
}

/** A token: 32 random bytes in base64url without padding. */
export function assertToken(token: string): void {
  assert.match(token, BASE64URL_32_BYTES);
  assert.equal(Buffer.from(token, "base64url").length, 32);
}

/** Every Set-Cookie header of the answer (none: an empty list). */
export function setCookieHeaders(res: LightMyRequestResponse): string[] {
  const raw = res.headers["set-cookie"];
  return raw === undefined ? [] : Array.isArray(raw) ? raw : [String(raw)];
}

/** The session_id Set-Cookie header split into its value and lowercased attributes. */
export function sessionSetCookie(res: LightMyRequestResponse): { value: string; attributes: string[] } {
  const all = setCookieHeaders(res);
  const header = all.find((c) => c.startsWith("session_id="));
  assert.ok(header, `no session_id Set-Cookie in ${JSON.stringify(all)}`);
  const [pair, ...attributes] = header.split(";").map((part) => part.trim());
  return { value: pair!.slice("session_id=".length), attributes: attributes.map((a) => a.toLowerCase()) };
}

/** 2FA enable's or regenerate's 200: exactly { success:true, recoveryCodes } with ten distinct codes of the form xxxx-xxxx-xxxx-xxxx; returns them. */
export function assertRecoveryCodes(res: LightMyRequestResponse): string[] {
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<Record<string, unknown>>();
  assert.deepEqual(Object.keys(body).sort(), ["recoveryCodes", "success"], res.body);
  assert.equal(body.success, true);
  assert.ok(Array.isArray(body.recoveryCodes));
  const codes = body.recoveryCodes as string[];
  assert.equal(codes.length, 10);
  assert.equal(new Set(codes).size, 10, "recovery codes are distinct");
  for (const code of codes) assert.match(code, RECOVERY_CODE_FORM);
  return codes;
}

/** The rules a weak_password body lists: details may name them or hold objects naming the rule; either way, the sorted set. */
export function failedRulesOf(body: Record<string, unknown>): string[] {
  assert.ok(Array.isArray(body.details), `details is not a list: ${JSON.stringify(body)}`);
  return (body.details as unknown[]).map((d) => (typeof d === "string" ? d : String((d as { rule?: unknown }).rule))).sort();
}
