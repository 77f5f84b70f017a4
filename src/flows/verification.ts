/** Email verification: sending the link (registration, resends) and consuming it (spec 4.1). */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { enqueueWebhook, memberFields } from "../events/outbox.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../model.js";
import { parseRecordId } from "../security/identity.js";
import { sha256Hex } from "../security/hashing.js";
import type { Store } from "../store/index.js";
import { issueOneTimeToken } from "./one-time-tokens.js";

/** Issues a verification token and its verify_email webhook inside the caller's transaction. */
export async function enqueueVerificationEmail(tx: Store, deps: Deps, tenant: Tenant, member: Pick<Member, "recordId" | "email" | "name">, now: number): Promise<void> {
  const verificationLink = await issueOneTimeToken(tx, deps, tenant, member.recordId, "verify_email", now);
  await enqueueWebhook(tx, deps, tenant, "verify_email", tenant.settings.emailVerificationWebhook, { ...memberFields(member), verificationLink }, now);
}

export interface VerifyEmailInput {
  recordId: string;
  token: string;
}

export async function verifyEmail(deps: Deps, tenant: Tenant, input: VerifyEmailInput, context: RequestContext): Promise<void> {
  const now = deps.clock.now();
  const recordId = parseRecordId(input.recordId);
  if (recordId === undefined) throw new AuthError("invalid_token");
  const verified = await deps.store.transaction(async (tx) => {
    if (!(await tx.tokens.consumeToken(tenant.id, recordId, "verify_email", sha256Hex(input.token), now))) return false;
    await tx.members.markEmailVerified(tenant.id, recordId, now);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: recordId, type: "email_verified", ip: context.ip, userAgent: context.userAgent }, now);
    return true;
  });
  if (!verified) throw new AuthError("invalid_token");
}

/** Whether a resend may go out: only a member still waiting for verification gets one. */
export function isAwaitingVerification(member: Member | undefined): member is Member {
  return member !== undefined && member.status === MemberStatus.pending;
}
