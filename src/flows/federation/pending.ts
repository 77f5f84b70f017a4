/**
 * The step after a federated callback that needs one more proof, in the same browser (the
 * `__Host-latch_fed_pending` cookie, one use, FEDERATION_PENDING_LIFETIME_MS): the second factor of a 2FA
 * member, checked as the second step of a password login is; or the proof of an existing account
 * before its email's identity is linked to it (decisions.md#federated-sign-in).
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type RequestContext, type Tenant } from "../../model.js";
import { sha256Hex } from "../../security/hashing.js";
import { rateRules } from "../../rules.js";
import { enforceRateLimit } from "../kernel/guards.js";
import { lockSessionMember } from "../kernel/reauthentication.js";
import { checkSecondFactorIn, throwForFailedCheck, type SecondFactorCheck } from "../kernel/second-factor.js";
import type { ActiveSession, IssuedSession } from "../kernel/sessions.js";
import { completeFederatedLogin, linkIdentity } from "./outcomes.js";

const noPendingStep = (): AuthError =>
  new AuthError("federation_failed", { message: "This sign-in has expired or was finished in another tab. Start again from the sign-in page." });

export interface FinishedFederatedLogin {
  recordId: number;
  session: IssuedSession;
  returnTo: string | null;
}

/** The code of a 2FA member after the callback; a wrong code leaves the step for the next try. */
export async function finishFederatedSecondFactor(
  deps: Deps,
  tenant: Tenant,
  input: { pendingCookie: string | undefined; twoFACode: string },
  context: RequestContext,
): Promise<FinishedFederatedLogin> {
  const now = deps.clock.now();
  await enforceRateLimit(deps, tenant, rateRules.federatedSecondFactorPerIp, context.ip, now);
  if (input.pendingCookie === undefined) throw noPendingStep();
  const hash = sha256Hex(input.pendingCookie);
  const step = await deps.store.federation.findPending(tenant.id, hash, "second_factor", now);
  if (!step) throw noPendingStep();
  const connection = await deps.store.connections.findConnection(tenant.id, step.connectionId);
  if (!connection) throw noPendingStep();
  type Result = { kind: "done"; session: IssuedSession } | { kind: "refused"; check: SecondFactorCheck & { ok: false } };
  const result = await deps.store.transaction(async (tx): Promise<Result> => {
    const member = await tx.members.findMemberById(tenant.id, step.memberId, { lock: true });
    if (!member || member.status === MemberStatus.pending) throw noPendingStep();
    if (member.status === MemberStatus.locked) throw new AuthError("account_locked");
    // The step was made for a 2FA member by a linked identity: if either changed since (2FA reset by
    // "this wasn't me", the identity unlinked), the step proves nothing any more: start again.
    const identity = await tx.federation.findIdentity(tenant.id, step.connectionId, step.subject);
    if (member.twoFactorStatus !== "Enabled" || identity?.memberId !== member.recordId) throw noPendingStep();
    const check = await checkSecondFactorIn(tx, deps, tenant, member, input.twoFACode, context, now);
    // Returned, not thrown: the failed attempt's count and audit row must commit.
    if (!check.ok) return { kind: "refused", check };
    if (!(await tx.federation.consumePending(tenant.id, hash, "second_factor", now))) throw noPendingStep();
    const session = await completeFederatedLogin(tx, deps, tenant, member, connection, { subject: step.subject, email: step.email }, context, now, {
      secondFactor: true,
    });
    return { kind: "done", session };
  });
  deps.webhooks.notify();
  if (result.kind === "refused") throwForFailedCheck(result.check);
  return { recordId: step.memberId, session: result.session, returnTo: step.returnTo };
}

/**
 * Links the identity that met an existing member's email, once that member has signed in in this
 * browser *after* the callback (a session older than the step proves nothing about this person).
 */
export async function confirmFederatedLink(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: { pendingCookie: string | undefined },
  context: RequestContext,
): Promise<{ connection: string; returnTo: string | null }> {
  const now = deps.clock.now();
  if (input.pendingCookie === undefined) throw noPendingStep();
  const hash = sha256Hex(input.pendingCookie);
  const step = await deps.store.federation.findPending(tenant.id, hash, "link", now);
  if (!step) throw noPendingStep();
  if (step.memberId !== session.memberId || session.createdAt <= step.createdAt) {
    throw new AuthError("unauthorized", { message: "Sign in to the account with this email address first, then link it." });
  }
  const connection = await deps.store.connections.findConnection(tenant.id, step.connectionId);
  if (!connection) throw noPendingStep();
  await deps.store.transaction(async (tx) => {
    const member = await lockSessionMember(tx, tenant, session, now);
    if (!(await tx.federation.consumePending(tenant.id, hash, "link", now))) throw noPendingStep();
    if (!(await linkIdentity(tx, deps, tenant, member, connection, { subject: step.subject, email: step.email }, context, now))) {
      throw new AuthError("federation_failed", { message: "This identity is already linked to an account." });
    }
  });
  deps.webhooks.notify();
  return { connection: connection.displayName, returnTo: step.returnTo };
}

/** What the link page shows before the proof: the provider's name and the email it matched. */
export async function describePendingLink(
  deps: Deps,
  tenant: Tenant,
  pendingCookie: string | undefined,
): Promise<{ connection: string; email: string | null; memberId: number } | undefined> {
  if (pendingCookie === undefined) return undefined;
  const step = await deps.store.federation.findPending(tenant.id, sha256Hex(pendingCookie), "link", deps.clock.now());
  if (!step) return undefined;
  const connection = await deps.store.connections.findConnection(tenant.id, step.connectionId);
  return connection && { connection: connection.displayName, email: step.email, memberId: step.memberId };
}
