/**
 * The operator API's bodies (contract.md#d3, contract.md#d23), by hand like types.ts and proved equal
 * to src/http/routes/operator.ts and src/core/tenant-settings.ts by test/client-types.test.ts. Its
 * own file so the tenant settings, the largest of them, don't push types.ts past its size.
 */
import type { DeletedTenantResponse, ListTenantsQuery, TenantListResponse } from "./types.js";

/** The session lengths of the service's rules.ts, by name. */
export type SessionTier = "15m" | "1h" | "8h" | "1d" | "7d" | "30d";
/** contract.md#d10. `secretKey` for the siteverify providers, never returned; `minScore` for reCAPTCHA v3. */
export type BotProtectionSettings = {
  provider: "turnstile" | "hcaptcha" | "recaptcha" | "altcha" | "none";
  secretKey?: string;
  siteKey?: string;
  verifyUrl?: string;
  minScore?: number;
};
/** A tenant's settings as stored (contract.md#spec-2-4). */
export type TenantSettings = {
  emailVerificationWebhook: string;
  passwordResetWebhook: string;
  magicLoginWebhook: string;
  sessionTier: SessionTier;
  /** A path on the tenant's own site, such as `/account`. */
  loginSuccessRedirect: string;
  botProtection: BotProtectionSettings;
  resetTokenTtlMinutes: number;
  require2FA: boolean;
  securityAlertWebhook?: string;
  /** contract.md#d25: member lifecycle events. */
  eventsWebhook?: string;
  /** https origins (or http on a loopback host) that may call with the session cookie. */
  allowedOrigins: string[];
};
/** A new tenant's settings: the three webhooks; the rest default (botProtection to ALTCHA, contract.md#d10). */
export type NewTenantSettings = {
  emailVerificationWebhook: string;
  passwordResetWebhook: string;
  magicLoginWebhook: string;
  sessionTier?: SessionTier;
  loginSuccessRedirect?: string;
  botProtection?: BotProtectionSettings;
  resetTokenTtlMinutes?: number;
  require2FA?: boolean;
  securityAlertWebhook?: string;
  eventsWebhook?: string;
  allowedOrigins?: string[];
};
/** Top-level keys to change; `botProtection` is replaced whole. */
export type PartialTenantSettings = Partial<NewTenantSettings>;

/** Without `applicationId` a new application (and internal API key) is made; with it the tenant joins that one. */
export type CreateTenantRequest = { domain: string; applicationId?: string; settings: NewTenantSettings };
/** `webhookSecret` and `internalApiKey` are shown this once: store them now. */
export type CreatedTenantResponse = { domain: string; applicationId: string; webhookSecret: string; internalApiKey?: string };
/** `settings.botProtection.secretKey` is never returned. */
export type TenantResponse = { domain: string; applicationId: string; settings: TenantSettings };
export type UpdateTenantSettingsRequest = { settings: PartialTenantSettings };
/** The new key, shown once; the old one stops working at once for every tenant of the application. */
export type RotatedApplicationKeyResponse = { applicationId: string; internalApiKey: string };
/** The new secret, shown once; `previousSecretExpiresAt`: until when deliveries carry the old secret's signature too (ISO 8601), null when the old secret could not be kept. */
export type RotatedWebhookSecretResponse = { domain: string; webhookSecret: string; previousSecretExpiresAt: string | null };
/** `limit` an integer 0–999, kept within the page size; newest first. */
export type ListWebhookDeliveriesQuery = { limit?: number };
/** `id` is the event's `webhook-id`; times are ISO 8601. Never the payload or its link. */
export type WebhookDelivery = {
  id: string;
  eventType: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
};
export type WebhookDeliveriesResponse = { deliveries: WebhookDelivery[] };

/** The operator API, with `operatorKey` (OPERATOR_API_KEY): the operator's own tooling only, never a tenant's app. */
export interface LatchOperatorCalls {
  createTenant(body: CreateTenantRequest): Promise<CreatedTenantResponse>;
  /** contract.md#d23. */
  listTenants(query?: ListTenantsQuery): Promise<TenantListResponse>;
  showTenant(domain: string): Promise<TenantResponse>;
  updateTenantSettings(domain: string, body: UpdateTenantSettingsRequest): Promise<TenantResponse>;
  /** contract.md#d23: erases the tenant and all it holds; `confirm` repeats the domain. */
  deleteTenant(domain: string, confirm: string): Promise<DeletedTenantResponse>;
  rotateApplicationKey(applicationId: string): Promise<RotatedApplicationKeyResponse>;
  rotateWebhookSecret(domain: string): Promise<RotatedWebhookSecretResponse>;
  listWebhookDeliveries(domain: string, query?: ListWebhookDeliveriesQuery): Promise<WebhookDeliveriesResponse>;
}
