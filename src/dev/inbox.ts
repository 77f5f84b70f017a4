/**
 * The dev inbox: the dev tenant's webhooks, kept in memory (newest first, bounded) and described
 * the way the tenant's email would read. Only dev mode creates one; nothing here is stored.
 */

import type { SecurityAlert } from "../core/webhook-payloads.js";

export const DEV_INBOX_CAPACITY = 200;

export interface DevInboxMessage {
  /** The webhook-id header: retries of one event carry the same id and are kept once. */
  id: string;
  /** The tenant whose webhook secret signed it. */
  site: string;
  receivedAt: number;
  payload: Record<string, unknown>;
}

export class DevInbox {
  private readonly messages: DevInboxMessage[] = [];

  constructor(private readonly capacity = DEV_INBOX_CAPACITY) {}

  /** False when a message with this webhook-id is already here (a retry). */
  add(message: DevInboxMessage): boolean {
    if (this.messages.some((m) => m.id === message.id)) return false;
    this.messages.unshift(message);
    if (this.messages.length > this.capacity) this.messages.length = this.capacity;
    return true;
  }

  /** Newest first. */
  list(): DevInboxMessage[] {
    return [...this.messages];
  }
}

/** A message as the tenant's email would show it; the page and /dev/inbox.json both use this. */
export interface DevInboxEmail {
  id: string;
  /** The tenant (hostname) that sent it: the dev tenant `localhost`, or another one pointed at the inbox. */
  site: string;
  receivedAt: string;
  eventType: string;
  subject: string;
  to: { email: string; name: string };
  /** The link the email's button opens, when the event carries one. */
  link: string | null;
  /** What the button says. */
  action: string | null;
  /** contract.md#d26: the 6-digit code a magic_login email carries beside its link, to type on the "check your email" page. */
  code: string | null;
  /** Extra lines (security alerts: what happened, when, from where). */
  details: { label: string; value: string }[];
  payload: Record<string, unknown>;
}

const emails: Record<string, { subject: string; linkField: string; action: string }> = {
  verify_email: { subject: "Confirm your email address", linkField: "verificationLink", action: "Confirm email address" },
  password_reset: { subject: "Reset your password", linkField: "resetLink", action: "Reset password" },
  magic_login: { subject: "Your sign-in link", linkField: "magicLoginLink", action: "Sign in" },
  email_change: { subject: "Confirm your new email address", linkField: "verificationLink", action: "Confirm new email address" },
};

/**
 * What each security alert says, in words: the subject an email would carry, never the `alert` code
 * (docs/operations.md#the-dev-inbox). Keyed by the contract's alert names, so a new alert fails to compile until it has words.
 */
const alertTexts: Record<SecurityAlert, string> = {
  login_anomaly: "new sign-in from an unfamiliar place",
  password_changed: "your password was changed",
  password_reset: "your password was reset",
  two_factor_enabled: "two-factor authentication was turned on",
  two_factor_disabled: "two-factor authentication was turned off",
  two_factor_locked: "someone typed three wrong two-factor codes",
  passkey_added: "a passkey was added",
  passkey_removed: "a passkey was removed",
  recovery_code_used: "a recovery code was used",
  email_change_requested: "someone asked to change your email address",
  email_changed: "your email address was changed",
  identity_linked: "a sign-in provider was linked to your account",
  identity_unlinked: "a sign-in provider was unlinked from your account",
};

function alertText(alert: string): string {
  return Object.hasOwn(alertTexts, alert) ? alertTexts[alert as SecurityAlert] : alert;
}

function textOf(value: unknown): string {
  return typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value);
}

export function describeMessage(message: DevInboxMessage): DevInboxEmail {
  const { payload } = message;
  const eventType = textOf(payload.event_type);
  const base = {
    id: message.id,
    site: message.site,
    receivedAt: new Date(message.receivedAt).toISOString(),
    eventType,
    to: { email: textOf(payload.email), name: textOf(payload.name) },
  };
  const email = emails[eventType];
  if (email) {
    const link = textOf(payload[email.linkField]);
    return {
      ...base,
      subject: email.subject,
      link: link || null,
      action: link ? email.action : null,
      code: textOf(payload.code) || null,
      details: [],
      payload,
    };
  }
  if (eventType === "account_exists") {
    const details = [{ label: "What happened", value: "someone tried to register this address, which already has an account; nothing was changed" }];
    return { ...base, subject: "Someone tried to register with your email address", link: null, action: null, code: null, details, payload };
  }
  if (eventType === "security_alert") {
    const alert = textOf(payload.alert);
    // What the alert is about, by name (contract.md#d26 passkeyName, contract.md#d27 connection): the subject says which.
    const subjectOf = typeof payload.passkeyName === "string" ? payload.passkeyName : typeof payload.connection === "string" ? payload.connection : "";
    const details = [
      { label: "What happened", value: alertText(alert) },
      ...(typeof payload.passkeyName === "string" ? [{ label: "Passkey", value: payload.passkeyName }] : []),
      ...(typeof payload.connection === "string" ? [{ label: "Provider", value: payload.connection }] : []),
      ...(typeof payload.newEmail === "string" ? [{ label: "New address", value: payload.newEmail }] : []),
      { label: "At", value: textOf(payload.at) },
      { label: "Device", value: textOf(payload.device) || "unknown" },
      { label: "IP address", value: textOf(payload.ip) },
      { label: "Country", value: textOf(payload.country) || "unknown" },
      { label: "Alert", value: alert },
    ];
    // contract.md#d24: every alert offers "this wasn't me".
    const link = textOf(payload.secureAccountLink);
    return {
      ...base,
      subject: `Security alert: ${alertText(alert)}${subjectOf ? ` (“${subjectOf}”)` : ""}`,
      link: link || null,
      action: link ? "This wasn't me" : null,
      code: null,
      details,
      payload,
    };
  }
  return { ...base, subject: `Webhook: ${eventType || "unknown event"}`, link: null, action: null, code: null, details: [], payload };
}
