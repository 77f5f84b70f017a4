/** Change password for a logged-in member (spec 4.3): every other session ends, this one stays. */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { MemberStatus, type RequestContext, type Tenant } from "../model.js";
import { normalizePassword } from "../security/password.js";
import { countFailedPasswordAttempt, reservePasswordAttempt } from "./password-attempts.js";
import { checkNewPassword, hashNewPassword } from "./passwords.js";
import { enqueueSecurityAlert } from "./security-alerts.js";
import type { ActiveSession } from "./sessions.js";

export const PASSWORD_CHANGED_MESSAGE = "Your password has been changed.";

export interface ChangePasswordInput {
  currentPassword: string;
  newPassword: string;
}

export async function changePassword(deps: Deps, tenant: Tenant, session: ActiveSession, input: ChangePasswordInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  const member = await deps.store.members.findMemberById(tenant.id, session.memberId);
  if (!member) throw new AuthError("unauthorized");
  // A stolen session must not become a password-guessing oracle: same lockout as login.
  const attempt = await reservePasswordAttempt(deps, tenant, member.email, context, now, { trackVelocity: false });
  const current = normalizePassword(input.currentPassword);
  if (!member.passwordHash || !(await deps.hasher.verifyPassword(member.passwordHash, current))) {
    countFailedPasswordAttempt(deps, attempt);
    await deps.store.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "password_change_failed", ip: context.ip, userAgent: context.userAgent }, now);
    throw new AuthError("invalid_credentials", { message: "The current password is incorrect." });
  }
  // The current password was right: the reserved attempt must not count, whatever follows.
  await deps.store.limits.clearLockout(tenant.id, member.email);
  const password = await checkNewPassword(deps, input.newPassword);
  const hashed = await hashNewPassword(deps, password);
  const status = member.status === MemberStatus.passwordChangePending ? MemberStatus.unlocked : member.status;
  await deps.store.transaction(async (tx) => {
    await tx.members.updatePassword(tenant.id, member.recordId, { ...hashed, status, emailVerified: member.emailVerified }, now);
    await tx.sessions.deleteMemberSessions(tenant.id, member.recordId, session.idHash);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "password_changed", ip: context.ip, userAgent: context.userAgent }, now);
    await enqueueSecurityAlert(tx, deps, tenant, member, "password_changed", context, now);
  });
  deps.webhooks.notify();
  return PASSWORD_CHANGED_MESSAGE;
}
