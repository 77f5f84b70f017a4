/**
 * Onboarding and operating tenants (contract.md#d1, contract.md#d3). The operator API and the `latch` CLI both call these,
 * so the two can never disagree. Keys and webhook secrets are returned once and never again.
 */
import { toTimestamp } from "../../core/schema.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { generateWebhookSecret } from "../../events/webhook-sender.js";
import type { Tenant, TenantSettings } from "../../model.js";
import { sha256Hex } from "../../security/hashing.js";
import { isSealed } from "../../security/secret-box.js";
import type { DeliverySummary } from "../../store/outbox.js";
import type { TenantSummary } from "../../store/tenants.js";
import {
  DELIVERY_PAGE_DEFAULT,
  DELIVERY_PAGE_MAX,
  TENANT_DOMAIN_MAX_LENGTH,
  TENANT_PAGE_DEFAULT,
  TENANT_PAGE_MAX,
  WEBHOOK_SECRET_ROTATION_WINDOW_MS,
} from "../../rules.js";
import {
  assertValidSettings,
  ignoredAllowedOrigins,
  publicSettings,
  withDefaultSettings,
  type NewTenantSettings,
  type PartialTenantSettings,
} from "../../core/tenant-settings.js";

// Lowercase hostname labels, no port, no trailing dot (contract.md#d1).
const HOSTNAME = new RegExp(`^(?=.{1,${TENANT_DOMAIN_MAX_LENGTH}}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$`);

export function normalizeDomain(raw: string): string {
  const domain = raw.trim().toLowerCase();
  if (!HOSTNAME.test(domain))
    throw new AuthError("validation_failed", {
      message: "The domain must be a hostname without port.",
      details: [{ field: "domain", rule: "hostname", message: "must be a lowercase hostname without port" }],
    });
  return domain;
}

function newApiKey(deps: Deps): string {
  return "latch_" + deps.random.bytes(32).toString("base64url");
}

export interface CreateTenantInput {
  domain: string;
  applicationId?: string;
  settings: NewTenantSettings;
}

export interface CreatedTenant {
  domain: string;
  applicationId: string;
  webhookSecret: string;
  internalApiKey?: string;
}

export async function createTenant(deps: Deps, input: CreateTenantInput): Promise<CreatedTenant> {
  const now = deps.clock.now();
  const domain = normalizeDomain(input.domain);
  const settings = withDefaultSettings(input.settings);
  assertValidSettings(settings);
  const webhookSecret = generateWebhookSecret(deps.random);
  const internalApiKey = input.applicationId === undefined ? newApiKey(deps) : undefined;
  const applicationId = input.applicationId ?? "app_" + deps.random.bytes(12).toString("base64url");
  await deps.store.transaction(async (tx) => {
    if (await tx.tenants.findTenantByDomain(domain)) throw new AuthError("conflict", { message: "A tenant with this domain exists." });
    if (internalApiKey === undefined) {
      if (!(await tx.tenants.lockApplication(applicationId))) throw new AuthError("not_found", { message: "No such application." });
    } else {
      await tx.tenants.createApplication(applicationId, sha256Hex(internalApiKey), now);
    }
    const id = "ten_" + deps.random.bytes(12).toString("base64url");
    await tx.tenants.createTenant(
      { id, domain, applicationId, settings: withSealedBotSecret(deps, settings), webhookSecretEnc: deps.secrets.seal(webhookSecret) },
      now,
    );
  });
  warnIfUnprotected(deps, domain, settings);
  return { domain, applicationId, webhookSecret, ...(internalApiKey && { internalApiKey }) };
}

/**
 * The siteverify secret is stored sealed under SECRETS_KEY (contract.md#d1): the database and its backups never
 * hold it. What the operator sends is always sealed, even when it looks sealed already: a sealed
 * value taken as it is would be opened and sent to the operator's `verifyUrl`, a decryption oracle
 * for every other sealed secret (TOTP keys, webhook secrets).
 */
function withSealedBotSecret(deps: Deps, settings: TenantSettings): TenantSettings {
  const { secretKey } = settings.botProtection;
  if (secretKey === undefined) return settings;
  return { ...settings, botProtection: { ...settings.botProtection, secretKey: deps.secrets.seal(secretKey) } };
}

/**
 * At start: a bot secret an older version stored in the clear is sealed now. Only stored values
 * are judged by their form; each is re-read and written only over what was read, so an operator's
 * concurrent update is not lost. Returns how many were sealed.
 */
export async function sealStoredBotSecrets(deps: Deps): Promise<number> {
  const isClear = (secretKey: string | undefined) => secretKey !== undefined && !isSealed(secretKey);
  let sealed = 0;
  for (const { domain, settings } of await deps.store.tenants.listTenants()) {
    // Only a tenant listed with a clear secret costs a transaction: a start reads the rest once.
    if (!isClear(settings.botProtection.secretKey)) continue;
    const tenant = await deps.store.tenants.findTenantByDomain(domain);
    if (!tenant || !isClear(tenant.settings.botProtection.secretKey)) continue;
    // Written only over the settings just read: an update in between wins, and the next start seals.
    const changed = await deps.store.tenants.updateTenantSettings(tenant.id, tenant.settings, withSealedBotSecret(deps, tenant.settings), deps.clock.now());
    if (!changed) continue;
    deps.tenantCache.invalidate(domain);
    sealed++;
  }
  return sealed;
}

