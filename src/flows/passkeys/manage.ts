/**
 * contract.md#d26: a member's passkeys as they see them: list, rename, remove (with a security alert). Names
 * follow the rule of member names: a name goes into an alert, where an invisible character could
 * disguise it.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { type RequestContext, type Tenant } from "../../model.js";
import { PASSKEY_NAME_MAX_LENGTH } from "../../rules.js";
import { isShowableName } from "../../security/identity.js";
import type { Passkey } from "../../store/passkeys.js";
import { iso } from "../kernel/member-view.js";
import { enqueueSecurityAlert } from "../kernel/security-alerts.js";
import { lockSessionMember } from "../kernel/reauthentication.js";
import { type ActiveSession } from "../kernel/sessions.js";

export interface PasskeyView {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  /** Synced to the member's other devices (a multi-device credential that is backed up). */
  backedUp: boolean;
}

export function passkeyView(passkey: Passkey): PasskeyView {
  return {
    id: passkey.id,
    name: passkey.name,
    createdAt: iso(passkey.createdAt),
    lastUsedAt: passkey.lastUsedAt === null ? null : iso(passkey.lastUsedAt),
    backedUp: passkey.backedUp,
  };
}

/**
 * A passkey's name, 1 to PASSKEY_NAME_MAX_LENGTH characters once spaces are folded; no control or format characters (the
 * same rule as a member's name): the name goes into a security alert, where a right-to-left
 * override or a zero-width character could disguise it.
 */
export function passkeyName(raw: string): string {
  const name = raw.normalize("NFC").replace(/\s+/g, " ").trim();
  if ([...name].length < 1 || [...name].length > PASSKEY_NAME_MAX_LENGTH || !isShowableName(name, raw)) {
    throw new AuthError("validation_failed", {
      message: `Give the passkey a name of 1 to ${PASSKEY_NAME_MAX_LENGTH} characters.`,
      details: [{ field: "name", rule: "passkey_name", message: `1 to ${PASSKEY_NAME_MAX_LENGTH} characters, no control or invisible formatting characters` }],
    });
  }
  return name;
}

export async function listPasskeys(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<PasskeyView[]> {
  return (await deps.store.passkeys.listMemberPasskeys(tenant.id, session.memberId)).map(passkeyView);
}

function noSuchPasskey(): AuthError {
  return new AuthError("not_found", { message: "No such passkey." });
}

export async function renamePasskey(deps: Deps, tenant: Tenant, session: ActiveSession, id: string, name: string): Promise<PasskeyView> {
  const clean = passkeyName(name);
  if (!(await deps.store.passkeys.renamePasskey(tenant.id, session.memberId, id, clean))) throw noSuchPasskey();
  const passkey = (await deps.store.passkeys.listMemberPasskeys(tenant.id, session.memberId)).find((p) => p.id === id);
  if (!passkey) throw noSuchPasskey();
  return passkeyView(passkey);
}

export async function deletePasskey(deps: Deps, tenant: Tenant, session: ActiveSession, id: string, context: RequestContext): Promise<void> {
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    const member = await lockSessionMember(tx, tenant, session, now);
    const removed = await tx.passkeys.deletePasskey(tenant.id, member.recordId, id);
    if (!removed) throw noSuchPasskey();
    await tx.audit.insertAuditEvent(
      tenant.id,
      { memberId: member.recordId, type: "passkey_removed", ip: context.ip, userAgent: context.userAgent, details: { passkey: id } },
      now,
    );
    await enqueueSecurityAlert(tx, deps, tenant, member, "passkey_removed", context, now, { fields: { passkeyName: removed.name } });
  });
  deps.webhooks.notify();
}
