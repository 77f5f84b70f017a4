/**
 * D24: what a signed-in member does for themselves: see and rename their profile, see where they
 * are signed in and end those sessions, and delete their account. Every call runs on the member of
 * the session (never a record id from the request), so no call can reach another member or tenant.
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../model.js";
import { normalizeName } from "../security/identity.js";
import type { Store } from "../store/index.js";
import { eraseMember, iso, memberView, recordErasure, type MemberView } from "./member-admin.js";
import { enqueueMemberEvent } from "./member-events.js";
import { checkCurrentPassword } from "./password-attempts.js";
import { findSessionMember, type ActiveSession } from "./sessions.js";
import { verifySecondFactor } from "./two-factor.js";
import { FRESH_SESSION_MS } from "../rules.js";

export interface Reauthentication {
  password?: string;
  twoFACode?: string;
}

/** D24 `/auth/me`: the admin's view of the member (D22) without the last login, and whether they have a password. */
export type MeView = Omit<MemberView, "lastLoginAt"> & { hasPassword: boolean };

export interface SessionView {
  id: string;
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  ip: string | null;
  userAgent: string | null;
  country: string | null;
  current: boolean;
}

function missing(field: "password" | "twoFACode", message: string): AuthError {
  return new AuthError("validation_failed", { message, details: [{ field, rule: "required", message: `${field} is required` }] });
}

/**
 * Inside a transaction: the session's member, row locked first (D20's lock order), while the
 * session is still live and the member not locked; 401 otherwise (it ended while we worked).
 */
export async function lockSessionMember(tx: Store, tenant: Tenant, session: ActiveSession, now: number): Promise<Member> {
  const member = await tx.members.findMemberById(tenant.id, session.memberId, { lock: true });
  if (!member || member.status === MemberStatus.locked || !(await tx.sessions.findLiveSession(tenant.id, session.idHash, now)))
    throw new AuthError("unauthorized");
  return member;
}

/**
 * D24 re-authentication before a change that a stolen session must not make alone: the password
 * when the member has one (behind the login lockout), else a session younger than 10 minutes;
 * and the second factor when it is on. Never with a password in Password Change Pending: it is the
 * one flagged as compromised (403 password_change_required). The caller checks again, on the locked row, that the
 * password it was decided on is still the member's (D20).
 */
export async function reauthenticate(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  member: Member,
  input: Reauthentication,
  context: RequestContext,
): Promise<void> {
  const now = deps.clock.now();
  // A password the site (or "this wasn't me") flagged may be someone else's: it proves nothing.
  if (member.status === MemberStatus.passwordChangePending && member.passwordHash !== null) {
    throw new AuthError("password_change_required", { message: "Choose a new password first: your current one may be known to someone else." });
  }
  if (member.passwordHash !== null) {
    if (input.password === undefined) throw missing("password", "Enter your password to confirm it's you.");
    await checkCurrentPassword(deps, tenant, member, input.password, context, { message: "The password is incorrect." });
  } else if (now - session.createdAt > FRESH_SESSION_MS) {
    throw new AuthError("unauthorized", { message: "Sign in again to confirm it's you, then retry within 10 minutes." });
  }
  if (member.twoFactorStatus === "Enabled") {
    if (input.twoFACode === undefined) throw missing("twoFACode", "Enter a two-factor code to confirm it's you.");
    await verifySecondFactor(deps, tenant, member, input.twoFACode, context, now);
  }
}

export async function getMe(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<MeView> {
  const member = await deps.store.members.findMemberProfile(tenant.id, session.memberId);
  if (!member) throw new AuthError("unauthorized");
  const { lastLoginAt: _lastLogin, ...view } = memberView(member);
  return { ...view, hasPassword: member.passwordHash !== null };
}

export async function changeName(deps: Deps, tenant: Tenant, session: ActiveSession, rawName: string, context: RequestContext): Promise<MeView> {
  const name = normalizeName(rawName);
  const now = deps.clock.now();
  const notify = await deps.store.transaction(async (tx) => {
    const member = await lockSessionMember(tx, tenant, session, now);
    if (member.name === name) return false;
    await tx.members.updateName(tenant.id, member.recordId, name, now);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "name_changed", ip: context.ip, userAgent: context.userAgent }, now);
    return enqueueMemberEvent(tx, deps, tenant, "member.updated", member.recordId, { changes: ["name"] }, now);
  });
  if (notify) deps.webhooks.notify();
  return getMe(deps, tenant, session);
}

export async function listSessions(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<SessionView[]> {
  const now = deps.clock.now();
  const current = await deps.store.sessions.findPublicId(tenant.id, session.idHash);
  const sessions = await deps.store.sessions.listMemberSessions(tenant.id, session.memberId, now);
  return sessions.map((s) => ({
    id: s.publicId,
    createdAt: iso(s.createdAt),
    lastSeenAt: iso(s.lastSeenAt),
    expiresAt: iso(s.expiresAt),
    ip: s.ip,
    userAgent: s.userAgent,
    country: s.country,
    current: s.publicId === current,
  }));
}

/** Ends one of the member's sessions by its public id; returns whether it was the calling one. 404 for any other id. */
export async function revokeSession(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  publicId: string,
  context: RequestContext,
): Promise<{ current: boolean }> {
  const now = deps.clock.now();
  const current = (await deps.store.sessions.findPublicId(tenant.id, session.idHash)) === publicId;
  await deps.store.transaction(async (tx) => {
    await lockSessionMember(tx, tenant, session, now);
    if (!(await tx.sessions.deleteSessionByPublicId(tenant.id, session.memberId, publicId))) throw new AuthError("not_found", { message: "No such session." });
    await tx.audit.insertAuditEvent(tenant.id, { memberId: session.memberId, type: "session_revoked", ip: context.ip, userAgent: context.userAgent }, now);
  });
  return { current };
}

export async function revokeOtherSessions(deps: Deps, tenant: Tenant, session: ActiveSession, context: RequestContext): Promise<void> {
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    await lockSessionMember(tx, tenant, session, now);
    await tx.sessions.deleteMemberSessions(tenant.id, session.memberId, session.idHash);
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: session.memberId, type: "sessions_revoked", ip: context.ip, userAgent: context.userAgent, details: { by: "member" } },
      now,
    );
  });
}

/** D24: re-authentication, then the erasure of D22 in one transaction; the route clears the cookie. */
export async function deleteAccount(deps: Deps, tenant: Tenant, session: ActiveSession, input: Reauthentication, context: RequestContext): Promise<void> {
  const member = await findSessionMember(deps, tenant, session);
  await reauthenticate(deps, tenant, session, member, input, context);
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    // Waiting email requests first, before the member's row lock, in the email worker's order (see eraseMember).
    await tx.emailRequests.deleteRequestsForEmail(tenant.id, member.email);
    // D20: decided again on the locked row. A session ended meanwhile (a lock, a reset) can't
    // delete; a password changed since the check is no longer the one just given.
    const fresh = await lockSessionMember(tx, tenant, session, now);
    if (fresh.passwordHash !== member.passwordHash) throw new AuthError("invalid_credentials", { message: "The password is incorrect." });
    const erased = await eraseMember(tx, tenant, member.recordId);
    if (!erased) throw new AuthError("unauthorized");
    await recordErasure(tx, deps, tenant, erased, "member", context, now);
  });
  deps.webhooks.notify();
}
