/**
 * Checking a Standard Webhooks signature, as a tenant's receiver does (README "Webhooks"): the dev
 * inbox stores nothing it cannot verify, so it shows only what Latch itself signed.
 */
import { MINUTE } from "../core/clock.js";
import { signWebhook } from "../events/webhook-sender.js";
import { constantTimeEqual } from "../security/hashing.js";

/** The reference implementation's tolerance: older or future-dated timestamps are refused. */
const TIMESTAMP_TOLERANCE_MS = 5 * MINUTE;

export interface SignedWebhookHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/**
 * True when one of the space-separated `v1,<base64>` signatures is the HMAC of id.timestamp.body under
 * one of `secrets`: a tenant's current secret, and the previous one while its rotation window lasts
 * (decisions.md#webhook-secret-rotation), so an attempt signed just before a rotation still verifies.
 */
export function isWebhookSignatureValid(secrets: readonly string[], headers: SignedWebhookHeaders, body: string, now: number): boolean {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature || !/^[0-9]{1,12}$/.test(timestamp)) return false;
  const timestampSeconds = Number(timestamp);
  if (Math.abs(now - timestampSeconds * 1000) > TIMESTAMP_TOLERANCE_MS) return false;
  const candidates = signature.split(" ");
  // Every pair is compared, so the time taken doesn't tell which one matched.
  return secrets
    .map((secret) => signWebhook(secret, id, timestampSeconds, body))
    .reduce((found, expected) => candidates.reduce((match, candidate) => constantTimeEqual(candidate, expected) || match, false) || found, false);
}
