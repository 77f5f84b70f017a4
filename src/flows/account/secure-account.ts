/**
 * contract.md#d24, contract.md#d30 "this wasn't me" (`/auth/secure-account`, from any security alert's link): the account
 * locked down and, after an email change, its old address given back for good. Each alert's link
 * is used up alone, whatever an intruder did in between; links and 2FA enrolments are ordered by
 * the member's counter, never by the clock.
 */
import type { Deps, TransactionDeps } from "../../deps.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import { isUniqueViolation } from "../../store/dialects.js";
import type { Store } from "../../store/index.js";
import type { AlertOrder } from "../../store/tokens.js";
import { eraseMemberRows } from "../kernel/erasure.js";
import { enqueueMemberEvent, type MemberChange } from "../kernel/member-events.js";
import { changeStatus, nextStatus } from "../kernel/member-status.js";
import { peekLink } from "../kernel/one-time-tokens.js";

import { consumeLink, type LinkInput } from "./email-change.js";

const ACCOUNT_SECURED_MESSAGE = "Every session has ended and every sign-in and reset link we sent is void. Choose a new password to sign in again.";
export const EMAIL_NOT_RESTORED_MESSAGE = "Your old email address could not be given back: another account uses it now. Contact the site's support.";

/**
 * contract.md#d24, contract.md#d30 "this wasn't me", in one transaction: the link is used up (only it: every other alert's
 * link stays valid, whatever happened in between), every session ends, every other link is void, a
 * new password is required, a second factor turned on since the link was issued is turned off, and
 * every passkey goes. When the link carries an address the account no longer has (its email was
 * changed since), that address comes back, for good. One transaction, so the replaced address can't
 * get a link or a session between the lockdown and the restore. Returns the message, which says
 * when the address could not be given back (the hosted page words its notice by that flag).
 */
export async function secureAccount(
  deps: Deps,
  tenant: Tenant,
  input: LinkInput,
  context: RequestContext,
): Promise<{ message: string; emailNotRestored: boolean; email: string | undefined }> {
  const now = deps.clock.now();
  const { recordId, tokenHash } = await peekLink(deps.store, tenant, input, "secure_account", now);
  const link = { recordId, tokenHash };
  let restored: boolean | undefined;
  // An account that takes the address between the restore's look and its write (PostgreSQL) fails
  // the write on the unique index, and the whole transaction rolls back, link included. Decided
  // again, that account is seen; the third time (it can't keep happening) the lockdown goes alone.
  for (let attempt = 1; ; attempt++) {
    try {
      restored = await deps.store.transaction((tx) => secureInTransaction(tx, deps, tenant, link, context, now, attempt < 3));
      break;
    } catch (error) {
      if (attempt >= 3 || !isUniqueViolation(error)) throw error;
    }
  }
  deps.webhooks.notify();
  const emailNotRestored = restored === false;
  // The address the account has now (given back or kept), for the hosted page to fill in: the link's holder is its owner.
  const email = (await deps.store.members.findMemberById(tenant.id, recordId))?.email;
  return { message: emailNotRestored ? `${ACCOUNT_SECURED_MESSAGE} ${EMAIL_NOT_RESTORED_MESSAGE}` : ACCOUNT_SECURED_MESSAGE, emailNotRestored, email };
}

/** The lockdown and, when the link carries another address, the restore; undefined when there was nothing to restore. */
async function secureInTransaction(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  link: { recordId: number; tokenHash: string },
  context: RequestContext,
  now: number,
  tryRestore: boolean,
): Promise<boolean | undefined> {
  const { member, email: restore, issued } = await consumeLink(tx, tenant, link.recordId, "secure_account", link.tokenHash, now);
  const changes = await lockDown(tx, tenant, member, issued, context, now);
  let restored: boolean | undefined;
  if (restore !== null && restore !== member.email) {
    restored = tryRestore && (await restoreEmail(tx, tenant, link.recordId, restore, issued, context, now));
    if (restored) changes.push("email");
  }
  if (changes.length > 0) await enqueueMemberEvent(tx, deps, tenant, "member.updated", link.recordId, { changes }, now);
  return restored;
}

/**
 * contract.md#d30: whether 2FA was turned on at or after the link was issued, in the member's order (the
 * counter both were given under the row lock); rows from before migration 0015 have no place in it
 * and come before every row that has one, and among themselves go by time, as they did.
 */
