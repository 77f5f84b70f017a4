/**
 * The webhooks Latch sends (README "Webhooks", contract.md#d9, contract.md#d16, contract.md#d24, contract.md#d25, contract.md#d26), as the OpenAPI
 * 3.1 `webhooks` section: one entry per `event_type`, with the body each flow builds. The payloads
 * are put together in flows/ (email-requests, verification, email-change, security-alerts,
 * member-events); test/generated-client.test.ts checks every webhook it receives against these.
 */
import { Type, type TSchema } from "typebox";
import { SECURITY_ALERTS } from "../flows/kernel/security-alerts.js";
import type { WebhookEventType } from "../model.js";
import { described, StringEnum, Timestamp } from "./schemas.js";

const Link = (page: string, description: string) =>
  Type.String({ format: "uri", description: `\`https://<tenant domain>/${page}/<recordid>/<token>\`: ${description}` });
const RecordId = Type.String({ pattern: "^[0-9]+$", description: "The member's record id (always a string of digits)." });
const EventType = <T extends WebhookEventType>(type: T) => Type.Literal(type);
/** What every email webhook starts with: whom to write to. */
const recipient = {
  recordid: RecordId,
  email: Type.String({ format: "email", description: "The address to send the email to." }),
  name: Type.String(),
};
/** What every lifecycle event (contract.md#d25) starts with: no email, never a secret. */
const lifecycle = { recordid: RecordId, at: described(Timestamp, "When it happened; deliveries are not in order, so order by this.") };

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
    body: Type.Object({ event_type: EventType("verify_email"), ...recipient, verificationLink: Link("email-verified", "for `POST /auth/verify-email`.") }),
  },
  account_exists: {
    summary: "Someone registered an address that already has an account",
    sentTo: "emailVerificationWebhook",
    description: "Nothing was stored or changed; tell the owner, who can ignore it or reset the password. No link.",
    body: Type.Object({ event_type: EventType("account_exists"), ...recipient }),
  },
  password_reset: {
    summary: "Reset a forgotten password",
    sentTo: "passwordResetWebhook",
    description: "forgot-password for an existing account that is not `Locked`.",
    body: Type.Object({ event_type: EventType("password_reset"), ...recipient, resetLink: Link("reset-password", "for `POST /auth/reset-password`.") }),
  },
  magic_login: {
    summary: "Log in by link or code",
    sentTo: "magicLoginWebhook",
    description: "request-magic-link for a verified account that is not `Locked`. Put both the link and the code in the email: using either uses both.",
    body: Type.Object({
      event_type: EventType("magic_login"),
      ...recipient,
      magicLoginLink: Link("verify-magic-link", "for `POST /auth/verify-magic-link/{recordId}/{token}`."),
      code: Type.String({ pattern: "^[0-9]{6}$", description: "For `POST /auth/verify-login-code`, on another device." }),
    }),
  },
  email_change: {
    summary: "Confirm a new email address",
    sentTo: "emailVerificationWebhook",
    description: "A member asked to change their email to this address; `email` is the **new** address. Not sent when the address is taken.",
    body: Type.Object({
      event_type: EventType("email_change"),
      ...recipient,
      verificationLink: Link("email-change", "for `POST /auth/confirm-email-change`, 1 hour."),
    }),
  },
  security_alert: {
    summary: "Tell the member what happened to their account",
    sentTo: "securityAlertWebhook (only when set)",
    description:
      'A login from a new country or network, or a change to the account (`alert` says which). Put `secureAccountLink` in the email as "This wasn\'t me".',
    body: Type.Object({
      event_type: EventType("security_alert"),
      ...recipient,
      alert: StringEnum(SECURITY_ALERTS, { description: "What happened (README, the `alert` table)." }),
      at: Timestamp,
      ip: Type.String({ description: "The IP of the request that did it." }),
      country: Type.Union([Type.String(), Type.Null()], { description: "ISO 3166 country of `ip`; null without GeoIP." }),
      newEmail: Type.Optional(Type.String({ format: "email", description: "`email_change_requested` only: the address asked for." })),
      passkeyName: Type.Optional(Type.String({ description: "`passkey_added` and `passkey_removed` only." })),
      secureAccountLink: Link("secure-account", "for `POST /auth/secure-account`; 7 days, one use, one per alert."),
    }),
  },
  "member.created": {
    summary: "A pending account became a member",
    sentTo: "eventsWebhook (only when set)",
    description: "Its email was verified, or a reset link proved it.",
    body: Type.Object({ event_type: EventType("member.created"), ...lifecycle }),
  },
  "member.updated": {
    summary: "A member changed",
    sentTo: "eventsWebhook (only when set)",
    description:
      'A rename, a confirmed new email, or a status change (lock, unlock, a required password change, a reset or change that ends it, "this wasn\'t me").',
    body: Type.Object({
      event_type: EventType("member.updated"),
      ...lifecycle,
      changes: Type.Array(StringEnum(["name", "email", "status"]), { minItems: 1, description: "Which fields changed; never their values." }),
    }),
  },
  "member.deleted": {
    summary: "A member was erased",
    sentTo: "eventsWebhook (only when set)",
    description: "An admin erased the member, or the member deleted their account. No email.",
    body: Type.Object({ event_type: EventType("member.deleted"), ...lifecycle }),
  },
  "session.created": {
    summary: "A member logged in",
    sentTo: "eventsWebhook (only when set)",
    description: "A login of any kind opened a session.",
    body: Type.Object({
      event_type: EventType("session.created"),
      ...lifecycle,
      session: Type.String({ description: "The session's public id, as in `GET /auth/sessions`; never the cookie." }),
    }),
  },
};

/** The body schema of each event type, for tests that check what a receiver got. */
export const webhookBodies = Object.fromEntries(Object.entries(events).map(([type, event]) => [type, event.body])) as Record<WebhookEventType, TSchema>;

const signatureHeaders = [
  { name: "webhook-id", description: "`msg_…`, the same on every retry of one event: deduplicate on it." },
  { name: "webhook-timestamp", description: "Unix seconds of this attempt." },
  {
    name: "webhook-signature",
    description:
      "`v1,<base64 HMAC-SHA256>` over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the tenant's `webhookSecret` after `whsec_` (Standard Webhooks).",
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
            default: { description: "Anything else, a redirect or no answer within 10 seconds: the delivery is retried with backoff for at least 24 hours." },
          },
        },
      },
    ]),
  );
}
