/**
 * Forgot and reset password (contract.md#spec-4-3). forgot-password answers the same bytes whatever the
 * account's existence or state (contract.md#d5); reset moves any state to Unlocked (contract.md#spec-3) and revokes
 * every session.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { normalizeEmail } from "../../security/identity.js";
import { distinctIpRules, rateRules } from "../../rules.js";
import { enforceRateLimit, refuseManyIpsForOneEmail, verifyBotChallenge } from "../kernel/guards.js";
import { enqueueEmailRequest } from "../kernel/email-requests.js";
import { enqueueStatusEvent } from "../kernel/member-events.js";
import { nextStatus } from "../kernel/member-status.js";
import { peekLink } from "../kernel/one-time-tokens.js";
import { checkNewPassword, hashNewPassword } from "../kernel/passwords.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";

export const FORGOT_PASSWORD_MESSAGE = "If an account exists for that email, a password reset link has been sent.";
export const PASSWORD_RESET_MESSAGE = "Your password has been reset. You can now log in.";

export interface ForgotPasswordInput {
  email: string;
  botToken: string | undefined;
}

export async function requestPasswordReset(deps: Deps, tenant: Tenant, input: ForgotPasswordInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.forgotPasswordPerIp, context.ip, now);
  await refuseManyIpsForOneEmail(deps, tenant, distinctIpRules.forgotPasswordIpsPerEmail, email, context, now);
  // One email request whatever the email, committed before the answer (contract.md#d19); the worker decides.
  await enqueueEmailRequest(deps, tenant, "password_reset", email, context, now);
  return FORGOT_PASSWORD_MESSAGE;
}

export interface ResetPasswordInput {
  recordId: string;
  token: string;
  newPassword: string;
}

export async function resetPassword(deps: Deps, tenant: Tenant, input: ResetPasswordInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  // Checked without consuming first: a weak password must not use the link up (contract.md#d15), and no hash
  // is computed for a link that is not valid.
  const { recordId, tokenHash } = await peekLink(deps.store, tenant, input, "password_reset", now);
  const password = await checkNewPassword(deps, input.newPassword);
  const hashed = await hashNewPassword(deps, password);
  const reset = await deps.store.transaction(async (tx) => {
    // The member row first (contract.md#d20): it is the first lock of every transaction that changes a member.
    const member = await tx.members.findMemberById(tenant.id, recordId, { lock: true });
    if (!member || !(await tx.tokens.consumeToken(tenant.id, recordId, "password_reset", tokenHash, now))) return false;
    // The link proves the mailbox, so it verifies the email too.
    const status = nextStatus("resetPassword", member)!;
    if (!(await tx.members.updatePassword(tenant.id, recordId, member, { ...hashed, status, emailVerified: true }, now)))
      throw new Error("member changed under its row lock");
    await tx.sessions.deleteMemberSessions(tenant.id, recordId);
    // contract.md#d18: the link proves the mailbox; no other registration of a pending account may still take it.
    await tx.registrations.deleteMemberRegistrations(tenant.id, recordId);
    // contract.md#d21: every other link (verification, reset, magic) is void: none may undo this reset. A
    // "this wasn't me" link stays (contract.md#d24): it is how the owner undoes a reset made by someone else.
    await tx.tokens.deleteMemberLinks(tenant.id, recordId);
    await tx.limits.clearLockout(tenant.id, member.email);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "password_reset", ip: context.ip, userAgent: context.userAgent }, now);
    await enqueueSecurityAlert(tx, deps, tenant, member, "password_reset", context, now);
    await enqueueStatusEvent(tx, deps, tenant, recordId, member.status, status, now);
    return true;
  });
  if (!reset) throw new AuthError("invalid_token");
  deps.webhooks.notify();
  return PASSWORD_RESET_MESSAGE;
}
