/**
 * A member's own identities (decisions.md#federated-sign-in): list, link another (re-authentication
 * of contract.md#d24, then the start redirect), unlink (re-authentication, security alert).
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { iso } from "../kernel/member-view.js";
import { lockSessionMember, reauthenticate, type Reauthentication } from "../kernel/reauthentication.js";
import { enqueueMemberEvent } from "../kernel/member-events.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import type { ActiveSession } from "../kernel/sessions.js";
import { UpstreamError } from "../../providers/upstream.js";
import { startFederation, type StartedFederation } from "./sign-in.js";

export interface IdentityView {
  id: string;
  connection: string;
  displayName: string;
  /** The email the provider gave when it was last used; shown to the member, never matched on. */
  email: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export async function listIdentities(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<IdentityView[]> {
  const [identities, connections] = await Promise.all([
    deps.store.federation.listMemberIdentities(tenant.id, session.memberId),
    deps.store.connections.listConnections(tenant.id),
  ]);
  const names = new Map(connections.map((c) => [c.id, c.displayName]));
  return identities.map((identity) => ({
    id: identity.id,
    connection: identity.connectionId,
    displayName: names.get(identity.connectionId) ?? identity.connectionId,
    email: identity.email,
    createdAt: iso(identity.createdAt),
    lastUsedAt: identity.lastUsedAt === null ? null : iso(identity.lastUsedAt),
  }));
}

async function reauthenticateSession(deps: Deps, tenant: Tenant, session: ActiveSession, input: Reauthentication, context: RequestContext): Promise<void> {
  const member = await deps.store.members.findMemberById(tenant.id, session.memberId);
  if (!member) throw new AuthError("unauthorized");
  await reauthenticate(deps, tenant, session, member, input, context);
}

export async function startIdentityLink(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  input: Reauthentication & { connectionId: string; returnTo: string | null },
  context: RequestContext,
): Promise<StartedFederation> {
  await reauthenticateSession(deps, tenant, session, input, context);
  const link = {
    connectionId: input.connectionId,
    returnTo: input.returnTo,
    purpose: "link" as const,
    memberId: session.memberId,
    sessionHash: session.idHash,
  };
  // The provider's discovery failing is this call's answer (the start route redirects to the error page instead).
  return startFederation(deps, tenant, link, context).catch((error: unknown) => {
    if (error instanceof UpstreamError) throw new AuthError("federation_failed", { message: "The identity provider could not be reached. Please try again." });
    throw error;
  });
}

export async function unlinkIdentity(
  deps: Deps,
  tenant: Tenant,
  session: ActiveSession,
  id: string,
  input: Reauthentication,
  context: RequestContext,
): Promise<void> {
  await reauthenticateSession(deps, tenant, session, input, context);
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    const member = await lockSessionMember(tx, tenant, session, now);
    const removed = await tx.federation.deleteMemberIdentity(tenant.id, member.recordId, id);
    if (!removed) throw new AuthError("not_found", { message: "No such identity." });
    // A second-factor step or link begun before the unlink must not finish after it.
    await tx.federation.deleteMemberPending(tenant.id, member.recordId);
    const connection = await tx.connections.findConnection(tenant.id, removed.connectionId);
    const where = { ip: context.ip, userAgent: context.userAgent };
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "identity_unlinked", ...where, details: { connection: removed.connectionId } },
      now,
    );
    await enqueueSecurityAlert(tx, deps, tenant, member, "identity_unlinked", context, now, {
      fields: { connection: connection?.displayName ?? removed.connectionId },
    });
    await enqueueMemberEvent(tx, deps, tenant, "member.updated", member.recordId, { changes: ["identities"] }, now);
  });
  deps.webhooks.notify();
}
