/** Domain types shared by the store and the flows. Field names follow the spec where it names them. */
import type { sessionTiers } from "./rules.js";

/** Bot protection per tenant (DECISIONS D10); providers/bot.ts checks it. */
export type BotProviderName = "turnstile" | "hcaptcha" | "recaptcha" | "altcha" | "none";

/**
 * A tenant's `botProtection` setting. `secretKey` is for the siteverify providers (stored sealed
 * under SECRETS_KEY, see flows/tenants.ts), `minScore` for reCAPTCHA v3.
 */
export interface BotProtectionSettings {
  provider: BotProviderName;
  secretKey?: string;
  siteKey?: string;
  verifyUrl?: string;
  minScore?: number;
}

export const MemberStatus = {
  pending: "Email Verification Pending",
  unlocked: "Unlocked",
  locked: "Locked",
  passwordChangePending: "Password Change Pending",
} as const;
export type MemberStatus = (typeof MemberStatus)[keyof typeof MemberStatus];

export type TwoFactorStatus = "Disabled" | "Enabled";
export type AuthenticationType = "Password" | "Magic Link";

export type SessionTier = keyof typeof sessionTiers;

export interface TenantSettings {
  emailVerificationWebhook: string;
  passwordResetWebhook: string;
  magicLoginWebhook: string;
  sessionTier: SessionTier;
  loginSuccessRedirect: string;
  botProtection: BotProtectionSettings;
  resetTokenTtlMinutes: number;
  require2FA: boolean;
  securityAlertWebhook?: string;
  eventsWebhook?: string;
  allowedOrigins: string[];
}

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

/** The page each kind of link opens (spec 4.6, D24): `https://<tenant>/<page>/<recordId>/<token>`. Logs mask what follows them. */
export const linkPages = {
  verify_email: "email-verified",
  password_reset: "reset-password",
  magic_login: "verify-magic-link",
  email_change: "email-change",
  secure_account: "secure-account",
} as const satisfies Record<TokenKind, string>;

export type WebhookEventType = "verify_email" | "account_exists" | "password_reset" | "magic_login" | "security_alert" | "email_change" | "member.created" | "member.updated" | "member.deleted" | "session.created";

/**
 * Every audit event type a flow writes (the admin audit log and the member export show them). The
 * store's insert takes only these, so a new one must be added here, and the OpenAPI document lists
 * them as the `type` enum. Not yet a catalogue with meanings: rows written by an older version may
 * hold a type no longer listed.
 */
export const AUDIT_EVENT_TYPES = [
  "registered", "registration_repeated", "verification_resent", "email_verified",
  "login_succeeded", "login_failed", "login_anomaly", "suspicious_login_velocity", "logout",
  "two_factor_setup_started", "two_factor_enabled", "two_factor_disabled", "two_factor_passed", "two_factor_failed",
  "recovery_code_used", "recovery_codes_regenerated",
  "password_reset_requested", "password_reset", "password_changed", "password_change_failed", "password_change_required",
  "magic_link_requested", "account_locked", "account_unlocked",
  "name_changed", "email_change_requested", "email_changed", "email_restored", "account_secured",
  "session_revoked", "sessions_revoked", "member_deleted",
  "passkey_added", "passkey_removed", "passkey_counter_regressed",
] as const;
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number];

/** Who did it and from where: kept on audit events, never a secret. */
export interface RequestContext {
  ip: string;
  userAgent: string | null;
}
