/**
 * The tenant settings schema (contract.md#spec-2-4, contract.md#d1, contract.md#d6, contract.md#d7, contract.md#d10), shared by the operator API and the CLI
 * so both validate alike. One TypeBox schema gives the type (`TenantSettings`), the validation and
 * the OpenAPI entry.
 */
import { Type, type Static } from "typebox";
import { Value } from "typebox/value";
import { AuthError, validationIssuesOf } from "../errors.js";
import { MAX_ALLOWED_ORIGINS, RESET_TOKEN_LIFETIME_MS, sessionTiers } from "../rules.js";
import { MINUTE } from "./clock.js";

const WebhookUrl = Type.String({ pattern: "^https?://[^\\s]+$", maxLength: 2048 });

/**
 * An `allowedOrigins` entry: an origin exactly as a browser sends it (lowercase, no path, no
 * trailing slash). https only: a page on an http origin is whatever anyone on its network path
 * makes it, and a listed origin gets CORS with credentials, passes the cookie's origin check and
 * is accepted in WebAuthn answers. The one exception is a loopback host on any port (localhost,
 * 127.0.0.1, [::1]) for development: it never leaves the machine, and browsers treat it as secure.
 */
const ALLOWED_ORIGIN_PATTERN = "^(https://[a-z0-9.-]+|http://(localhost|127\\.0\\.0\\.1|\\[::1\\]))(:[0-9]{1,5})?$";
const ALLOWED_ORIGIN = new RegExp(ALLOWED_ORIGIN_PATTERN);
const AllowedOrigin = Type.String({
  pattern: ALLOWED_ORIGIN_PATTERN,
  maxLength: 300,
  description: "An origin as browsers send it (`https://app.example.org`, no path): https, or http only for localhost, 127.0.0.1 or [::1] (any port).",
});

/**
 * Whether Latch uses an `allowedOrigins` entry. Before https was required an http entry could be
 * stored; such an entry is ignored (and named at start-up, `warnIfOriginsIgnored`) until an operator
 * replaces it: a settings update validates the whole settings again, so it has to go then.
 */
export function isUsableAllowedOrigin(origin: string): boolean {
  return ALLOWED_ORIGIN.test(origin);
}

export const BotProtectionSchema = Type.Object(
  {
    provider: Type.Union([Type.Literal("turnstile"), Type.Literal("hcaptcha"), Type.Literal("recaptcha"), Type.Literal("altcha"), Type.Literal("none")]),
    secretKey: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    siteKey: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
    verifyUrl: Type.Optional(WebhookUrl),
    minScore: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { additionalProperties: false },
);
/**
 * A tenant's `botProtection` setting (contract.md#d10; providers/bot.ts checks it). `secretKey` is for the
 * siteverify providers (stored sealed under SECRETS_KEY, see flows/tenants/tenants.ts), `minScore`
 * for reCAPTCHA v3.
 */
export type BotProtectionSettings = Static<typeof BotProtectionSchema>;
export type BotProviderName = BotProtectionSettings["provider"];

export type SessionTier = keyof typeof sessionTiers;
/** rules.ts's tiers by name (`anyOf` of their literals in the document). */
const SessionTierSchema = Type.Unsafe<SessionTier>(Type.Union(Object.keys(sessionTiers).map((tier) => Type.Literal(tier))));

const settingsProperties = {
  emailVerificationWebhook: WebhookUrl,
  passwordResetWebhook: WebhookUrl,
  magicLoginWebhook: WebhookUrl,
  sessionTier: SessionTierSchema,
  // A path on the tenant's own site: one leading slash, never "//host" (an open redirect); printable
  // ASCII only (percent-encode the rest), since it goes into a Location header as it is.
  loginSuccessRedirect: Type.String({ pattern: "^/(?![/\\\\])[\\x21-\\x7e]*$", maxLength: 2048 }),
  botProtection: BotProtectionSchema,
  resetTokenTtlMinutes: Type.Integer({ minimum: RESET_TOKEN_LIFETIME_MS.min / MINUTE, maximum: RESET_TOKEN_LIFETIME_MS.max / MINUTE }),
  require2FA: Type.Boolean(),
  securityAlertWebhook: Type.Optional(WebhookUrl),
  /** contract.md#d25: member lifecycle events (`member.deleted`, …), signed and delivered like the others. */
  eventsWebhook: Type.Optional(WebhookUrl),
  allowedOrigins: Type.Array(AllowedOrigin, { maxItems: MAX_ALLOWED_ORIGINS }),
};

export const TenantSettingsSchema = Type.Object(settingsProperties, { additionalProperties: false });
export type TenantSettings = Static<typeof TenantSettingsSchema>;

/** What a new tenant may leave out; the defaults below fill it in. */
export const NewTenantSettingsSchema = Type.Object(
  {
    ...settingsProperties,
    sessionTier: Type.Optional(settingsProperties.sessionTier),
    loginSuccessRedirect: Type.Optional(settingsProperties.loginSuccessRedirect),
    resetTokenTtlMinutes: Type.Optional(settingsProperties.resetTokenTtlMinutes),
    require2FA: Type.Optional(settingsProperties.require2FA),
    allowedOrigins: Type.Optional(settingsProperties.allowedOrigins),
    botProtection: Type.Optional(settingsProperties.botProtection),
  },
  { additionalProperties: false },
);
export type NewTenantSettings = Static<typeof NewTenantSettingsSchema>;

export const PartialTenantSettingsSchema = Type.Partial(TenantSettingsSchema, { additionalProperties: false });
export type PartialTenantSettings = Static<typeof PartialTenantSettingsSchema>;

/** contract.md#d10: a new tenant without a choice gets the self-hosted ALTCHA check. */
const defaults = {
  sessionTier: "1d",
  loginSuccessRedirect: "/",
  resetTokenTtlMinutes: RESET_TOKEN_LIFETIME_MS.default / MINUTE,
  require2FA: false,
  allowedOrigins: [],
  botProtection: { provider: "altcha" },
} as const;

export function withDefaultSettings(settings: NewTenantSettings): TenantSettings {
  return { ...defaults, ...settings, allowedOrigins: settings.allowedOrigins ?? [], botProtection: settings.botProtection ?? { ...defaults.botProtection } };
}

/** Throws validation_failed with TypeBox's error list when the full settings are not valid. */
export function assertValidSettings(settings: unknown): asserts settings is TenantSettings {
  if (!Value.Check(TenantSettingsSchema, settings)) {
    const details = validationIssuesOf(Value.Errors(TenantSettingsSchema, settings), "settings", TenantSettingsSchema);
    throw new AuthError("validation_failed", { message: "The tenant settings are not valid.", details });
  }
}

/** Start-up: the stored `allowedOrigins` entries that are ignored, if any. */
export function ignoredAllowedOrigins(settings: Pick<TenantSettings, "allowedOrigins">): string[] {
  return settings.allowedOrigins.filter((origin) => !isUsableAllowedOrigin(origin));
}

/** Settings as the operator may see them: the bot provider's secret left out. */
export function publicSettings(settings: TenantSettings): TenantSettings {
  const { secretKey: _secret, ...botProtection } = settings.botProtection;
  return { ...settings, botProtection };
}
