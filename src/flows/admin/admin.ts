/**
 * The tenant admin's calls (contract.md#spec-4-5, contract.md#spec-5-1, contract.md#d15), authorised by the application's internal API key.
 * Keys are looked up by SHA-256; one application's key works for all of its tenant domains.
 */
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import { normalizeEmail, parseRecordId } from "../../security/identity.js";
import { sha256Hex } from "../../security/hashing.js";
import { rateRules } from "../../rules.js";
import type { StoredAuditEvent } from "../../store/audit.js";
import type { Store } from "../../store/index.js";
import { enforceRateLimit } from "../kernel/guards.js";
import { changeStatus, nextStatus } from "../kernel/member-status.js";
import { enqueueStatusEvent } from "../kernel/member-events.js";
import { enqueueWebhook, memberFields } from "../../events/outbox.js";
import { issueOneTimeToken } from "../kernel/one-time-tokens.js";

export const ADMIN_RESEND_MESSAGE = "A new verification email has been sent.";

/** 401 for a missing or unknown key; 403 for a real key of another application (contract.md#spec-5-1). */
export async function authenticateAdmin(deps: Deps, tenant: Tenant, apiKey: string | undefined): Promise<void> {
  if (!apiKey) throw new AuthError("unauthorized");
  const applicationId = await deps.store.tenants.findApplicationIdByKeyHash(sha256Hex(apiKey));
  if (applicationId === undefined) throw new AuthError("unauthorized");
  if (applicationId !== tenant.applicationId) throw new AuthError("forbidden");
}

/**
 * The member must belong to the tenant named in X-Tenant-Domain; an email, when given, must match.
 * A state change reads it with its row lock (contract.md#d20).
 */
export async function findTargetMember(tx: Store, tenant: Tenant, rawRecordId: string, rawEmail?: string, options: { lock?: boolean } = {}): Promise<Member> {
  // An email that no member could have is the caller's mistake (400), not an unknown member (404).
  const email = rawEmail === undefined ? undefined : normalizeEmail(rawEmail);
  const recordId = parseRecordId(rawRecordId);
  const member = recordId === undefined ? undefined : await tx.members.findMemberById(tenant.id, recordId, options);
  if (!member || (email !== undefined && email !== member.email)) throw noSuchMember();
  return member;
}

/** A record id of another tenant answers like a missing one (contract.md#d22). */
export function noSuchMember(): AuthError {
  return new AuthError("not_found", { message: "No such member for this tenant." });
}

export interface LockAccountInput {
  recordId: string;
  action: "lock" | "unlock";
  email?: string;
}

export interface LockAccountResult {
  recordid: string;
  authentication_status: MemberStatus;
}

export async function lockAccount(deps: Deps, tenant: Tenant, input: LockAccountInput, context: RequestContext): Promise<LockAccountResult> {
  const now = deps.clock.now();
  const result = await deps.store.transaction(async (tx) => {
    const member = await findTargetMember(tx, tenant, input.recordId, input.email, { lock: true });
    const status = nextStatus(input.action, member) ?? member.status;
    await changeStatus(tx, member, status, now);
    if (input.action === "lock") {
      await tx.sessions.deleteMemberSessions(tenant.id, member.recordId);
      // contract.md#d15: voiding every token means a link mailed before the lock can't undo it.
      await tx.tokens.deleteMemberTokens(tenant.id, member.recordId);
      // decisions.md#federated-sign-in: nor can a federated second-factor step or link begun before it.
      await tx.federation.deleteMemberPending(tenant.id, member.recordId);
    } else if (member.status === MemberStatus.locked) {
      // An admin unlock also lifts the failed-password lockout: the admin vouches for the member.
      await tx.limits.clearLockout(tenant.id, member.email);
    }
    const type = input.action === "lock" ? "account_locked" : "account_unlocked";
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type, ip: context.ip, userAgent: context.userAgent, details: { by: "admin" } },
      now,
    );
    await enqueueStatusEvent(tx, deps, tenant, member.recordId, member.status, status, now);
    return { recordid: String(member.recordId), authentication_status: status };
  });
  deps.webhooks.notify();
  return result;
}

/** Issues a resend link (no password, contract.md#d18) and its verify_email webhook inside the caller's transaction. */
export async function enqueueVerificationEmail(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Pick<Member, "recordId" | "email" | "name">,
  now: number,
): Promise<void> {
  const verificationLink = await issueOneTimeToken(tx, deps, tenant, member.recordId, "verify_email", now);
  await enqueueWebhook(tx, deps, tenant, "verify_email", tenant.settings.emailVerificationWebhook, { ...memberFields(member), verificationLink }, now);
}

export interface AdminResendInput {
  recordId: string;
  email: string;
}

export async function resendVerificationAsAdmin(deps: Deps, tenant: Tenant, input: AdminResendInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  const member = await findTargetMember(deps.store, tenant, input.recordId, input.email);
  if (member.status !== MemberStatus.pending) throw new AuthError("invalid_state", { message: "The account is not waiting for email verification." });
  await enforceRateLimit(deps, tenant, rateRules.adminResendPerEmail, member.email, now);
  await deps.store.transaction(async (tx) => {
    await enqueueVerificationEmail(tx, deps, tenant, member, now);
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "verification_resent", ip: context.ip, userAgent: context.userAgent, details: { by: "admin" } },
      now,
    );
  });
  deps.webhooks.notify();
  return ADMIN_RESEND_MESSAGE;
}

/**
 * contract.md#d15: Password Change Pending, sessions revoked. Only an active account can be put there: a
 * locked or unverified one keeps its state, so this call can't unlock or verify anyone.
 */
export async function requirePasswordChange(deps: Deps, tenant: Tenant, input: { recordId: string }, context: RequestContext): Promise<LockAccountResult> {
  const now = deps.clock.now();
  const result = await deps.store.transaction(async (tx) => {
    const member = await findTargetMember(tx, tenant, input.recordId, undefined, { lock: true });
    const status = nextStatus("requirePasswordChange", member);
    if (status === undefined) throw new AuthError("invalid_state", { message: "Only an active account can be required to change its password." });
    await changeStatus(tx, member, status, now);
    await tx.sessions.deleteMemberSessions(tenant.id, member.recordId);
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "password_change_required", ip: context.ip, userAgent: context.userAgent, details: { by: "admin" } },
      now,
    );
    await enqueueStatusEvent(tx, deps, tenant, member.recordId, member.status, status, now);
    return { recordid: String(member.recordId), authentication_status: status };
  });
  deps.webhooks.notify();
  return result;
}

/**
 * The member's audit events. An erased member's record id still shows what erasure kept of it, its
 * `member_deleted` row (contract.md#d22); a record id with no event in this tenant (another tenant's, or none)
 * is 404, like a missing member.
 */
export async function listAuditEvents(deps: Deps, tenant: Tenant, rawRecordId: string, limit: number): Promise<StoredAuditEvent[]> {
  const recordId = parseRecordId(rawRecordId);
  if (recordId === undefined) throw noSuchMember();
  const events = await deps.store.audit.listMemberAuditEvents(tenant.id, recordId, Math.min(Math.max(limit, 1), 200));
  if (events.length === 0 && !(await deps.store.members.findMemberById(tenant.id, recordId))) throw noSuchMember();
  return events;
}