export function enabledSinceLink(enabled: { seq: number | null; at: number | null }, link: AlertOrder): boolean {
  if (enabled.seq !== null && link.seq !== null) return enabled.seq > link.seq;
  if (link.seq !== null) return false;
  if (enabled.seq !== null) return true;
  return enabled.at !== null && enabled.at >= link.at;
}

/**
 * Ends every session, voids every link but the other "this wasn't me" ones (contract.md#d30), requires a new
 * password, turns off a second factor turned on since the link was issued (an intruder's
 * authenticator would keep the owner out; an older one stays, since mailbox access alone must not
 * remove 2FA) and removes every passkey. Returns the member fields it changed.
 */
async function lockDown(tx: Store, tenant: Tenant, member: Member, issued: AlertOrder, context: RequestContext, now: number): Promise<MemberChange[]> {
  const recordId = member.recordId;
  await tx.sessions.deleteMemberSessions(tenant.id, recordId);
  await tx.tokens.deleteMemberLinks(tenant.id, recordId);
  const changes: MemberChange[] = [];
  // A locked account stays locked: the admin's decision outranks the member's (nextStatus gives none).
  const status = nextStatus("secureAccount", member);
  if (status && status !== member.status) {
    await changeStatus(tx, member, status, now);
    changes.push("status");
  }
  const twoFactor = member.twoFactorStatus === "Enabled" ? await tx.twoFactor.findTwoFactorState(tenant.id, recordId) : undefined;
  const twoFactorReset =
    twoFactor !== undefined &&
    enabledSinceLink({ seq: twoFactor.enabledSeq, at: twoFactor.enabledAt }, issued) &&
    (await tx.twoFactor.disableTwoFactor(tenant.id, recordId, now));
  // contract.md#d26: every passkey goes. One added by an intruder is their way back in, and a newer alert
  // (say, of a passkey they added and removed) must not keep it; removing the owner's locks
  // nobody out (a passkey is a way in, never a second factor), and they can add theirs again.
  const passkeysRemoved = await tx.passkeys.deleteMemberPasskeys(tenant.id, recordId);
  await tx.passkeys.deleteMemberChallenges(tenant.id, recordId);
  // decisions.md#federated-sign-in: identities linked since this alert (its own link included) go; older ones stay,
  // like a second factor, since mailbox access alone must not cut the owner off from their provider.
  const identitiesRemoved = await tx.federation.deleteIdentitiesLinkedSince(tenant.id, recordId, issued.seq === null ? 0 : issued.seq + 1);
  // A second-factor step or a link begun before the lockdown (an intruder's) must not finish after it.
  await tx.federation.deleteMemberPending(tenant.id, recordId);
  if (identitiesRemoved > 0) changes.push("identities");
  await tx.audit.insertAuditEvent(
    tenant.id,
    {
      memberId: recordId,
      type: "account_secured",
      ip: context.ip,
      userAgent: context.userAgent,
      details: { twoFactorReset, passkeysRemoved, identitiesRemoved },
    },
    now,
  );
  return changes;
}

/**
 * Gives the member back the address the alert went to, on the row this transaction holds locked
 * (read again: the lockdown just changed it). A pending account holding the address is erased
 * first: it has no password (contract.md#d18) and its registrant never proved the mailbox, so it can't be used
 * to keep the address from its owner. A verified account holding it proved that mailbox, and keeps
 * it: false then. The restore is final (contract.md#d30): the member's other "this wasn't me" links issued
 * after this one went to the addresses it replaces, and are void.
 */
async function restoreEmail(
  tx: Store,
  tenant: Tenant,
  recordId: number,
  restore: string,
  issued: AlertOrder,
  context: RequestContext,
  now: number,
): Promise<boolean> {
  const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
  if (!member) return false;
  const holder = await tx.members.findMemberByEmail(tenant.id, restore, { lock: true });
  if (holder && holder.status !== MemberStatus.pending) return false;
  if (holder) await eraseMemberRows(tx, holder);
  if (!(await tx.members.updateEmail(tenant.id, recordId, member.email, restore, now))) return false;
  await tx.tokens.voidAlertLinksIssuedAfter(tenant.id, recordId, issued);
  await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "email_restored", ip: context.ip, userAgent: context.userAgent }, now);
  return true;
}
