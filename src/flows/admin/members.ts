/**
 * contract.md#d22: the tenant admin's view of its members: list and search, one member, an export of
 * everything held about them (GDPR Art. 15/20), erasure (Art. 17) and ending their sessions.
 * Every call names the member by record id within the tenant of X-Tenant-Domain; another
 * tenant's record id is 404, like a missing one.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { findTargetMember, noSuchMember } from "./admin.js";
import { eraseMember, recordErasure } from "../kernel/erasure.js";
import { iso, memberView, sessionView, type MemberView } from "../kernel/member-view.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import type { MemberStatus, RequestContext, Tenant } from "../../model.js";
import { parseRecordId } from "../../security/identity.js";
import type { Store } from "../../store/index.js";
import type { MemberProfile, MemberQuery } from "../../store/members.js";
import { MEMBER_PAGE_DEFAULT, MEMBER_PAGE_MAX } from "../../rules.js";

export interface MemberListInput {
  email?: string;
  status?: MemberStatus;
  limit?: number;
  cursor?: string;
}

/** The cursor names the last member of a page: opaque to callers, checked when it comes back. */
function encodeCursor(member: MemberProfile): string {
  return Buffer.from(`${member.createdAt}.${member.recordId}`).toString("base64url");
}

function decodeCursor(cursor: string): MemberQuery["after"] {
  const match = /^(\d{1,16})\.(\d{1,16})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (!match)
    throw new AuthError("validation_failed", {
      message: "The cursor is not valid.",
      details: [{ field: "cursor", rule: "cursor", message: "must be the nextCursor of a previous page" }],
    });
  return { createdAt: Number(match[1]), recordId: Number(match[2]) };
}

/** `email` matches exactly, or by prefix with a trailing `*` (emails are stored lowercase). */
function emailFilter(raw: string | undefined): Pick<MemberQuery, "email" | "emailPrefix"> {
  if (raw === undefined) return {};
  const email = raw.trim().toLowerCase();
  if (!email.endsWith("*")) return { email };
  const prefix = email.slice(0, -1);
  return prefix === "" ? {} : { emailPrefix: prefix };
}

export async function listMembers(deps: Deps, tenant: Tenant, input: MemberListInput): Promise<{ members: MemberView[]; nextCursor: string | null }> {
  const limit = Math.min(Math.max(input.limit ?? MEMBER_PAGE_DEFAULT, 1), MEMBER_PAGE_MAX);
  const query: MemberQuery = { ...emailFilter(input.email), status: input.status, after: input.cursor === undefined ? undefined : decodeCursor(input.cursor) };
  // One row more than asked says whether another page follows, without a count.
  const rows = await deps.store.members.listMembers(tenant.id, query, limit + 1);
  const page = rows.slice(0, limit);
  return { members: page.map(memberView), nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!) : null };
}

async function findProfile(store: Store, tenant: Tenant, rawRecordId: string): Promise<MemberProfile> {
  const recordId = parseRecordId(rawRecordId);
  const member = recordId === undefined ? undefined : await store.members.findMemberProfile(tenant.id, recordId);
  if (!member) throw noSuchMember();
  return member;
}

export async function getMember(deps: Deps, tenant: Tenant, rawRecordId: string): Promise<MemberView & { passkeys: number; sessions: number }> {
  const member = await findProfile(deps.store, tenant, rawRecordId);
  const sessions = await deps.store.sessions.listMemberSessions(tenant.id, member.recordId, deps.clock.now());
  const passkeys = await deps.store.passkeys.countMemberPasskeys(tenant.id, member.recordId);
  return { ...memberView(member), passkeys, sessions: sessions.length };
}

/**
 * Everything held about the member, in the clear where it is personal data and never a secret:
 * no password hash, TOTP secret, recovery code, session id or token (GDPR Art. 15/20).
 */
