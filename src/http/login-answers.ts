/**
 * The one internal login outcome (flows/kernel/login-outcome.ts) as each route's contract words it:
 * password and passkey logins answer with `authorized` (contract.md#spec-4-2), magic links and emailed codes
 * with `success` (contract.md#spec-4-4). A signed-in outcome sets the session cookie here, so no route can
 * answer "logged in" without it.
 */
import type { FastifyReply } from "fastify";
import type { LoginOutcome } from "../flows/kernel/login-outcome.js";
import { MAGIC_LOGIN_MESSAGE } from "../flows/login/magic-link.js";
import { setSessionCookie } from "./session-cookie.js";

/** `POST /auth/login` and the passkey login: `LoginAnswer`. */
export function loginAnswer(reply: FastifyReply, outcome: LoginOutcome) {
  if (outcome.kind === "second_factor_required") return { authorized: false as const, two_factor_required: true as const, message: outcome.message };
  setSessionCookie(reply, outcome.session);
  return { authorized: true as const, recordid: String(outcome.recordId), redirectUrl: outcome.redirect };
}

/** The magic link and its emailed code: `MagicLoginAnswer`. */
export function magicLoginAnswer(reply: FastifyReply, outcome: LoginOutcome) {
  if (outcome.kind === "second_factor_required") return { success: false as const, requires2FA: true as const, message: outcome.message };
  setSessionCookie(reply, outcome.session);
  return { success: true as const, message: MAGIC_LOGIN_MESSAGE, redirect: outcome.redirect };
}
