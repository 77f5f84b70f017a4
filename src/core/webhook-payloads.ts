/**
 * The body of each webhook Latch sends, one TypeBox schema per `event_type`: the flows build their
 * payloads to these types (events/outbox.ts `enqueueWebhook`), and the OpenAPI document's
 * `webhooks` section (http/webhooks.ts) shows the same schemas, so what is sent and what is
 * documented cannot drift apart. test/generated-client.test.ts checks every delivery it receives
 * against them.
 */
import { Type, type Static, type TSchema } from "typebox";
import { describeDuration, LOGIN_CODE_DIGITS, TOKEN_LIFETIMES_MS } from "../rules.js";
import { EmailAddress } from "./email-address.js";
import { described, StringEnum, Timestamp } from "./schema.js";

/** The `alert` of a `security_alert` webhook (README, Webhooks). */
export const SECURITY_ALERTS = [
  "login_anomaly",
  "password_changed",
  "password_reset",
  "two_factor_enabled",
  "two_factor_disabled",
  "two_factor_locked",
  "recovery_code_used",
  "email_change_requested",
  "email_changed",
  "passkey_added",
  "passkey_removed",
  "identity_linked",
  "identity_unlinked",
] as const;
export type SecurityAlert = (typeof SECURITY_ALERTS)[number];

const Link = (page: string, description: string) =>
  Type.String({ format: "uri", description: `\`https://<tenant domain>/${page}/<recordid>/<token>\`: ${description}` });
const RecordId = Type.String({ pattern: "^[0-9]+$", description: "The member's record id (always a string of digits)." });
/** What every email webhook starts with: whom to write to. */
const recipient = {
  recordid: RecordId,
  email: EmailAddress("The address to send the email to (trimmed and lowercased)."),
  name: Type.String(),
};
/** What every lifecycle event (contract.md#d25) starts with: no email, never a secret. */
const lifecycle = { recordid: RecordId, at: described(Timestamp, "When it happened; deliveries are not in order, so order by this.") };

export const WEBHOOK_BODIES = {
  verify_email: Type.Object({
    event_type: Type.Literal("verify_email"),
    ...recipient,
    verificationLink: Link("email-verified", "for `POST /auth/verify-email`."),
  }),
  account_exists: Type.Object({ event_type: Type.Literal("account_exists"), ...recipient }),
  password_reset: Type.Object({
    event_type: Type.Literal("password_reset"),
    ...recipient,
    resetLink: Link("reset-password", "for `POST /auth/reset-password`."),
  }),
  magic_login: Type.Object({
    event_type: Type.Literal("magic_login"),
    ...recipient,
    magicLoginLink: Link("verify-magic-link", "for `POST /auth/verify-magic-link/{recordId}/{token}`."),
    code: Type.String({ pattern: `^[0-9]{${LOGIN_CODE_DIGITS}}$`, description: "For `POST /auth/verify-login-code`, on another device." }),
  }),
  email_change: Type.Object({
    event_type: Type.Literal("email_change"),
    ...recipient,
    verificationLink: Link("email-change", `for \`POST /auth/confirm-email-change\`, ${describeDuration(TOKEN_LIFETIMES_MS.email_change)}.`),
  }),
  security_alert: Type.Object({
    event_type: Type.Literal("security_alert"),
    ...recipient,
    alert: StringEnum(SECURITY_ALERTS, { description: "What happened (README, the `alert` table)." }),
    at: Timestamp,
    ip: Type.String({ description: "The IP of the request that did it." }),
    country: Type.Union([Type.String(), Type.Null()], { description: "ISO 3166 country of `ip`; null without GeoIP." }),
    device: Type.Union([Type.String(), Type.Null()], {
      description: 'The browser and system of the request that did it, read from its User-Agent ("Chrome on Linux"); null when unknown.',
    }),
    newEmail: Type.Optional(EmailAddress("`email_change_requested` only: the address asked for (trimmed and lowercased).")),
    passkeyName: Type.Optional(Type.String({ description: "`passkey_added` and `passkey_removed` only." })),
    connection: Type.Optional(Type.String({ description: "`identity_linked` and `identity_unlinked` only: the connection's display name." })),
    secureAccountLink: Link(
      "secure-account",
      `for \`POST /auth/secure-account\`; ${describeDuration(TOKEN_LIFETIMES_MS.secure_account)}, one use, one per alert.`,
    ),
  }),
  "member.created": Type.Object({
    event_type: Type.Literal("member.created"),
    ...lifecycle,
    method: Type.Optional(
      StringEnum(["federated"], {
        description: "`federated`: made by a sign-in through an identity provider (`connection` names it). Absent: a verified registration.",
      }),
    ),
    connection: Type.Optional(Type.String({ description: 'The connection\'s id, with `method: "federated"`.' })),
  }),
  "member.updated": Type.Object({
    event_type: Type.Literal("member.updated"),
    ...lifecycle,
    changes: Type.Array(StringEnum(["name", "email", "status", "identities"]), { minItems: 1, description: "Which fields changed; never their values." }),
  }),
  "member.deleted": Type.Object({ event_type: Type.Literal("member.deleted"), ...lifecycle }),
  "session.created": Type.Object({
    event_type: Type.Literal("session.created"),
    ...lifecycle,
    session: Type.String({ description: "The session's public id, as in `GET /auth/sessions`; never the cookie." }),
  }),
} satisfies Record<string, TSchema>;

export type WebhookEventType = keyof typeof WEBHOOK_BODIES;
/** The body of one event type, as sent. */
export type WebhookBody<T extends WebhookEventType> = Static<(typeof WEBHOOK_BODIES)[T]>;
/**
 * What a flow hands the outbox: the body without its `event_type`, which the outbox adds. Given a
 * union of event types it is the union of their payloads, so a payload must match one of them whole.
 */
export type WebhookPayload<T extends WebhookEventType> = T extends WebhookEventType ? Omit<WebhookBody<T>, "event_type"> : never;
