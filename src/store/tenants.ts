import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import type { Tenant, TenantSettings } from "../model.js";

export interface NewTenant {
  id: string;
  domain: string;
  applicationId: string;
  settings: TenantSettings;
  webhookSecretEnc: string;
}

export class TenantStore {
  constructor(private readonly db: Kysely<Database>) {}

  async createApplication(id: string, apiKeyHash: string, now: number): Promise<void> {
    await this.db.insertInto("applications").values({ id, api_key_hash: apiKeyHash, created_at: now, updated_at: now }).execute();
  }

  async applicationExists(id: string): Promise<boolean> {
    const row = await this.db.selectFrom("applications").select("id").where("id", "=", id).executeTakeFirst();
    return row !== undefined;
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

  /** Every tenant's domain and settings: read once at start-up for configuration warnings. */
  async listTenants(): Promise<Pick<Tenant, "domain" | "settings">[]> {
    const rows = await this.db.selectFrom("tenants").select(["domain", "settings"]).orderBy("domain").execute();
    return rows.map((r) => ({ domain: r.domain, settings: JSON.parse(r.settings) as TenantSettings }));
  }

  async updateTenantSettings(id: string, settings: TenantSettings, now: number): Promise<void> {
    await this.db.updateTable("tenants").set({ settings: JSON.stringify(settings), updated_at: now }).where("id", "=", id).execute();
  }

  async findWebhookSecret(tenantId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("tenants").select("webhook_secret_enc").where("id", "=", tenantId).executeTakeFirst();
    return row?.webhook_secret_enc;
  }

  async replaceWebhookSecret(tenantId: string, webhookSecretEnc: string, now: number): Promise<void> {
    await this.db.updateTable("tenants").set({ webhook_secret_enc: webhookSecretEnc, updated_at: now }).where("id", "=", tenantId).execute();
  }
}
