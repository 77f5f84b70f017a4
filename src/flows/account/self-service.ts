/**
 * contract.md#d24: what a signed-in member does for themselves: see and rename their profile, see where they
 * are signed in and end those sessions, and delete their account. Every call runs on the member of
 * the session (never a record id from the request), so no call can reach another member or tenant.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { normalizeName } from "../../security/identity.js";
import { eraseMember, recordErasure } from "../kernel/erasure.js";
import { memberView, sessionView, type MemberView, type SessionView } from "../kernel/member-view.js";
import { enqueueMemberEvent } from "../kernel/member-events.js";
import { INCORRECT_PASSWORD, lockSessionMember, reauthenticate, type Reauthentication } from "../kernel/reauthentication.js";
import { findSessionMember, type ActiveSession } from "../kernel/sessions.js";

/**
 * contract.md#d24 `/auth/me`: the admin's view of the member (contract.md#d22) without the last login and the old
 * system's id (the tenant's mapping, decisions.md#importing-members), and whether they have a password.
 */
export type MeView = Omit<MemberView, "lastLoginAt" | "externalId"> & { hasPassword: boolean };

/** A session as its member sees it: with its public id, and which one is asking. */
export type OwnSessionView = { id: string } & SessionView & { current: boolean };

export async function getMe(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<MeView> {
  const member = await deps.store.members.findMemberProfile(tenant.id, session.memberId);
  if (!member) throw new AuthError("unauthorized");
  const { lastLoginAt: _lastLogin, externalId: _externalId, ...view } = memberView(member);
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

export async function listSessions(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<OwnSessionView[]> {
  const now = deps.clock.now();
  const current = await deps.store.sessions.findPublicId(tenant.id, session.idHash);
  const sessions = await deps.store.sessions.listMemberSessions(tenant.id, session.memberId, now);
  return sessions.map((s) => ({ id: s.publicId, ...sessionView(s), current: s.publicId === current }));
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

/** contract.md#d24: re-authentication, then the erasure of contract.md#d22 in one transaction; the route clears the cookie. */
export async function deleteAccount(deps: Deps, tenant: Tenant, session: ActiveSession, input: Reauthentication, context: RequestContext): Promise<void> {
  const member = await findSessionMember(deps, tenant, session);
  await reauthenticate(deps, tenant, session, member, input, context);
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    // Waiting email requests first, before the member's row lock, in the email worker's order (see eraseMember).
    await tx.emailRequests.deleteRequestsForEmail(tenant.id, member.email);
    // contract.md#d20: decided again on the locked row. A session ended meanwhile (a lock, a reset) can't
    // delete; a password changed since the check is no longer the one just given.
    const fresh = await lockSessionMember(tx, tenant, session, now);
    if (fresh.passwordHash !== member.passwordHash) throw new AuthError("invalid_credentials", { message: INCORRECT_PASSWORD });
    const erased = await eraseMember(tx, tenant, member.recordId);
    if (!erased) throw new AuthError("unauthorized");
    await recordErasure(tx, deps, tenant, erased, "member", context, now);
  });
  deps.webhooks.notify();
}
