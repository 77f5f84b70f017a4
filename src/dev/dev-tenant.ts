/**
 * The dev tenant, created at each dev-mode start if it is missing: `localhost`, ALTCHA (the
 * default), every webhook pointing at this process's dev inbox, and logins landing on /ui/account. Starting again never creates
 * a second one and never overwrites what a developer changed.
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { createTenant, rotateWebhookSecret, updateTenantSettings } from "../flows/tenants/tenants.js";
import type { Tenant, TenantSettings } from "../model.js";
import { DEV_TENANT_DOMAIN } from "./dev-mode.js";

/** Where a newly created dev tenant sends a member after login: the hosted account page. */
export const DEV_LOGIN_SUCCESS_REDIRECT = "/ui/account";
const WEBHOOK_SETTINGS = ["emailVerificationWebhook", "passwordResetWebhook", "magicLoginWebhook", "securityAlertWebhook"] as const;
/** A webhook URL an earlier dev-mode start set (perhaps on another port). */
const DEV_INBOX_WEBHOOK = /^http:\/\/[^/]+\/dev\/inbox\/webhook$/;

export interface DevTenant {
  created: boolean;
  applicationId: string;
  /** Only when the tenant was created now: the key is stored as a hash and can't be shown again. */
  internalApiKey?: string;
}

export async function ensureDevTenant(deps: Deps, inboxWebhookUrl: string): Promise<DevTenant> {
  const existing = await deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN);
  if (!existing) {
    try {
      const created = await createTenant(deps, {
        domain: DEV_TENANT_DOMAIN,
        // botProtection left out: the default, ALTCHA (contract.md#d10), as a real tenant gets. After a login
        // the hosted pages send the member to their account page (an existing tenant keeps its own).
        settings: {
          emailVerificationWebhook: inboxWebhookUrl,
          passwordResetWebhook: inboxWebhookUrl,
          magicLoginWebhook: inboxWebhookUrl,
          securityAlertWebhook: inboxWebhookUrl,
          loginSuccessRedirect: DEV_LOGIN_SUCCESS_REDIRECT,
        },
      });
      return { created: true, applicationId: created.applicationId, internalApiKey: created.internalApiKey };
    } catch (err) {
      // Another process on the same file created it between our read and our write.
      if (!(err instanceof AuthError && err.code === "conflict")) throw err;
    }
  }
  const tenant = existing ?? (await deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN));
  if (!tenant) throw new Error("the dev tenant vanished during start");
  await pointWebhooksAtThisProcess(deps, tenant, inboxWebhookUrl);
  await replaceUnreadableWebhookSecret(deps, tenant);
  return { created: false, applicationId: tenant.applicationId };
}

/** A restart on another port would leave the webhooks aimed at a dead port; URLs set by hand are kept. */
async function pointWebhooksAtThisProcess(deps: Deps, tenant: Tenant, inboxWebhookUrl: string): Promise<void> {
  const patch: Partial<TenantSettings> = {};
  for (const name of WEBHOOK_SETTINGS) {
    const url = tenant.settings[name];
    if (url !== undefined && url !== inboxWebhookUrl && DEV_INBOX_WEBHOOK.test(url)) patch[name] = inboxWebhookUrl;
  }
  if (Object.keys(patch).length > 0) await updateTenantSettings(deps, tenant.domain, patch);
}

/**
 * A dev database kept while its secrets.key was deleted holds a webhook secret nobody can open:
 * every delivery would fail and the inbox would refuse all. A new secret fixes both.
 */
async function replaceUnreadableWebhookSecret(deps: Deps, tenant: Tenant): Promise<void> {
  const sealed = await deps.store.tenants.findWebhookSecret(tenant.id);
  try {
    if (sealed !== undefined) deps.secrets.open(sealed);
  } catch {
    await rotateWebhookSecret(deps, tenant.domain);
    deps.log.warn({ domain: tenant.domain }, "the dev tenant's webhook secret could not be read with this SECRETS_KEY: replaced it");
  }
}