export function warnIfUnprotected(deps: Deps, domain: string, settings: TenantSettings): void {
  if (settings.botProtection.provider === "none") deps.log.warn({ tenant: domain }, "tenant has no bot protection (botProtection.provider = none)");
}

/** Start-up: `allowedOrigins` entries stored before https was required are ignored; say which, and how to fix them. */
export function warnIfOriginsIgnored(deps: Deps, domain: string, settings: TenantSettings): void {
  const ignored = ignoredAllowedOrigins(settings);
  if (ignored.length > 0)
    deps.log.warn(
      { tenant: domain, ignored },
      "tenant allowedOrigins entries are ignored: an origin must be https (http only for localhost, 127.0.0.1 or [::1]); replace them with `tenant update`",
    );
}

export async function findTenantOrThrow(deps: Deps, rawDomain: string): Promise<Tenant> {
  const tenant = await deps.store.tenants.findTenantByDomain(rawDomain.trim().toLowerCase());
  if (!tenant) throw new AuthError("unknown_tenant");
  return tenant;
}

export interface TenantView {
  domain: string;
  applicationId: string;
  settings: TenantSettings;
}

export async function showTenant(deps: Deps, domain: string): Promise<TenantView> {
  const tenant = await findTenantOrThrow(deps, domain);
  return { domain: tenant.domain, applicationId: tenant.applicationId, settings: publicSettings(tenant.settings) };
}

/** Tries of a settings update that found the settings changed under it before it answers 409. */
const SETTINGS_UPDATE_TRIES = 5;

/**
 * The patch is merged into the settings as read and written only over them (contract.md#d21: compare and
 * swap), so two concurrent updates of different fields both land: the one that lost the swap
 * merges its patch again into what the other wrote.
 */
export async function updateTenantSettings(deps: Deps, domain: string, patch: PartialTenantSettings): Promise<TenantView> {
  for (let attempt = 0; attempt < SETTINGS_UPDATE_TRIES; attempt++) {
    const tenant = await findTenantOrThrow(deps, domain);
    // A kept botProtection holds the sealed secret, which is not operator input: it is checked
    // without it (it was checked when it was sent) and stored as it is.
    const kept = patch.botProtection === undefined;
    const settings: unknown = { ...tenant.settings, ...patch, ...(kept && { botProtection: publicSettings(tenant.settings).botProtection }) };
    assertValidSettings(settings);
    const stored = kept ? { ...settings, botProtection: tenant.settings.botProtection } : withSealedBotSecret(deps, settings);
    if (!(await deps.store.tenants.updateTenantSettings(tenant.id, tenant.settings, stored, deps.clock.now()))) continue;
    deps.tenantCache.invalidate(tenant.domain);
    warnIfUnprotected(deps, tenant.domain, settings);
    return { domain: tenant.domain, applicationId: tenant.applicationId, settings: publicSettings(settings) };
  }
  throw new AuthError("conflict", { message: "The settings kept changing during this update. Please try again." });
}

/** The old key stops working at once: only the new hash is kept. */
export async function rotateApplicationKey(deps: Deps, applicationId: string): Promise<{ applicationId: string; internalApiKey: string }> {
  const internalApiKey = newApiKey(deps);
  if (!(await deps.store.tenants.replaceApplicationKey(applicationId, sha256Hex(internalApiKey), deps.clock.now()))) {
    throw new AuthError("not_found", { message: "No such application." });
  }
  return { applicationId, internalApiKey };
}

export interface RotatedWebhookSecret {
  domain: string;
  /** Shown once. */
  webhookSecret: string;
  /** ISO 8601 time until which deliveries carry the old secret's signature too; null when the old one could not be kept. */
  previousSecretExpiresAt: string | null;
}

/**
 * decisions.md#webhook-secret-rotation: the old secret keeps signing beside the new one for
 * WEBHOOK_SECRET_ROTATION_WINDOW_MS, so the receiver loses no delivery while it installs the new one.
 * A rotation inside that window keeps only the secret it replaces (one previous secret, with a new
 * window). A current secret that no configured key opens (SECRETS_KEY lost) is not kept: it could sign nothing.
 */
