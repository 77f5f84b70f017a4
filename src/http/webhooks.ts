/**
 * The webhooks Latch sends (README "Webhooks", contract.md#d9, contract.md#d16, contract.md#d24, contract.md#d25, contract.md#d26), as the OpenAPI
 * 3.1 `webhooks` section: one entry per `event_type`, with the body schema the flows build their
 * payloads to (core/webhook-payloads.ts); test/generated-client.test.ts checks every webhook it
 * receives against these.
 */
import type { TSchema } from "typebox";
import { HOUR } from "../core/clock.js";
import { WEBHOOK_BODIES, type WebhookEventType } from "../core/webhook-payloads.js";
import { describeDuration, WEBHOOK_ATTEMPT_TIMEOUT_MS, WEBHOOK_RETRY_FOR_MS, WEBHOOK_SECRET_ROTATION_WINDOW_MS } from "../rules.js";

interface WebhookEvent {
  summary: string;
  sentTo: string;
  description: string;
  body: TSchema;
}

const events: Record<WebhookEventType, WebhookEvent> = {
  verify_email: {
    summary: "Verify an email address",
    sentTo: "emailVerificationWebhook",
    description:
      "A registration of either kind (a repeat registration of a still-pending email included, each with a link of its own), or a public or admin resend for a pending account (that link carries no password).",
    body: WEBHOOK_BODIES["verify_email"],
  },
  account_exists: {
    summary: "Someone registered an address that already has an account",
    sentTo: "emailVerificationWebhook",
    description: "Nothing was stored or changed; tell the owner, who can ignore it or reset the password. No link.",
    body: WEBHOOK_BODIES["account_exists"],
  },
  password_reset: {
    summary: "Reset a forgotten password",
    sentTo: "passwordResetWebhook",
    description: "forgot-password for an existing account that is not `Locked`.",
    body: WEBHOOK_BODIES["password_reset"],
  },
  magic_login: {
    summary: "Log in by link or code",
    sentTo: "magicLoginWebhook",
    description: "request-magic-link for a verified account that is not `Locked`. Put both the link and the code in the email: using either uses both.",
    body: WEBHOOK_BODIES["magic_login"],
  },
  email_change: {
    summary: "Confirm a new email address",
    sentTo: "emailVerificationWebhook",
    description: "A member asked to change their email to this address; `email` is the **new** address. Not sent when the address is taken.",
    body: WEBHOOK_BODIES["email_change"],
  },
  security_alert: {
    summary: "Tell the member what happened to their account",
    sentTo: "securityAlertWebhook (only when set)",
    description:
      'A login from a new country or network, or a change to the account (`alert` says which). Put `secureAccountLink` in the email as "This wasn\'t me".',
    body: WEBHOOK_BODIES["security_alert"],
  },
  "member.created": {
    summary: "A pending account became a member",
    sentTo: "eventsWebhook (only when set)",
    description: "Its email was verified, or a reset link proved it.",
    body: WEBHOOK_BODIES["member.created"],
  },
  "member.updated": {
    summary: "A member changed",
    sentTo: "eventsWebhook (only when set)",
    description:
      'A rename, a confirmed new email, or a status change (lock, unlock, a required password change, a reset or change that ends it, "this wasn\'t me").',
    body: WEBHOOK_BODIES["member.updated"],
  },
  "member.deleted": {
    summary: "A member was erased",
    sentTo: "eventsWebhook (only when set)",
    description: "An admin erased the member, or the member deleted their account. No email.",
    body: WEBHOOK_BODIES["member.deleted"],
  },
  "session.created": {
    summary: "A member logged in",
    sentTo: "eventsWebhook (only when set)",
    description: "A login of any kind opened a session.",
    body: WEBHOOK_BODIES["session.created"],
  },
};

const signatureHeaders = [
  { name: "webhook-id", description: "`msg_…`, the same on every retry of one event: deduplicate on it." },
  { name: "webhook-timestamp", description: "Unix seconds of this attempt." },
  {
    name: "webhook-signature",
    description:
      "`v1,<base64 HMAC-SHA256>` over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the tenant's `webhookSecret` after `whsec_` (Standard Webhooks). " +
      `For ${describeDuration(WEBHOOK_SECRET_ROTATION_WINDOW_MS)} after the secret is rotated, two space-separated signatures, \`v1,<old secret's> v1,<new secret's>\`: accept the delivery when any one matches the secret you hold.`,
  },
].map(({ name, description }) => ({ name, in: "header", required: true, description, schema: { type: "string" } }));

/** The document's `webhooks`: a POST per event type, signed per Standard Webhooks (contract.md#d9). */
export function webhookPathItems(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(events).map(([type, event]) => [
      type,
      {
        post: {
          summary: event.summary,
          description: `Sent to the tenant's \`${event.sentTo.replace(" (only when set)", "")}\`${event.sentTo.endsWith("(only when set)") ? " when it is set" : ""}. ${event.description} Delivered at least once and not in order; signed per Standard Webhooks (\`webhook-id\`, \`webhook-timestamp\`, \`webhook-signature\`).`,
          operationId: `webhook_${type.replace(".", "_")}`,
          tags: ["webhooks"],
          security: [],
          parameters: signatureHeaders,
          requestBody: { required: true, content: { "application/json": { schema: event.body } } },
          responses: {
            "2XX": { description: "Received. The body of the answer is ignored." },
            default: {
              description: `Anything else, a redirect or no answer within ${describeDuration(WEBHOOK_ATTEMPT_TIMEOUT_MS)}: the delivery is retried with backoff for at least ${WEBHOOK_RETRY_FOR_MS / HOUR} hours.`,
            },
          },
        },
      },
    ]),
  );
}
