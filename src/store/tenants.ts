import type { Kysely } from "kysely";
import { type DialectName, lockingRead } from "./dialects.js";
import { TENANT_OWNED_TABLES, type Database } from "./schema.js";
import type { Tenant, TenantSettings } from "../model.js";

export interface NewTenant {
  id: string;
  domain: string;
  applicationId: string;
  settings: TenantSettings;
  webhookSecretEnc: string;
}

export interface TenantSummary {
  domain: string;
  applicationId: string;
  createdAt: number;
}

export interface TenantSecrets {
  tenantId: string;
  webhookSecretEnc: string;
  /** decisions.md#webhook-secret-rotation: the secret before the last rotation (expired or not), null if none. */
  previousWebhookSecretEnc: string | null;
  previousWebhookSecretExpiresAt: number | null;
  botSecretKey: string | undefined;
}

/** A tenant's sealed webhook secrets: the current one, and the one before the last rotation while it may still sign. */
export interface SealedWebhookSecrets {
  current: string;
  previous: { sealed: string; expiresAt: number } | undefined;
}

export class TenantStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  async createApplication(id: string, apiKeyHash: string, now: number): Promise<void> {
    await this.db.insertInto("applications").values({ id, api_key_hash: apiKeyHash, created_at: now, updated_at: now }).execute();
  }

  /**
   * Whether the application exists. Inside a transaction on PostgreSQL its row stays locked until
   * commit (SQLite has one writer), so a tenant joining it and the deletion of its last tenant
   * (which deletes it too) happen one after the other, never both on the same old state (contract.md#d23).
   */
  async lockApplication(id: string): Promise<boolean> {
    let query = this.db.selectFrom("applications").select("id").where("id", "=", id);
    query = lockingRead(query, this.dialect);
    return (await query.executeTakeFirst()) !== undefined;
  }

  /**
   * Whether the tenant exists. Inside a transaction on PostgreSQL its row stays locked until commit
   * (SQLite has one writer), so writers that decide on a count of the tenant's rows (its OAuth
   * clients' cap, decisions.md#openid-provider-clients) run one after the other.
   */
  async lockTenant(id: string): Promise<boolean> {
    let query = this.db.selectFrom("tenants").select("id").where("id", "=", id);
    query = lockingRead(query, this.dialect);
    return (await query.executeTakeFirst()) !== undefined;
  }

  /** The application whose key hashes to this value; the hash index makes it one lookup. */
  async findApplicationIdByKeyHash(apiKeyHash: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("applications").select("id").where("api_key_hash", "=", apiKeyHash).executeTakeFirst();
    return row?.id;
  }

  async replaceApplicationKey(id: string, apiKeyHash: string, now: number): Promise<boolean> {
    const result = await this.db.updateTable("applications").set({ api_key_hash: apiKeyHash, updated_at: now }).where("id", "=", id).executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async createTenant(tenant: NewTenant, now: number): Promise<void> {
    await this.db
      .insertInto("tenants")
      .values({
        id: tenant.id,
        domain: tenant.domain,
        application_id: tenant.applicationId,
        settings: JSON.stringify(tenant.settings),
        webhook_secret_enc: tenant.webhookSecretEnc,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }

  async findTenantByDomain(domain: string): Promise<Tenant | undefined> {
    const row = await this.db.selectFrom("tenants").select(["id", "domain", "application_id", "settings"]).where("domain", "=", domain).executeTakeFirst();
    return row && { id: row.id, domain: row.domain, applicationId: row.application_id, settings: JSON.parse(row.settings) as TenantSettings };
  }

  /** The email-request worker (contract.md#d19) knows a request's tenant by id. */
  async findTenantById(id: string): Promise<Tenant | undefined> {
    const row = await this.db.selectFrom("tenants").select(["id", "domain", "application_id", "settings"]).where("id", "=", id).executeTakeFirst();
    return row && { id: row.id, domain: row.domain, applicationId: row.application_id, settings: JSON.parse(row.settings) as TenantSettings };
  }

  /** Every tenant's domain and settings: read once at start-up for configuration warnings. */
  async listTenants(): Promise<Pick<Tenant, "domain" | "settings">[]> {
    const rows = await this.db.selectFrom("tenants").select(["domain", "settings"]).orderBy("domain").execute();
    return rows.map((r) => ({ domain: r.domain, settings: JSON.parse(r.settings) as TenantSettings }));
  }

  /** contract.md#d23: one page of tenants by domain, after `afterDomain` (exclusive). */
  async listTenantPage(afterDomain: string | undefined, limit: number): Promise<TenantSummary[]> {
    let query = this.db.selectFrom("tenants").select(["domain", "application_id", "created_at"]);
    if (afterDomain !== undefined) query = query.where("domain", ">", afterDomain);
    const rows = await query.orderBy("domain").limit(limit).execute();
    return rows.map((r) => ({ domain: r.domain, applicationId: r.application_id, createdAt: r.created_at }));
  }

  /**
   * contract.md#d23: every row of the tenant in every tenant-owned table, then the tenant, then its application
   * when no other tenant shares it. Run in a transaction: the caller's, so it is all or nothing.
   * The application is locked first and the tenant read after, so of two concurrent deletions the
   * second finds nothing (undefined) and a tenant joining the application meanwhile keeps it.
   */
  async deleteTenant(id: string, applicationId: string): Promise<{ applicationDeleted: boolean } | undefined> {
    await this.lockApplication(applicationId);
    if (!(await this.findTenantById(id))) return undefined;
    for (const table of TENANT_OWNED_TABLES) await this.db.deleteFrom(table).where("tenant_id", "=", id).execute();
    await this.db.deleteFrom("tenants").where("id", "=", id).execute();
    const shared = await this.db.selectFrom("tenants").select("id").where("application_id", "=", applicationId).limit(1).executeTakeFirst();
    if (shared) return { applicationDeleted: false };
    await this.db.deleteFrom("applications").where("id", "=", applicationId).execute();
    return { applicationDeleted: true };
  }

  /**
   * Writes `settings` only if the stored ones are still `from` (as read; both written by
   * JSON.stringify, so equal settings are equal text): false when another update came in between.
   */
  async updateTenantSettings(id: string, from: TenantSettings, settings: TenantSettings, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("tenants")
      .set({ settings: JSON.stringify(settings), updated_at: now })
      .where("id", "=", id)
      .where("settings", "=", JSON.stringify(from))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async findWebhookSecret(tenantId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("tenants").select("webhook_secret_enc").where("id", "=", tenantId).executeTakeFirst();
    return row?.webhook_secret_enc;
  }

  /** The dispatcher's read (contract.md#d9): what an attempt is signed with, an expired previous secret left out. */
  async findWebhookSecrets(tenantId: string, now: number): Promise<SealedWebhookSecrets | undefined> {
    const row = await this.db
      .selectFrom("tenants")
      .select(["webhook_secret_enc", "webhook_previous_secret_enc", "webhook_previous_secret_expires_at"])
      .where("id", "=", tenantId)
      .executeTakeFirst();
    if (!row) return undefined;
    const { webhook_previous_secret_enc: sealed, webhook_previous_secret_expires_at: expiresAt } = row;
    const live = sealed !== null && expiresAt !== null && expiresAt > now;
    return { current: row.webhook_secret_enc, previous: live ? { sealed, expiresAt } : undefined };
  }

  /**
   * decisions.md#webhook-secret-rotation: in one statement the current secret becomes the previous one
   * (until `previousExpiresAt`), replacing any previous one, and `webhookSecretEnc` the current one.
   * The right-hand side reads the row as this update finds it, so after two rotations at once the
   * previous secret is the one the later of them replaced: the first one's new secret, which its
   * caller was shown. `previousExpiresAt` null drops the current secret instead (one that no key
   * opens can sign nothing).
   */
  async rotateWebhookSecret(tenantId: string, webhookSecretEnc: string, previousExpiresAt: number | null, now: number): Promise<void> {
    await this.db
      .updateTable("tenants")
      .set((eb) => ({
        webhook_secret_enc: webhookSecretEnc,
        webhook_previous_secret_enc: previousExpiresAt === null ? null : eb.ref("webhook_secret_enc"),
        webhook_previous_secret_expires_at: previousExpiresAt,
        updated_at: now,
      }))
      .where("id", "=", tenantId)
      .execute();
  }

  /**
   * One page of tenants (by id, after `afterId`) with their sealed values, for `latch secrets
   * reseal`: the webhook secret and the settings' bot secretKey (sealed or, from an old version, not).
   */
  async listTenantSecrets(afterId: string, limit: number): Promise<TenantSecrets[]> {
    const rows = await this.db
      .selectFrom("tenants")
      .select(["id", "webhook_secret_enc", "webhook_previous_secret_enc", "webhook_previous_secret_expires_at", "settings"])
      .where("id", ">", afterId)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      tenantId: r.id,
      webhookSecretEnc: r.webhook_secret_enc,
      previousWebhookSecretEnc: r.webhook_previous_secret_enc,
      previousWebhookSecretExpiresAt: r.webhook_previous_secret_expires_at,
      botSecretKey: (JSON.parse(r.settings) as TenantSettings).botProtection?.secretKey,
    }));
  }

  /**
   * Swaps the sealed webhook secret only if it is still `from`, so a rotation racing the reseal wins.
   * updated_at stays: the secret itself did not change.
   */
  async replaceSealedWebhookSecret(tenantId: string, from: string, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable("tenants")
      .set({ webhook_secret_enc: to })
      .where("id", "=", tenantId)
      .where("webhook_secret_enc", "=", from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** A secret replaced by a rotation is kept no longer than its window (decisions.md#webhook-secret-rotation). */
  async deleteExpiredPreviousWebhookSecrets(now: number): Promise<void> {
    await this.db
      .updateTable("tenants")
      .set({ webhook_previous_secret_enc: null, webhook_previous_secret_expires_at: null })
      .where("webhook_previous_secret_expires_at", "<=", now)
      .execute();
  }

  /** As replaceSealedWebhookSecret, for the previous secret; a rotation in between changes it and wins. */
  async replaceSealedPreviousWebhookSecret(tenantId: string, from: string, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable("tenants")
      .set({ webhook_previous_secret_enc: to })
      .where("id", "=", tenantId)
      .where("webhook_previous_secret_enc", "=", from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** As replaceSealedWebhookSecret, for botProtection.secretKey inside the settings JSON. */
  async replaceSealedBotSecret(tenantId: string, from: string, to: string): Promise<boolean> {
    const row = await this.db.selectFrom("tenants").select("settings").where("id", "=", tenantId).executeTakeFirst();
    if (!row) return false;
    const settings = JSON.parse(row.settings) as TenantSettings;
    if (settings.botProtection?.secretKey !== from) return false;
    const updated = { ...settings, botProtection: { ...settings.botProtection, secretKey: to } };
    // Compared with the text read, so a settings update in between is never overwritten.
    const result = await this.db
      .updateTable("tenants")
      .set({ settings: JSON.stringify(updated) })
      .where("id", "=", tenantId)
      .where("settings", "=", row.settings)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
