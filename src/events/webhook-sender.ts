/**
 * Standard Webhooks signing and ONE guarded delivery attempt (contract.md#d9). The outbox dispatcher
 * owns retries, backoff and the webhook-id's stability; this file owns what a single POST may touch.
 */
import { createHmac } from "node:crypto";
import type { Random } from "../core/random.js";
import { guardedPost } from "../security/outbound.js";

const SECRET_PREFIX = "whsec_";

export function generateWebhookSecret(random: Random): string {
  return SECRET_PREFIX + random.bytes(32).toString("base64");
}

export function generateWebhookId(random: Random): string {
  return "msg_" + random.bytes(16).toString("base64url");
}

/** Standard Webhooks: "v1," + base64(HMAC-SHA256(key, `${id}.${timestampSeconds}.${body}`)), key = base64-decoded part after "whsec_". */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  const encodedKey = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(encodedKey, "base64");
  if (key.length === 0) throw new Error("webhook secret is empty");
  return "v1," + createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
}

/**
 * The `webhook-signature` header: one `v1,…` per secret, space-separated, as Standard Webhooks allows,
 * so a receiver holding any one of them verifies (decisions.md#webhook-secret-rotation: the old secret first).
 */
export function signWebhookWithEach(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  if (secrets.length === 0) throw new Error("no webhook secret");
  return secrets.map((secret) => signWebhook(secret, id, timestampSeconds, body)).join(" ");
}

export interface WebhookRequest {
  url: string;
  /** Each one signs: the current secret, after the previous one while its rotation window lasts. */
  secrets: readonly string[];
  id: string;
  timestampSeconds: number;
  body: string;
  allowPrivateNetworks: boolean;
  timeoutMs: number;
}
export type WebhookResult = { ok: true; status: number } | { ok: false; status?: number; error: string };

function describeStatus(status: number): WebhookResult {
  if (status >= 200 && status < 300) return { ok: true, status };
  if (status >= 300 && status < 400) return { ok: false, status, error: "redirect not followed" };
  return { ok: false, status, error: `http ${status}` };
}

/** Never throws: every failure becomes { ok: false, error } with a short, operator-safe error string. */
export async function sendWebhook(webhook: WebhookRequest): Promise<WebhookResult> {
  let signature: string;
  try {
    signature = signWebhookWithEach(webhook.secrets, webhook.id, webhook.timestampSeconds, webhook.body);
  } catch {
    return { ok: false, error: "invalid secret" };
  }
  const result = await guardedPost({
    url: webhook.url,
    body: webhook.body,
    timeoutMs: webhook.timeoutMs,
    allowPrivateNetworks: webhook.allowPrivateNetworks,
    headers: {
      "content-type": "application/json",
      "user-agent": "Latch-Webhooks/1",
      "webhook-id": webhook.id,
      "webhook-timestamp": String(webhook.timestampSeconds),
      "webhook-signature": signature,
    },
  });
  // The receiver's body is discarded: once it has a status, it has answered.
  return "error" in result ? { ok: false, error: result.error } : describeStatus(result.status);
}
