/** Domain types shared by the store and the flows. Field names follow the spec where it names them. */
import type { TenantSettings } from "./core/tenant-settings.js";
import { describeDuration, distinctIpRules } from "./rules.js";

export type { BotProtectionSettings, BotProviderName, SessionTier, TenantSettings } from "./core/tenant-settings.js";
export type { WebhookEventType } from "./core/webhook-payloads.js";

export const MemberStatus = {
  pending: "Email Verification Pending",
  unlocked: "Unlocked",
  locked: "Locked",
  passwordChangePending: "Password Change Pending",
} as const;
export type MemberStatus = (typeof MemberStatus)[keyof typeof MemberStatus];

export type TwoFactorStatus = "Disabled" | "Enabled";
export type AuthenticationType = "Password" | "Magic Link" | "Federated";

export interface Tenant {
  id: string;
  domain: string;
  applicationId: string;
  settings: TenantSettings;
}

export interface Member {
  tenantId: string;
  recordId: number;
  email: string;
  name: string;
  status: MemberStatus;
  authenticationType: AuthenticationType[];
  passwordHash: string | null;
  emailVerified: boolean;
  twoFactorStatus: TwoFactorStatus;
}

export type TokenKind = "verify_email" | "password_reset" | "magic_login" | "email_change" | "secure_account";

/** The page each kind of link opens (contract.md#spec-4-6, contract.md#d24): `https://<tenant>/<page>/<recordId>/<token>`. Logs mask what follows them. */
export const linkPages = {
  verify_email: "email-verified",
  password_reset: "reset-password",
  magic_login: "verify-magic-link",
  email_change: "email-change",
  secure_account: "secure-account",
} as const satisfies Record<TokenKind, string>;

/**
 * The audit event catalogue (contract.md#issue-18): every type a flow writes, with what it means. The store's
 * insert takes only these, the OpenAPI document lists them as the audit log's `type` enum, and
 * docs/audit-events.md is generated from this object (test/rules.test.ts checks it). Rows written by
 * an older version may hold a type no longer listed.
 */
export const AUDIT_EVENTS = {
  registered: "A registration created a pending account.",
  registration_repeated: "A registration named an email that already has an account (contract.md#d18): no account changed.",
  verification_resent: "A new verification link was sent (public resend or admin).",
  email_verified: "The member confirmed their email.",
  login_succeeded: "A login opened a session (password, magic link, email code or passkey).",
  login_failed: "A password login failed; written alike for known and unknown emails (no member then).",
  login_anomaly: "A login came from a country or network not seen for the member before (contract.md#d16).",
  suspicious_login_velocity: `${distinctIpRules.suspiciousLoginIps.threshold} or more IPs tried to log in to one account within ${describeDuration(distinctIpRules.suspiciousLoginIps.windowMs)} (contract.md#d13).`,
  logout: "The member logged out.",
  two_factor_setup_started: "The member started setting up two-factor authentication.",
  two_factor_enabled: "Two-factor authentication was turned on.",
  two_factor_disabled: "Two-factor authentication was turned off.",
  two_factor_passed: "A second-factor code was accepted.",
  two_factor_failed: "A second-factor code was refused.",
  recovery_code_used: "A recovery code was used in place of a code.",
  recovery_codes_regenerated: "A new set of recovery codes replaced the old one.",
  password_reset_requested: "A password reset link was sent.",
  password_reset: "The password was reset by link.",
  password_changed: "The member changed their password.",
  password_change_failed: "A password change was refused (wrong current password).",
  password_change_required: "An admin required a password change (contract.md#d15).",
  magic_link_requested: "A magic login link (with its email code) was sent.",
  account_locked: "An admin locked the account.",
  account_unlocked: "An admin unlocked the account.",
  connection_created: "An admin or the operator added a connection to an identity provider (contract.md#d27); names the connection, no member.",
  connection_updated: "A connection to an identity provider was changed (a new client secret included, never the secret itself).",
  connection_deleted: "A connection to an identity provider was removed, with its members' links to it.",
  oauth_client_created: "An admin or the operator registered an OAuth client (contract.md#d28); names the client id, no member, never the secret.",
  oauth_client_updated: "An OAuth client's name, redirect URIs or first-party flag was changed.",
  oauth_client_deleted: "An OAuth client was removed, with every grant given to it (its codes and tokens).",
  name_changed: "The member changed their name (contract.md#d24).",
  email_change_requested: "The member asked to change their email; a link went to the new address (contract.md#d24).",
  email_changed: "The new email was confirmed and replaced the old one.",
  email_restored: '"This wasn\'t me" gave the old email back.',
  account_secured: '"This wasn\'t me": every session, link and passkey ended; a new password is needed.',
  session_revoked: "One session was ended by the member.",
  sessions_revoked: "Every session (or every other one) was ended.",
  member_deleted: "The account was erased (by the member, an admin, or the pending-account sweep).",
  passkey_added: "The member added a passkey (contract.md#d26).",
  passkey_removed: "The member removed a passkey.",
  identity_linked: "An identity at a provider was linked to the member (decisions.md#federated-sign-in).",
  identity_unlinked: "The member unlinked an identity at a provider.",
  federated_login: "A sign-in through an identity provider (details: connection).",
  passkey_counter_regressed: "A passkey's signature counter went back: a cloned key may be in use; the login was refused.",
} as const satisfies Record<string, string>;
export type AuditEventType = keyof typeof AUDIT_EVENTS;
export const AUDIT_EVENT_TYPES = Object.keys(AUDIT_EVENTS) as [AuditEventType, ...AuditEventType[]];

/** Who did it and from where: kept on audit events, never a secret. */
export interface RequestContext {
  ip: string;
  userAgent: string | null;
}
