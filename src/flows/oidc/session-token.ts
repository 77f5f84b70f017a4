/**
 * contract.md#d28, decisions.md#session-tokens: `POST /auth/session/token`, a short-lived JWT of the
 * current session for a tenant's backends, which verify it at the edge with the tenant's JWKS
 * instead of calling `GET /auth/session`. Signed by jose with the tenant's current ES256 key; its
 * `typ` (RFC 8725 section 3.11) sets it apart from ID and access tokens signed by the same keys.
 */
import { issuerOf } from "./issuer.js";
import { SignJWT } from "jose";
import { toTimestamp } from "../../core/schema.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { Tenant } from "../../model.js";
import { SESSION_TOKEN_LIFETIME_MS } from "../../rules.js";
import type { ActiveSession } from "../kernel/sessions.js";
import { signingKeyCache } from "./signing-keys.js";

/** The JOSE header `typ` of a session token: a verifier requires it, so no other token of the tenant passes as one. */
export const SESSION_TOKEN_TYPE = "latch-session+jwt";
const SESSION_TOKEN_ALG = "ES256";

export interface IssuedSessionToken {
  token: string;
  /** When `exp` is (docs/api-conventions.md#times). */
  expiresAt: string;
}

/**
 * The token of a live session. A session whose member must first change the password or turn on the
 * tenant's required 2FA gets none (decisions.md#session-tokens): a backend that verifies at the edge
 * never sees those flags, so a token would open it to a session the tenant's own pages still hold back.
 */
export async function issueSessionToken(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<IssuedSessionToken> {
  if (session.data.passwordChangePending) throw new AuthError("password_change_required");
  if (session.data.require2FASetup) {
    throw new AuthError("invalid_state", { message: "This site requires two-factor authentication: turn it on first." });
  }
  // The public id names the session (as in GET /auth/sessions and the webhooks); never the cookie or its hash.
  const sid = await deps.store.sessions.findPublicId(tenant.id, session.idHash);
  if (sid === undefined) throw new AuthError("unauthorized"); // ended meanwhile
  const now = deps.clock.now();
  // The tenant's cached key set (decisions.md#session-tokens): its current ES256 key, imported once, and a rotation seen within SIGNING_KEY_RECHECK_MS.
  const { kid, key: privateKey } = await (await signingKeyCache(deps).forTenant(tenant)).signingKey(SESSION_TOKEN_ALG);
  const iat = Math.floor(now / 1000);
  // Whole seconds, rounded down: the token never outlives its session.
  const exp = Math.floor(Math.min(now + SESSION_TOKEN_LIFETIME_MS, session.data.exp * 1000) / 1000);
  const token = await new SignJWT({ sid, amr: session.amr, auth_time: Math.floor(session.createdAt / 1000) })
    .setProtectedHeader({ alg: SESSION_TOKEN_ALG, kid, typ: SESSION_TOKEN_TYPE })
    .setIssuer(issuerOf(deps, tenant))
    // The hostname, not the issuer URL (decisions.md#session-tokens): no access token's audience is a bare hostname.
    .setAudience(tenant.domain)
    .setSubject(String(session.memberId))
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(privateKey);
  return { token, expiresAt: toTimestamp(exp * 1000) };
}
