/**
 * Enqueueing webhook events inside the flow's transaction (STYLE habit 7): the row commits with
 * the token it carries, or not at all. Payloads are sealed at rest because they hold links.
 */
import type { Random } from "../core/random.js";
import type { Member, Tenant, WebhookEventType } from "../model.js";
import type { SecretBox } from "../security/secret-box.js";
import type { Store } from "../store/index.js";
import type { BackgroundTasks } from "./background.js";
import type { WebhookDispatcher } from "./dispatcher.js";
import { generateWebhookId } from "./webhook-sender.js";

export interface OutboxDeps {
  random: Random;
  secrets: SecretBox;
}

export async function enqueueWebhook(
  tx: Store,
  deps: OutboxDeps,
  tenant: Tenant,
  eventType: WebhookEventType,
  url: string,
  payload: Record<string, unknown>,
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

/**
 * Runs `work` in a transaction after the answer is sent, then wakes the dispatcher if it enqueued
 * anything: for flows whose answer must not reveal, even by its timing, whether an email was sent.
 */
export function enqueueAfterAnswer(
  deps: { background: BackgroundTasks; store: Store; webhooks: WebhookDispatcher },
  name: string,
  work: (tx: Store) => Promise<boolean>,
): void {
  deps.background.run(name, async () => {
    if (await deps.store.transaction(work)) deps.webhooks.notify();
  });
}
