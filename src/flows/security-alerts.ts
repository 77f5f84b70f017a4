/**
 * D16: the tenant's optional securityAlertWebhook tells a member of what happened to their
 * account: a login from somewhere new, a password change or reset, 2FA enabled or disabled, a
 * recovery code used. Enqueued in the caller's transaction, like every webhook.
 */
import type { Deps } from "../deps.js";
import { enqueueWebhook, memberFields } from "../events/outbox.js";
import type { Member, RequestContext, Tenant } from "../model.js";
import type { Store } from "../store/index.js";

export type SecurityAlert = "login_anomaly" | "password_changed" | "password_reset" | "two_factor_enabled" | "two_factor_disabled" | "recovery_code_used";

export async function enqueueSecurityAlert(
  tx: Store,
  deps: Deps,
  tenant: Tenant,
  member: Pick<Member, "recordId" | "email" | "name">,
  alert: SecurityAlert,
  context: RequestContext,
  now: number,
): Promise<void> {
  const url = tenant.settings.securityAlertWebhook;
  if (!url) return;
  await enqueueWebhook(tx, deps, tenant, "security_alert", url, {
    ...memberFields(member),
    alert,
    at: new Date(now).toISOString(),
    ip: context.ip,
    country: deps.geo.locate(context.ip).country,
  }, now);
}
