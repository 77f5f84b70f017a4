/**
 * decisions.md#admin-changes: a change to a tenant's configuration made by the admin API or the
 * operator's CLI (an OAuth client, a federated connection): one transaction that makes the change and
 * writes its audit row, or, when the thing is not the tenant's, writes nothing and is not found.
 */
import type { Deps } from "../../deps.js";
import type { AuthError } from "../../errors.js";
import type { AuditEventType, RequestContext, Tenant } from "../../model.js";
import type { Store } from "../../store/index.js";

export interface AdminChange {
  type: AuditEventType;
  /** What the audit row names (an id; never a secret). */
  details: Record<string, string>;
  /** The admin API passes the request's context; the operator's CLI has none. */
  context: RequestContext | undefined;
}

/** The audit row of a change: no member, `by: admin` (with the request's IP and agent) or `by: operator`. */
export async function auditAdminChange(tx: Store, tenant: Tenant, change: AdminChange, now: number): Promise<void> {
  const by = change.context === undefined ? "operator" : "admin";
  await tx.audit.insertAuditEvent(
    tenant.id,
    { memberId: null, type: change.type, ip: change.context?.ip ?? null, userAgent: change.context?.userAgent ?? null, details: { ...change.details, by } },
    now,
  );
}

/**
 * Runs `apply` and the audit row in one transaction. `apply` answers undefined when the tenant has no such
 * thing: then `notFound` is thrown and no row is written.
 */
export async function changeAudited<T>(
  deps: Deps,
  tenant: Tenant,
  change: AdminChange & { notFound: () => AuthError },
  apply: (tx: Store, now: number) => Promise<T | undefined>,
): Promise<T> {
  const now = deps.clock.now();
  const result = await deps.store.transaction(async (tx) => {
    const done = await apply(tx, now);
    if (done !== undefined) await auditAdminChange(tx, tenant, change, now);
    return done;
  });
  if (result === undefined) throw change.notFound();
  return result;
}

/** Deletes one of the tenant's things (`remove` answers false when it was gone) with its audit row. */
export async function deleteAudited(
  deps: Deps,
  tenant: Tenant,
  change: AdminChange & { notFound: () => AuthError },
  remove: (tx: Store) => Promise<boolean>,
): Promise<void> {
  await changeAudited(deps, tenant, change, async (tx) => ((await remove(tx)) ? true : undefined));
}
