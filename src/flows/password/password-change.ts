/** Change password for a logged-in member (contract.md#spec-4-3): every other session ends, this one stays. */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { enqueueStatusEvent } from "../kernel/member-events.js";
import { nextStatus } from "../kernel/member-status.js";
import { checkCurrentPassword } from "../kernel/password-attempts.js";
import { checkNewPassword, hashNewPassword } from "../kernel/passwords.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import { findSessionMember, type ActiveSession } from "../kernel/sessions.js";

export const PASSWORD_CHANGED_MESSAGE = "Your password has been changed.";

export interface ChangePasswordInput {
  currentPassword: string;
  newPassword: string;
}

export async function changePassword(deps: Deps, tenant: Tenant, session: ActiveSession, input: ChangePasswordInput, context: RequestContext): Promise<string> {
  const now = deps.clock.now();
  const member = await findSessionMember(deps, tenant, session);
  await checkCurrentPassword(deps, tenant, member, input.currentPassword, context, {
    message: "The current password is incorrect.",
    onWrong: () =>
      deps.store.audit.insertAuditEvent(
        tenant.id,
        { memberId: member.recordId, type: "password_change_failed", ip: context.ip, userAgent: context.userAgent },
        now,
      ),
  });
  const password = await checkNewPassword(deps, input.newPassword);
  const hashed = await hashNewPassword(deps, password);
  await deps.store.transaction(async (tx) => {
    // contract.md#d20: decided again on the row as it is now. A lock or a required change that committed
    // while the password was hashed ended this session; a password changed meanwhile is no longer
    // the one just checked. Neither is ever written back over.
    const fresh = await tx.members.findMemberById(tenant.id, member.recordId, { lock: true });
    const status = fresh && nextStatus("changePassword", fresh);
    if (!fresh || !status || !(await tx.sessions.findLiveSession(tenant.id, session.idHash, now))) throw new AuthError("unauthorized");
    if (fresh.passwordHash !== member.passwordHash) throw new AuthError("invalid_credentials", { message: "The current password is incorrect." });
    if (!(await tx.members.updatePassword(tenant.id, member.recordId, fresh, { ...hashed, status, emailVerified: fresh.emailVerified }, now))) {
      throw new Error("member changed under its row lock");
    }
    await tx.sessions.deleteMemberSessions(tenant.id, member.recordId, session.idHash);
    // contract.md#d21: a reset or magic link mailed before the change must not undo it.
    await tx.tokens.deleteMemberLinks(tenant.id, member.recordId);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "password_changed", ip: context.ip, userAgent: context.userAgent }, now);
    await enqueueSecurityAlert(tx, deps, tenant, fresh, "password_changed", context, now);
    await enqueueStatusEvent(tx, deps, tenant, member.recordId, fresh.status, status, now);
  });
  deps.webhooks.notify();
  return PASSWORD_CHANGED_MESSAGE;
}