export async function rotateWebhookSecret(deps: Deps, domain: string): Promise<RotatedWebhookSecret> {
  const now = deps.clock.now();
  const tenant = await findTenantOrThrow(deps, domain);
  const webhookSecret = generateWebhookSecret(deps.random);
  const current = await deps.store.tenants.findWebhookSecret(tenant.id);
  const previousExpiresAt = current !== undefined && opens(deps, current) ? now + WEBHOOK_SECRET_ROTATION_WINDOW_MS : null;
  await deps.store.tenants.rotateWebhookSecret(tenant.id, deps.secrets.seal(webhookSecret), previousExpiresAt, now);
  return { domain: tenant.domain, webhookSecret, previousSecretExpiresAt: previousExpiresAt === null ? null : toTimestamp(previousExpiresAt) };
}

function opens(deps: Deps, sealed: string): boolean {
  try {
    deps.secrets.open(sealed);
    return true;
  } catch {
    return false;
  }
}

/** A delivery as the operator API and the CLI show it: times as Timestamps (docs/api-conventions.md#times). */
export type DeliveryView = Omit<DeliverySummary, "createdAt" | "nextAttemptAt"> & { createdAt: string; nextAttemptAt: string | null };

/**
 * The answer of `GET /operator/tenants/{domain}/webhook-deliveries` and of `latch tenant deliveries`, the same
 * object for both (contract.md#issue-29: the CLI printed the bare list, with epoch milliseconds).
 */
export async function listWebhookDeliveries(deps: Deps, domain: string, limit = DELIVERY_PAGE_DEFAULT): Promise<{ deliveries: DeliveryView[] }> {
  const tenant = await findTenantOrThrow(deps, domain);
  const rows = await deps.store.outbox.listRecentDeliveries(tenant.id, Math.min(Math.max(limit, 1), DELIVERY_PAGE_MAX));
  return {
    deliveries: rows.map((d) => ({ ...d, createdAt: toTimestamp(d.createdAt), nextAttemptAt: d.nextAttemptAt === null ? null : toTimestamp(d.nextAttemptAt) })),
  };
}

export interface TenantListItem {
  domain: string;
  applicationId: string;
  createdAt: string;
}

function invalidCursor(): AuthError {
  return new AuthError("validation_failed", {
    message: "The cursor is not valid.",
    details: [{ field: "cursor", rule: "cursor", message: "must be the nextCursor of a previous page" }],
  });
}

/** The cursor is the last domain of a page, opaque to callers and checked like a domain when it comes back. */
function decodeTenantCursor(cursor: string): string {
  const domain = Buffer.from(cursor, "base64url").toString("utf8");
  if (!HOSTNAME.test(domain)) throw invalidCursor();
  return domain;
}

/** contract.md#d23: tenants by domain, a page at a time; never a secret. */
export async function listTenants(deps: Deps, input: { limit?: number; cursor?: string }): Promise<{ tenants: TenantListItem[]; nextCursor: string | null }> {
  const limit = Math.min(Math.max(input.limit ?? TENANT_PAGE_DEFAULT, 1), TENANT_PAGE_MAX);
  const after = input.cursor === undefined ? undefined : decodeTenantCursor(input.cursor);
  // One row more than asked says whether another page follows.
  const rows: TenantSummary[] = await deps.store.tenants.listTenantPage(after, limit + 1);
  const page = rows.slice(0, limit);
  return {
    tenants: page.map((t) => ({ domain: t.domain, applicationId: t.applicationId, createdAt: toTimestamp(t.createdAt) })),
    nextCursor: rows.length > limit ? Buffer.from(page[page.length - 1]!.domain).toString("base64url") : null,
  };
}

export interface DeletedTenant {
  success: true;
  domain: string;
  applicationId: string;
  applicationDeleted: boolean;
}

/**
 * contract.md#d23: the tenant and everything it holds (members, sessions, tokens, deliveries, audit events,
 * counters) in one transaction, and its application with its key when no other tenant shares it.
 * `confirm` must repeat the domain, so a slip of the finger deletes nothing. Other instances keep
 * serving the tenant from their cache for at most TENANT_CACHE_TTL_MS; what they write meanwhile
 * has no tenant to go to and is dropped by the workers.
 */
export async function deleteTenant(deps: Deps, rawDomain: string, confirm: string | undefined): Promise<DeletedTenant> {
  const tenant = await findTenantOrThrow(deps, rawDomain);
  if (confirm === undefined || confirm.trim().toLowerCase() !== tenant.domain) {
    throw new AuthError("validation_failed", {
      message: "To delete a tenant, confirm must repeat its domain.",
      details: [{ field: "confirm", rule: "equals_domain", message: "must repeat the domain" }],
    });
  }
  // A tenant deleted meanwhile (another call, another instance) is 404, not a second success.
  const deleted = await deps.store.transaction((tx) => tx.tenants.deleteTenant(tenant.id, tenant.applicationId));
  if (!deleted) throw new AuthError("unknown_tenant");
  const { applicationDeleted } = deleted;
  deps.tenantCache.invalidate(tenant.domain);
  deps.log.info({ tenant: tenant.domain, applicationDeleted }, "tenant deleted");
  return { success: true, domain: tenant.domain, applicationId: tenant.applicationId, applicationDeleted };
}