export async function exportMember(deps: Deps, tenant: Tenant, rawRecordId: string) {
  const member = await findProfile(deps.store, tenant, rawRecordId);
  const now = deps.clock.now();
  const sessions = await deps.store.sessions.listMemberSessions(tenant.id, member.recordId, now);
  const origins = await deps.store.loginOrigins.listMemberOrigins(tenant.id, member.recordId);
  const events = await deps.store.audit.listMemberAuditEvents(tenant.id, member.recordId, Number.MAX_SAFE_INTEGER);
  const passkeys = await deps.store.passkeys.listMemberPasskeys(tenant.id, member.recordId);
  return {
    member: { ...memberView(member), emailVerified: member.emailVerified, hasPassword: member.passwordHash !== null },
    sessions: sessions.map(sessionView),
    loginHistory: origins.map((o) => ({ kind: o.kind, value: o.value, firstSeenAt: iso(o.firstSeen), lastSeenAt: iso(o.lastSeen) })),
    auditEvents: events.map((e) => ({ type: e.type, at: iso(e.at), ip: e.ip, userAgent: e.userAgent, details: e.details ?? {} })),
    passkeys: passkeys.map((p) => ({ name: p.name, createdAt: iso(p.createdAt), lastUsedAt: p.lastUsedAt === null ? null : iso(p.lastUsedAt) })),
  };
}

/** contract.md#d22: erasure by the tenant admin. */
export async function deleteMember(deps: Deps, tenant: Tenant, rawRecordId: string, context: RequestContext): Promise<{ recordid: string }> {
  const recordId = parseRecordId(rawRecordId);
  const now = deps.clock.now();
  const deleted = await deps.store.transaction(async (tx) => {
    const member = recordId === undefined ? undefined : await eraseMember(tx, tenant, recordId);
    if (!member) return false;
    await recordErasure(tx, deps, tenant, member, "admin", context, now);
    return true;
  });
  if (!deleted) throw noSuchMember();
  deps.webhooks.notify();
  return { recordid: String(recordId) };
}

export async function revokeMemberSessions(deps: Deps, tenant: Tenant, rawRecordId: string, context: RequestContext): Promise<{ recordid: string }> {
  const now = deps.clock.now();
  return deps.store.transaction(async (tx) => {
    const member = await findTargetMember(tx, tenant, rawRecordId, undefined, { lock: true });
    await tx.sessions.deleteMemberSessions(tenant.id, member.recordId);
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "sessions_revoked", ip: context.ip, userAgent: context.userAgent, details: { by: "admin" } },
      now,
    );
    return { recordid: String(member.recordId) };
  });
}

/**
 * contract.md#d30: support turns a member's second factor off (they lost their authenticator, or someone
 * enrolled their own): 2FA off, with its secret and recovery codes, every session ends, and the
 * member is told (`security_alert` `two_factor_disabled`, with its "this wasn't me" link).
 * A conditional update from Enabled (contract.md#d20): 409 invalid_state when 2FA is off.
 */
export async function resetTwoFactor(
  deps: Deps,
  tenant: Tenant,
  rawRecordId: string,
  context: RequestContext,
): Promise<{ recordid: string; _2fa_status: "Disabled" }> {
  const now = deps.clock.now();
  const result = await deps.store.transaction(async (tx) => {
    const member = await findTargetMember(tx, tenant, rawRecordId, undefined, { lock: true });
    if (!(await tx.twoFactor.disableTwoFactor(tenant.id, member.recordId, now)))
      throw new AuthError("invalid_state", { message: "Two-factor authentication is not enabled." });
    await tx.sessions.deleteMemberSessions(tenant.id, member.recordId);
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "two_factor_disabled", ip: context.ip, userAgent: context.userAgent, details: { by: "admin" } },
      now,
    );
    await enqueueSecurityAlert(tx, deps, tenant, member, "two_factor_disabled", context, now);
    return { recordid: String(member.recordId), _2fa_status: "Disabled" as const };
  });
  deps.webhooks.notify();
  return result;
}
