/**
 * Enqueueing webhook events inside the flow's transaction (STYLE habit 7): the row commits with
 * the token it carries, or not at all. Payloads are sealed at rest because they hold links.
 */
import type { Random } from "../core/random.js";
import type { WebhookEventType, WebhookPayload } from "../core/webhook-payloads.js";
import type { Member, Tenant } from "../model.js";
import type { SecretBox } from "../security/secret-box.js";
import type { Store } from "../store/index.js";
import { generateWebhookId } from "./webhook-sender.js";

export interface OutboxDeps {
  random: Random;
  secrets: SecretBox;
}

/** Enqueues one delivery of `eventType`, its body typed by the schema the API document shows. */
export async function enqueueWebhook<T extends WebhookEventType>(
  tx: Store,
  deps: OutboxDeps,
  tenant: Tenant,
  eventType: T,
  url: string,
  payload: WebhookPayload<T>,
  now: number,
  options: { discarded?: boolean } = {},
): Promise<void> {
  const body = JSON.stringify({ event_type: eventType, ...payload });
  // Sealed even when discarded: the work for an unknown email matches a real one (contract.md#d19).
  const payloadEnc = deps.secrets.seal(body);
  // Every member event's payload starts with memberFields: its recordid names whom an erasure (contract.md#d22) must take it with.
  const memberId = typeof payload.recordid === "string" ? Number(payload.recordid) : null;
  await tx.outbox.insertDelivery(
    { id: generateWebhookId(deps.random), tenantId: tenant.id, eventType, url, payloadEnc, discarded: options.discarded, memberId },
    now,
  );
}

/** The member fields every payload of contract.md#spec-6 starts with; recordid is a string (contract.md#d8). */
export function memberFields(member: Pick<Member, "recordId" | "email" | "name">): { recordid: string; email: string; name: string } {
  return { recordid: String(member.recordId), email: member.email, name: member.name };
}
