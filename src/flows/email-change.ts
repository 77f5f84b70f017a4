/**
 * D24: a member changes their email, and "this wasn't me".
 *
 * The request re-authenticates, then, in one transaction, issues a 1 h link bound to the new
 * address, queues `email_change` to the new address and a `security_alert` to the old one. When
 * the new address is taken, the same rows are written (the link already expired, the delivery
 * discarded): the answer, its timing and the next request's are the same (D19's rule).
 *
 * Confirming swaps the email with a conditional update from the address the change was asked
 * from, ends every other session, voids every link mailed to the old address and alerts the old
 * address with a link that gives it back. `/auth/secure-account` ("this wasn't me", from any
 * alert) ends every session, voids every link but the other alerts' own, requires a new password
 * and, after an email change, restores the old address for good (D30).
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../model.js";
import { normalizeEmail } from "../security/identity.js";
import { rateRules } from "../rules.js";
import { isUniqueViolation } from "../store/dialects.js";
import type { Store } from "../store/index.js";
import type { AlertOrder } from "../store/tokens.js";
import { enqueueWebhook, memberFields } from "../events/outbox.js";
import { enforceRateLimit } from "./guards.js";
import { eraseMemberRows } from "./member-admin.js";
import { enqueueMemberEvent } from "./member-events.js";
import { changeStatus, nextStatus } from "./member-status.js";
import { issueOneTimeToken, peekLink } from "./one-time-tokens.js";
import { enqueueSecurityAlert } from "./security-alerts.js";
import { lockSessionMember } from "./reauthentication.js";
import { reauthenticate, type Reauthentication } from "./self-service.js";
import { findSessionMember, type ActiveSession } from "./sessions.js";

export const EMAIL_CHANGE_MESSAGE = "If that address can be used, we have sent a confirmation link to it.";
export const EMAIL_CHANGED_MESSAGE = "Your email address has been changed.";
const ACCOUNT_SECURED_MESSAGE = "Every session has ended and every sign-in and reset link we sent is void. Choose a new password to sign in again.";
export const EMAIL_NOT_RESTORED_MESSAGE = "Your old email address could not be given back: another account uses it now. Contact the site's support.";

export interface ChangeEmailInput extends Reauthentication {
  newEmail: string;
}

export async function requestEmailChange(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: ChangeEmailInput,
  context: RequestContext,
): Promise<string> {
  const newEmail = normalizeEmail(input.newEmail);
  const member = await findSessionMember(deps, tenant, session);
  if (newEmail === member.email) {
    throw new AuthError("validation_failed", {
      message: "That is already your email address.",
      details: [{ field: "newEmail", rule: "different_email", message: "must differ from the current email" }],
    });
  }
  await reauthenticate(deps, tenant, session, member, input, context);
  const now = deps.clock.now();
  // After re-authentication: only the member can spend it. It bounds the mail one account can send to strangers.
  await enforceRateLimit(deps, tenant, rateRules.changeEmailPerMember, String(member.recordId), now);
  await deps.store.transaction(async (tx) => {
    const fresh = await lockSessionMember(tx, tenant, session, now);
    if (fresh.passwordHash !== member.passwordHash) throw new AuthError("invalid_credentials", { message: "The password is incorrect." });
    const taken = (await tx.members.findMemberByEmail(tenant.id, newEmail)) !== undefined;
    const verificationLink = await issueOneTimeToken(tx, deps, tenant, fresh.recordId, "email_change", now, { newEmail, dummy: taken });
    await enqueueWebhook(
      tx,
      deps,
      tenant,
      "email_change",
      tenant.settings.emailVerificationWebhook,
      { ...memberFields({ ...fresh, email: newEmail }), verificationLink },
      now,
      { discarded: taken },
    );
    // D30: its "this wasn't me" gives this address back too, should the change be confirmed before the owner reads it.
    await enqueueSecurityAlert(tx, deps, tenant, fresh, "email_change_requested", context, now, { fields: { newEmail }, restoreEmail: fresh.email });
    await tx.audit.insertAuditEvent(tenant.id, { memberId: fresh.recordId, type: "email_change_requested", ip: context.ip, userAgent: context.userAgent }, now);
  });
  deps.webhooks.notify();
  return EMAIL_CHANGE_MESSAGE;
}

export interface LinkInput {
  recordId: string;
  token: string;
}

/** Uses the link in the caller's transaction, the member's row locked first (D20); invalid_token when it is gone. */
async function consumeLink(
  tx: Store,
  tenant: Tenant,
  recordId: number,
  kind: "email_change" | "secure_account",
  tokenHash: string,
  now: number,
): Promise<{ member: Member; email: string | null; issued: AlertOrder }> {
  const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
  const link = member && (await tx.tokens.consumeTokenWithEmail(tenant.id, recordId, kind, tokenHash, now));
  if (!member || !link) throw new AuthError("invalid_token");
  return { member, ...link };
}

