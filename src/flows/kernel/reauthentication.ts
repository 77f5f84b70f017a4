/**
 * contract.md#d24's re-authentication, shared by every change a stolen session must not make alone (email
 * change, deletion, adding a passkey, turning on 2FA): the member's row locked for the session that
 * asks, the first factor proved again and, when it is on, the second. Turning 2FA on needs only
 * the first (`reauthenticateFirstFactor`), since the second is off then.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import { describeDuration, FRESH_SESSION_MS } from "../../rules.js";
import type { Store } from "../../store/index.js";
import { checkCurrentPassword } from "./password-attempts.js";
import { verifySecondFactor } from "./second-factor.js";
import type { ActiveSession } from "./sessions.js";

export interface Reauthentication {
  password?: string;
  twoFACode?: string;
}

export const INCORRECT_PASSWORD = "The password is incorrect.";

export function missingField(field: "password" | "twoFACode", message: string): AuthError {
  return new AuthError("validation_failed", { message, details: [{ field, rule: "required", message: `${field} is required` }] });
}

/** contract.md#d24: a member without a password re-authenticates with a session at most FRESH_SESSION_MS old. */
export function isFreshSession(session: ActiveSession, now: number): boolean {
  return now - session.createdAt <= FRESH_SESSION_MS;
}

/**
 * Inside a transaction: the session's member, row locked first (contract.md#d20's lock order), while the
 * session is still live and the member not locked; 401 otherwise (it ended while we worked).
 */
export async function lockSessionMember(tx: Store, tenant: Tenant, session: ActiveSession, now: number): Promise<Member> {
  const member = await tx.members.findMemberById(tenant.id, session.memberId, { lock: true });
  if (!member || member.status === MemberStatus.locked || !(await tx.sessions.findLiveSession(tenant.id, session.idHash, now)))
    throw new AuthError("unauthorized");
  return member;
}

/**
 * The first factor again: the password when the member has one (behind the login lockout), else a
 * session at most FRESH_SESSION_MS old. Never with a password in Password Change Pending: it is the one
 * flagged as compromised (403 password_change_required). The caller checks again, on the locked
 * row, that the password it was decided on is still the member's (contract.md#d20).
 */
export async function reauthenticateFirstFactor(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  member: Member,
  password: string | undefined,
  context: RequestContext,
): Promise<void> {
  // A password the site (or "this wasn't me") flagged may be someone else's: it proves nothing.
  if (member.status === MemberStatus.passwordChangePending && member.passwordHash !== null) {
    throw new AuthError("password_change_required", { message: "Choose a new password first: your current one may be known to someone else." });
  }
  if (member.passwordHash !== null) {
    if (password === undefined) throw missingField("password", "Enter your password to confirm it's you.");
    await checkCurrentPassword(deps, tenant, member, password, context, { message: INCORRECT_PASSWORD });
  } else if (!isFreshSession(session, deps.clock.now())) {
    throw new AuthError("unauthorized", { message: `Sign in again to confirm it's you, then retry within ${describeDuration(FRESH_SESSION_MS)}.` });
  }
}

/**
 * contract.md#d24 re-authentication before a change that a stolen session must not make alone: the first
 * factor again (reauthentication.ts), and the second factor when it is on.
 */
export async function reauthenticate(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  member: Member,
  input: Reauthentication,
  context: RequestContext,
): Promise<void> {
  await reauthenticateFirstFactor(deps, tenant, session, member, input.password, context);
  if (member.twoFactorStatus === "Enabled") {
    if (input.twoFACode === undefined) throw missingField("twoFACode", "Enter a two-factor code to confirm it's you.");
    await verifySecondFactor(deps, tenant, member, input.twoFACode, context, deps.clock.now());
  }
}
