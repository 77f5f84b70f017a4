/**
 * contract.md#d24: a member changes their email, and "this wasn't me".
 *
 * The request re-authenticates, then, in one transaction, issues a 1 h link bound to the new
 * address, queues `email_change` to the new address and a `security_alert` to the old one. When
 * the new address is taken, the same rows are written (the link already expired, the delivery
 * discarded): the answer, its timing and the next request's are the same (contract.md#d19's rule).
 *
 * Confirming swaps the email with a conditional update from the address the change was asked
 * from, ends every other session, voids every link mailed to the old address and alerts the old
 * address with a link that gives it back ("this wasn't me": secure-account.ts).
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { type Member, type RequestContext, type Tenant } from "../../model.js";
import { normalizeEmail } from "../../security/identity.js";
import { rateRules } from "../../rules.js";
import { isUniqueViolation } from "../../store/dialects.js";
import type { Store } from "../../store/index.js";
import type { AlertOrder } from "../../store/tokens.js";
import { enqueueWebhook, memberFields } from "../../events/outbox.js";
import { enforceRateLimit } from "../kernel/guards.js";
import { enqueueMemberEvent } from "../kernel/member-events.js";
import { issueOneTimeToken, peekLink } from "../kernel/one-time-tokens.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import { lockSessionMember } from "../kernel/reauthentication.js";
import { reauthenticate, type Reauthentication } from "../kernel/reauthentication.js";
import { findSessionMember, type ActiveSession } from "../kernel/sessions.js";

export const EMAIL_CHANGE_MESSAGE = "If that address can be used, we have sent a confirmation link to it.";
export const EMAIL_CHANGED_MESSAGE = "Your email address has been changed.";

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
    // contract.md#d30: its "this wasn't me" gives this address back too, should the change be confirmed before the owner reads it.
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

/** Uses the link in the caller's transaction, the member's row locked first (contract.md#d20); invalid_token when it is gone. */
export async function consumeLink(
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

/** `keepIdHash`: the caller's own session, when it is the member's, stays (contract.md#d24: *other* sessions end). */
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
