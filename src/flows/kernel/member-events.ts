/**
 * contract.md#d25: lifecycle events to the tenant's optional `eventsWebhook`, in the caller's transaction
 * through the same durable outbox and signing as every webhook (contract.md#d9). Bodies name the member by
 * record id and list what changed; never a secret, never the old email.
 */
import { toTimestamp } from "../../core/schema.js";
import type { TransactionDeps } from "../../deps.js";
import type { WebhookPayload } from "../../core/webhook-payloads.js";
import { enqueueWebhook } from "../../events/outbox.js";
import { MemberStatus, type Tenant } from "../../model.js";
import type { Store } from "../../store/index.js";

export type MemberEvent = "member.created" | "member.updated" | "member.deleted" | "session.created";
/** What an event adds to the record id and time every lifecycle event starts with. */
/** A field a `member.updated` names as changed. */
export type MemberChange = WebhookPayload<"member.updated">["changes"][number];
type EventFields<E extends MemberEvent> = Omit<WebhookPayload<E>, "recordid" | "at">;

/** Enqueues the event when the tenant set `eventsWebhook`; returns whether it did (the caller then wakes the dispatcher). */
export async function enqueueMemberEvent<E extends MemberEvent>(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  event: E,
  recordId: number,
  fields: EventFields<E>,
  now: number,
): Promise<boolean> {
  const url = tenant.settings.eventsWebhook;
  if (!url) return false;
  // TypeScript cannot see that the fields of E plus the common two are E's payload (a generic Omit).
  const payload = { recordid: String(recordId), at: toTimestamp(now), ...fields } as WebhookPayload<E>;
  await enqueueWebhook(tx, deps, tenant, event, url, payload, now);
  return true;
}

/**
 * The event a status change is (contract.md#d25): pending -> active is `member.created` (the email is verified,
 * the account now exists for the tenant); any other change is `member.updated` with `changes: ["status"]`.
 */
export async function enqueueStatusEvent(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  recordId: number,
  from: MemberStatus,
  to: MemberStatus,
  now: number,
): Promise<boolean> {
  if (from === to) return false;
  if (from === MemberStatus.pending && to !== MemberStatus.locked) return enqueueMemberEvent(tx, deps, tenant, "member.created", recordId, {}, now);
  return enqueueMemberEvent(tx, deps, tenant, "member.updated", recordId, { changes: ["status"] }, now);
}
