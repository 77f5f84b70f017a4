/**
 * The dev tenant's JSON API, called the way an application's backend would (fetch, Host =
 * localhost:<port>), to set up what a page test then looks at in the browser.
 */
import assert from "node:assert/strict";
import { solveChallenge, type Challenge, type Solution } from "altcha-lib";
import { deriveKey as derivePbkdf2 } from "altcha-lib/algorithms/pbkdf2";
import { deriveKey as deriveSha } from "altcha-lib/algorithms/sha";
import { totpAt } from "../../support/totp.js";
import type { DevServer } from "./dev-server.js";

export const E2E_PASSWORD = "Correct-Horse-Battery-9";

export interface InboxEmail {
  id: string;
  eventType: string;
  subject: string;
  to: { email: string; name: string };
  link: string | null;
  /** D26: a magic_login email's 6-digit code. */
  code: string | null;
}

/** One call to the dev server's API, with the session cookie when one is given. */
export async function callApi(server: DevServer, method: "GET" | "POST", path: string, body?: unknown, session?: string): Promise<Response> {
  return fetch(`${server.baseURL}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...(session ? { cookie: `session_id=${session}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function callJson<T>(server: DevServer, method: "GET" | "POST", path: string, body?: unknown, session?: string): Promise<T> {
  const response = await callApi(server, method, path, body, session);
  const text = await response.text();
  assert.equal(response.status, 200, `${method} ${path}: ${text}`);
  return JSON.parse(text) as T;
}

/**
 * What the ALTCHA widget sends: the dev server asks for the production proof of work (a few
 * seconds of PBKDF2 in Node), so the counter range is split between two solvers that run on the
 * thread pool side by side; the first to find it stops the other.
 */
export async function solveBotChallenge(server: DevServer): Promise<string> {
  const challenge = await callJson<Challenge>(server, "GET", "/auth/bot-challenge");
  const deriveKey = challenge.parameters.algorithm === "SHA-256" ? deriveSha : derivePbkdf2;
  const controller = new AbortController();
  const solvers = [0, 1].map((start) =>
    solveChallenge({ challenge, deriveKey, controller, counterStart: start, counterStep: 2 }).then(
      (solution) => solution ?? Promise.reject(new Error("no solution")),
    ),
  );
  const solution: Solution = await Promise.any(solvers);
  controller.abort();
  await Promise.allSettled(solvers);
  return Buffer.from(JSON.stringify({ challenge, solution })).toString("base64");
}

/** Registers a member of the dev tenant with a password; its verification email goes to the dev inbox. */
export async function registerDevMember(server: DevServer, email: string, name: string): Promise<string> {
  const body = { email, name, password: E2E_PASSWORD, "bot-challenge-response": await solveBotChallenge(server) };
  return (await callJson<{ recordid: string }>(server, "POST", "/auth/register-password", body)).recordid;
}

/** The dev inbox's messages, newest first. */
export async function readInbox(server: DevServer): Promise<InboxEmail[]> {
  return (await callJson<{ messages: InboxEmail[] }>(server, "GET", "/dev/inbox.json")).messages;
}

export interface WaitForEmailOptions {
  timeoutMs?: number;
  /** Ids of emails already seen: an earlier email of the same kind to the same address is not the one awaited. */
  excluding?: ReadonlySet<string>;
}

/** Polls the inbox until an email of `eventType` to `to` arrives (the dispatcher delivers within about a second). */
export async function waitForEmail(
  server: DevServer,
  eventType: string,
  to: string,
  { timeoutMs = 15_000, excluding = new Set() }: WaitForEmailOptions = {},
): Promise<InboxEmail> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const email = (await readInbox(server)).find((m) => m.eventType === eventType && m.to.email === to && !excluding.has(m.id));
    if (email) return email;
    if (performance.now() > deadline) assert.fail(`no ${eventType} email to ${to} in the dev inbox after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * A verified member of the dev tenant with 2FA on, set up through the API as an application would
 * (register, the inbox's link, login, 2FA setup and enable); returns its recovery codes. A
 * recovery code, not a TOTP, is what a page test should use next: the enable code's time step is spent.
 */
export async function verifiedDevMemberWithTwoFactor(server: DevServer, email: string, name: string): Promise<string[]> {
  await verifiedDevMember(server, email, name);
  const session = await signInDevMember(server, email);
  const { secret } = await callJson<{ secret: string }>(server, "POST", "/auth/2fa/setup", { password: E2E_PASSWORD }, session);
  return (await callJson<{ recoveryCodes: string[] }>(server, "POST", "/auth/2fa/enable", { code: totpAt(secret, Date.now()) }, session)).recoveryCodes;
}

/** A verified member of the dev tenant: registered, and its inbox link used through the API. */
export async function verifiedDevMember(server: DevServer, email: string, name: string): Promise<void> {
  await registerDevMember(server, email, name);
  const [recordId, token] = new URL((await waitForEmail(server, "verify_email", email)).link!).pathname.split("/").slice(-2);
  await callJson(server, "POST", "/auth/verify-email", { recordId, token });
}

/** Logs a dev member in through the API (a solved bot check, their password); returns the session cookie's value. */
export async function signInDevMember(server: DevServer, email: string): Promise<string> {
  const login = await callApi(server, "POST", "/auth/login", { email, password: E2E_PASSWORD, "bot-challenge-response": await solveBotChallenge(server) });
  assert.equal(login.status, 200, await login.text());
  const session = /session_id=([^;]+)/.exec(login.headers.get("set-cookie") ?? "")?.[1];
  assert.ok(session, "the login sets the session cookie");
  return session;
}
