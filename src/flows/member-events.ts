/**
 * D25: lifecycle events to the tenant's optional `eventsWebhook`, in the caller's transaction
 * through the same durable outbox and signing as every webhook (D9). Bodies name the member by
 * record id and list what changed; never a secret, never the old email.
 */
import type { Deps } from "../deps.js";
import { enqueueWebhook } from "../events/outbox.js";
import type { Tenant } from "../model.js";
import type { Store } from "../store/index.js";

export type MemberEvent = "member.created" | "member.updated" | "member.deleted" | "session.created";

/** Enqueues the event when the tenant set `eventsWebhook`; returns whether it did (the caller then wakes the dispatcher). */
export async function enqueueMemberEvent(tx: Store, deps: Deps, tenant: Tenant, event: MemberEvent, recordId: number, fields: Record<string, unknown>, now: number): Promise<boolean> {
  const url = tenant.settings.eventsWebhook;
  if (!url) return false;
  await enqueueWebhook(tx, deps, tenant, event, url, { recordid: String(recordId), at: new Date(now).toISOString(), ...fields }, now);
  return true;
}
