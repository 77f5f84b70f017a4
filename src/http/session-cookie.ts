/** The session cookie exactly as contract.md#spec-2-2 and contract.md#d6 give it: no Domain attribute. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { findActiveSession, type ActiveSession, type IssuedSession } from "../flows/kernel/sessions.js";
import { SESSION_COOKIE } from "./tenant.js";

const cookieFlags = { httpOnly: true, secure: true, sameSite: "lax", path: "/" } as const;

export function setSessionCookie(reply: FastifyReply, session: IssuedSession): void {
  void reply.setCookie(SESSION_COOKIE, session.sessionId, { ...cookieFlags, maxAge: session.maxAgeSeconds });
}

export function clearSessionCookie(reply: FastifyReply): void {
  void reply.clearCookie(SESSION_COOKIE, cookieFlags);
}

/** The Set-Cookie line that clears it, for an answer Fastify does not send itself (the OpenID Provider's hijacked reply). */
export function clearedSessionCookieLine(app: FastifyInstance): string {
  return app.serializeCookie(SESSION_COOKIE, "", { ...cookieFlags, expires: new Date(0) });
}

export async function requireSession(deps: Deps, request: FastifyRequest): Promise<ActiveSession> {
  const session = await findActiveSession(deps, request.tenant, request.cookies[SESSION_COOKIE]);
  if (!session) throw new AuthError("unauthorized");
  return session;
}
