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
 * alert) ends every session, voids every link, requires a new password and, after an email
 * change, restores the old address.
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { Member, RequestContext, Tenant } from "../model.js";
import { sha256Hex } from "../security/hashing.js";
import { normalizeEmail, parseRecordId } from "../security/identity.js";
import { rateRules } from "../security/rate-limit.js";
import { isUniqueViolation } from "../store/dialects.js";
import type { Store } from "../store/index.js";
import { enqueueWebhook, memberFields } from "../events/outbox.js";
import { enforceRateLimit } from "./guards.js";
import { enqueueMemberEvent } from "./member-events.js";
import { changeStatus, nextStatus } from "./member-status.js";
import { issueOneTimeToken } from "./one-time-tokens.js";
import { enqueueSecurityAlert } from "./security-alerts.js";
import { lockSessionMember, reauthenticate, sessionMember, type Reauthentication } from "./self-service.js";
import type { ActiveSession } from "./sessions.js";

export const EMAIL_CHANGE_MESSAGE = "If that address can be used, we have sent a confirmation link to it.";
export const EMAIL_CHANGED_MESSAGE = "Your email address has been changed.";
export const ACCOUNT_SECURED_MESSAGE = "Every session has ended and every link is void. Choose a new password to sign in again.";

export interface ChangeEmailInput extends Reauthentication {
  newEmail: string;
}

export async function requestEmailChange(deps: Deps, tenant: Tenant, session: ActiveSession, input: ChangeEmailInput, context: RequestContext): Promise<string> {
  const newEmail = normalizeEmail(input.newEmail);
  const member = await sessionMember(deps, tenant, session);
  if (newEmail === member.email) {
    throw new AuthError("validation_failed", { message: "That is already your email address.", details: [{ path: "/newEmail", message: "must differ from the current email" }] });
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
    await enqueueWebhook(tx, deps, tenant, "email_change", tenant.settings.emailVerificationWebhook, { ...memberFields({ ...fresh, email: newEmail }), verificationLink }, now, { discarded: taken });
    await enqueueSecurityAlert(tx, deps, tenant, fresh, "email_change_requested", context, now, { fields: { newEmail } });
    await tx.audit.insertAuditEvent(tenant.id, { memberId: fresh.recordId, type: "email_change_requested", ip: context.ip, userAgent: context.userAgent }, now);
  });
  deps.webhooks.notify();
  return EMAIL_CHANGE_MESSAGE;
}

export interface LinkInput {
  recordId: string;
  token: string;
}

/**
 * Uses a link of `kind` in one transaction: the member's row locked first (D20), the token used up,
 * then `work` with the address the link carries. A unique-index refusal from a concurrent commit
 * (the address taken) is 409, the answer the conditional update gives.
 */
async function useLink(deps: Deps, tenant: Tenant, input: LinkInput, kind: "email_change" | "secure_account", work: (tx: Store, member: Member, email: string | null, now: number) => Promise<void>): Promise<void> {
  const recordId = parseRecordId(input.recordId);
  if (recordId === undefined) throw new AuthError("invalid_token");
  const tokenHash = sha256Hex(input.token);
  const now = deps.clock.now();
  try {
    await deps.store.transaction(async (tx) => {
      const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
      const link = member && (await tx.tokens.consumeTokenWithEmail(tenant.id, recordId, kind, tokenHash, now));
      if (!member || !link) throw new AuthError("invalid_token");
      // Thrown errors roll the transaction back: the token is used up only if the work commits.
      await work(tx, member, link.email, now);
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw emailTaken();
    throw error;
  }
  deps.webhooks.notify();
}

function emailTaken(): AuthError {
  return new AuthError("conflict", { message: "That email address is now used by another account." });
}

/** `keepIdHash`: the caller's own session, when it is the member's, stays (D24: *other* sessions end). */
export async function confirmEmailChange(deps: Deps, tenant: Tenant, input: LinkInput, context: RequestContext, keepIdHash?: string): Promise<string> {
  await useLink(deps, tenant, input, "email_change", async (tx, member, newEmail, now) => {
    const recordId = member.recordId;
    if (newEmail === null || !(await tx.members.updateEmail(tenant.id, recordId, member.email, newEmail, now))) throw emailTaken();
    await tx.sessions.deleteMemberSessions(tenant.id, recordId, keepIdHash);
    // Reset and magic links went to the old address: they must not outlive it.
    await tx.tokens.deleteMemberTokens(tenant.id, recordId);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "email_changed", ip: context.ip, userAgent: context.userAgent }, now);
    await enqueueSecurityAlert(tx, deps, tenant, member, "email_changed", context, now, { restoreEmail: member.email });
    await enqueueMemberEvent(tx, deps, tenant, "member.updated", recordId, { changes: ["email"] }, now);
  });
  return EMAIL_CHANGED_MESSAGE;
}

/** D24 "this wasn't me": every session ends, every link is void, a new password is required; an email change is undone. */
export async function secureAccount(deps: Deps, tenant: Tenant, input: LinkInput, context: RequestContext): Promise<string> {
  await useLink(deps, tenant, input, "secure_account", async (tx, member, restore, now) => {
    const recordId = member.recordId;
    const changes = await restoreEmail(tx, member, restore, now);
    await tx.sessions.deleteMemberSessions(tenant.id, recordId);
    await tx.tokens.deleteMemberTokens(tenant.id, recordId);
    // A locked account stays locked: the admin's decision outranks the member's (nextStatus gives none).
    const status = nextStatus("secureAccount", member);
    if (status && status !== member.status) {
      await changeStatus(tx, member, status, now);
      changes.push("status");
    }
    await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "account_secured", ip: context.ip, userAgent: context.userAgent, details: { emailRestored: changes.includes("email") } }, now);
    if (changes.length > 0) await enqueueMemberEvent(tx, deps, tenant, "member.updated", recordId, { changes }, now);
  });
  return ACCOUNT_SECURED_MESSAGE;
}

/** Gives the member back the address an `email_changed` alert went to, when it is not theirs any more and still free. */
async function restoreEmail(tx: Store, member: Member, email: string | null, now: number): Promise<string[]> {
  if (email === null || email === member.email) return [];
  if (await tx.members.findMemberByEmail(member.tenantId, email)) return [];
  if (!(await tx.members.updateEmail(member.tenantId, member.recordId, member.email, email, now))) throw new Error("member changed under its row lock");
  return ["email"];
}
