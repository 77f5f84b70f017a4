/**
 * What every successful login records (contract.md#d16): time, IP, user agent, and with GEOIP_DB country and
 * city. A login from a country or network the member has not used before writes login_anomaly
 * and sends the security alert; a member's first login sets the baseline and alerts nothing.
 */
import type { TransactionDeps } from "../../deps.js";
import type { Member, RequestContext, Tenant } from "../../model.js";
import { networkOf } from "../../providers/geoip.js";
import type { LoginOrigin } from "../../store/login-origins.js";
import type { Store } from "../../store/index.js";
import { enqueueSecurityAlert } from "./security-alerts.js";
import type { LoginMethod } from "../../metrics.js";

export async function recordSuccessfulLogin(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  member: Member,
  method: LoginMethod,
  context: RequestContext,
  now: number,
): Promise<void> {
  const { country, city } = deps.geo.locate(context.ip);
  const network = networkOf(context.ip);
  const origins: LoginOrigin[] = [{ kind: "network", value: network }];
  if (country) origins.push({ kind: "country", value: country });
  const { hadHistory, unseen } = await tx.loginOrigins.recordOrigins(tenant.id, member.recordId, origins, now);
  const where = { ip: context.ip, userAgent: context.userAgent };
  await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "login_succeeded", ...where, details: { method, country, city } }, now);
  if (hadHistory && unseen.length > 0) {
    const details = { newCountry: unseen.some((o) => o.kind === "country"), newNetwork: unseen.some((o) => o.kind === "network"), country, network };
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "login_anomaly", ...where, details }, now);
    await enqueueSecurityAlert(tx, deps, tenant, member, "login_anomaly", context, now);
  }
}
