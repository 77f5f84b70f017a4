/**
 * contract.md#d16: the tenant's optional securityAlertWebhook tells a member of what happened to their
 * account: a login from somewhere new, a password change or reset, 2FA enabled, disabled or locked
 * by wrong codes (contract.md#d30), a recovery code used, an email change asked or made (contract.md#d24). Enqueued in the caller's transaction,
 * like every webhook. Every alert carries a `secureAccountLink` (contract.md#d24, "this wasn't me").
 */
import { describeDevice } from "../../core/devices.js";
import { toTimestamp } from "../../core/schema.js";
import type { TransactionDeps } from "../../deps.js";
import { SECURITY_ALERTS, type SecurityAlert, type WebhookPayload } from "../../core/webhook-payloads.js";
import { enqueueWebhook, memberFields } from "../../events/outbox.js";
import type { Member, RequestContext, Tenant } from "../../model.js";
import type { Store } from "../../store/index.js";
import { issueOneTimeToken } from "./one-time-tokens.js";

export { SECURITY_ALERTS, type SecurityAlert };

export interface AlertOptions {
  /** Fields the alert adds (email_change_requested: `newEmail`; the passkey alerts: `passkeyName`). */
  fields?: Pick<WebhookPayload<"security_alert">, "newEmail" | "passkeyName" | "connection">;
  /**
   * email_change_requested and email_changed: the address "this wasn't me" gives back to the member
   * (the one the alert goes to) if the account no longer has it by then (contract.md#d30).
   */
  restoreEmail?: string;
}

export async function enqueueSecurityAlert(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Pick<Member, "recordId" | "email" | "name">,
  alert: SecurityAlert,
  context: RequestContext,
  now: number,
  options: AlertOptions = {},
): Promise<void> {
  const url = tenant.settings.securityAlertWebhook;
  if (!url) return;
  // Each alert keeps its own link (contract.md#d24: one use, TOKEN_LIFETIMES_MS.secure_account). Nothing but an admin lock or an erasure
  // voids it (contract.md#d30): not a password or email change, not another alert's link used by an intruder.
  // Ordered by the member's counter, bumped under the row lock, never by the clock (contract.md#d30).
  const seq = await tx.members.nextSecuritySeq(tenant.id, member.recordId);
  const secureAccountLink = await issueOneTimeToken(tx, deps, tenant, member.recordId, "secure_account", now, {
    newEmail: options.restoreEmail,
    keepOthers: true,
    seq,
  });
  await enqueueWebhook(
    tx,
    deps,
    tenant,
    "security_alert",
    url,
    {
      ...memberFields(member),
      alert,
      at: toTimestamp(now),
      ip: context.ip,
      country: deps.geo.locate(context.ip).country,
      device: describeDevice(context.userAgent) ?? null,
      ...options.fields,
      secureAccountLink,
    },
    now,
  );
}