function emailTaken(): AuthError {
  return new AuthError("conflict", { message: "That email address is now used by another account." });
}

/** `keepIdHash`: the caller's own session, when it is the member's, stays (D24: *other* sessions end). */
export async function confirmEmailChange(deps: Deps, tenant: Tenant, input: LinkInput, context: RequestContext, keepIdHash?: string): Promise<string> {
  const now = deps.clock.now();
  const { recordId, tokenHash } = await peekLink(deps.store, tenant, input, "email_change", now);
  try {
    await deps.store.transaction(async (tx) => {
      const { member, email: newEmail } = await consumeLink(tx, tenant, recordId, "email_change", tokenHash, now);
      // Thrown, the transaction rolls back: the link is used up only if the change commits.
      if (newEmail === null || !(await tx.members.updateEmail(tenant.id, recordId, member.email, newEmail, now))) throw emailTaken();
      await tx.sessions.deleteMemberSessions(tenant.id, recordId, keepIdHash);
      // Reset and magic links went to the old address: they must not outlive it.
      await tx.tokens.deleteMemberLinks(tenant.id, recordId);
      await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "email_changed", ip: context.ip, userAgent: context.userAgent }, now);
      await enqueueSecurityAlert(tx, deps, tenant, member, "email_changed", context, now, { restoreEmail: member.email });
      await enqueueMemberEvent(tx, deps, tenant, "member.updated", recordId, { changes: ["email"] }, now);
    });
  } catch (error) {
    // The address taken by a concurrent commit: the unique index says so, as the conditional update would.
    if (isUniqueViolation(error)) throw emailTaken();
    throw error;
  }
  deps.webhooks.notify();
  return EMAIL_CHANGED_MESSAGE;
}

/**
 * D24, D30 "this wasn't me", in one transaction: the link is used up (only it: every other alert's
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
): Promise<{ message: string; emailNotRestored: boolean }> {
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
  return { message: emailNotRestored ? `${ACCOUNT_SECURED_MESSAGE} ${EMAIL_NOT_RESTORED_MESSAGE}` : ACCOUNT_SECURED_MESSAGE, emailNotRestored };
}

/** The lockdown and, when the link carries another address, the restore; undefined when there was nothing to restore. */
async function secureInTransaction(
  tx: Store,
  deps: Deps,
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
 * D30: whether 2FA was turned on at or after the link was issued, in the member's order (the
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
 * Ends every session, voids every link but the other "this wasn't me" ones (D30), requires a new
 * password, turns off a second factor turned on since the link was issued (an intruder's
 * authenticator would keep the owner out; an older one stays, since mailbox access alone must not
 * remove 2FA) and removes every passkey. Returns the member fields it changed.
 */
async function lockDown(tx: Store, tenant: Tenant, member: Member, issued: AlertOrder, context: RequestContext, now: number): Promise<string[]> {
  const recordId = member.recordId;
  await tx.sessions.deleteMemberSessions(tenant.id, recordId);
  await tx.tokens.deleteMemberLinks(tenant.id, recordId);
  const changes: string[] = [];
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
  // D26: every passkey goes. One added by an intruder is their way back in, and a newer alert
  // (say, of a passkey they added and removed) must not keep it; removing the owner's locks
  // nobody out (a passkey is a way in, never a second factor), and they can add theirs again.
  const passkeysRemoved = await tx.passkeys.deleteMemberPasskeys(tenant.id, recordId);
  await tx.passkeys.deleteMemberChallenges(tenant.id, recordId);
  await tx.audit.insertAuditEvent(
    tenant.id,
    { memberId: recordId, type: "account_secured", ip: context.ip, userAgent: context.userAgent, details: { twoFactorReset, passkeysRemoved } },
    now,
  );
  return changes;
}

/**
 * Gives the member back the address the alert went to, on the row this transaction holds locked
 * (read again: the lockdown just changed it). A pending account holding the address is erased
 * first: it has no password (D18) and its registrant never proved the mailbox, so it can't be used
 * to keep the address from its owner. A verified account holding it proved that mailbox, and keeps
 * it: false then. The restore is final (D30): the member's other "this wasn't me" links issued
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
