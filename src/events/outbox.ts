/**
 * Enqueueing webhook events inside the flow's transaction (STYLE habit 7): the row commits with
 * the token it carries, or not at all. Payloads are sealed at rest because they hold links.
 */
import type { Random } from "../core/random.js";
import type { Tenant, WebhookEventType } from "../model.js";
import type { SecretBox } from "../security/secret-box.js";
import type { Store } from "../store/index.js";
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
): Promise<void> {
  const body = JSON.stringify({ event_type: eventType, ...payload });
  await tx.outbox.insertDelivery(
    { id: generateWebhookId(deps.random), tenantId: tenant.id, eventType, url, payloadEnc: deps.secrets.seal(body) },
    now,
  );
}
