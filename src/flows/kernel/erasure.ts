/**
 * Erasure (contract.md#d22, contract.md#d24, contract.md#d25): a member and every row keyed to them, in the caller's transaction, for
 * the admin's delete, the member's own, "this wasn't me" (a pending squatter of the restored
 * address) and the retention sweep of pending accounts; and what stays of it.
 */
import type { Deps, TransactionDeps } from "../../deps.js";
import type { Member, RequestContext, Tenant } from "../../model.js";
import type { Store } from "../../store/index.js";
import { enqueueMemberEvent } from "./member-events.js";

/**
 * Erases the member and every row keyed to them, by id or by email, in the caller's transaction,
 * and returns who was erased (undefined when nobody). Waiting email requests go first, before the
 * member's row lock: the email-request worker claims its request and then locks the member, so
 * taking them in the same order can't deadlock on PostgreSQL. Then the member row is locked (contract.md#d20)
 * and everything keyed to it deleted. Counters keyed by a hash of the email expire with their window.
 */
export async function eraseMember(tx: Store, tenant: Pick<Tenant, "id">, recordId: number): Promise<Member | undefined> {
  const found = await tx.members.findMemberById(tenant.id, recordId);
  if (!found) return undefined;
  await tx.emailRequests.deleteRequestsForEmail(tenant.id, found.email);
  const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
  if (!member) return undefined;
  if (member.email !== found.email) await tx.emailRequests.deleteRequestsForEmail(tenant.id, member.email);
  await eraseMemberRows(tx, member);
  return member;
}

/** Everything keyed to a member whose row this transaction holds locked, the row last. */
export async function eraseMemberRows(tx: Store, member: Member): Promise<void> {
  const { tenantId, recordId } = member;
  await tx.sessions.deleteMemberSessions(tenantId, recordId);
  await tx.tokens.deleteMemberTokens(tenantId, recordId);
  await tx.registrations.deleteMemberRegistrations(tenantId, recordId);
  await tx.twoFactor.replaceRecoveryCodes(tenantId, recordId, []);
  await tx.passkeys.deleteMemberPasskeys(tenantId, recordId);
  await tx.passkeys.deleteMemberChallenges(tenantId, recordId);
  await tx.federation.deleteMemberFederation(tenantId, recordId);
  await tx.loginOrigins.deleteMemberOrigins(tenantId, recordId);
  await tx.audit.deleteMemberAuditEvents(tenantId, recordId);
  await tx.outbox.deleteMemberDeliveries(tenantId, recordId);
  await tx.limits.clearLockout(tenantId, member.email);
  await tx.members.deleteMember(tenantId, recordId);
}

/** At most this many pending accounts are erased per sweep, each in its own short transaction. */
const PENDING_ERASURE_BATCH = 200;

/**
 * contract.md#d25: erases pending accounts whose last verification link expired more than `retentionMs` ago,
 * with every row keyed to them and no trace (they never became members). Each is decided again on
 * its locked row, so a link issued or used meanwhile keeps the account. Waiting email requests are
 * left alone: a registration waiting for this email creates a new pending account, as it would
 * after the erasure. Returns how many were erased.
 */
export async function erasePendingAccounts(deps: Deps, now: number, retentionMs: number): Promise<number> {
  const cutoff = now - retentionMs;
  const candidates = await deps.store.members.listExpiredPending(cutoff, PENDING_ERASURE_BATCH);
  let erased = 0;
  for (const { tenantId, recordId } of candidates) {
    const done = await deps.store.transaction(async (tx) => {
      if (!(await tx.members.isExpiredPending(tenantId, recordId, cutoff, { lock: true }))) return false;
      const member = await tx.members.findMemberById(tenantId, recordId);
      if (!member) return false;
      await eraseMemberRows(tx, member);
      return true;
    });
    if (done) erased++;
  }
  if (erased > 0) deps.log.info({ erased }, "erased pending accounts past their retention");
  return erased;
}

/**
 * What stays of an erasure (contract.md#d22, contract.md#d24): one audit row `member_deleted` and `member.deleted` to the
 * tenant. The row holds no email, and when the member erased themselves neither their IP nor their
 * browser: those are theirs too, and erasure leaves nothing of them. An admin's are the tenant's.
 */
export async function recordErasure(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  by: "admin" | "member",
  context: RequestContext,
  now: number,
): Promise<void> {
  await tx.audit.insertAuditEvent(
    tenant.id,
    {
      memberId: member.recordId,
      type: "member_deleted",
      ip: by === "admin" ? context.ip : null,
      userAgent: by === "admin" ? context.userAgent : null,
      details: { by },
    },
    now,
  );
  await enqueueMemberEvent(tx, deps, tenant, "member.deleted", member.recordId, {}, now);
}
