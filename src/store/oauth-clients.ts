/**
 * decisions.md#openid-provider-clients: a tenant's OAuth clients. Every query names the tenant, so a
 * client id of another tenant is simply not found. The secret is stored only as its SHA-256, which
 * the caller computes; it is never read back out of here except to compare.
 */
import type { Kysely, Selectable } from "kysely";
import type { Database, OauthClientsTable } from "./schema.js";

export type OauthClientType = "confidential" | "public";

export interface OauthClientRecord {
  clientId: string;
  name: string;
  type: OauthClientType;
  firstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  /** SHA-256 (hex) of the secret; null for a public client. */
  secretHash: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What an update may change; the id, type and secret stay. */
export type OauthClientChanges = Partial<Pick<OauthClientRecord, "name" | "firstParty" | "redirectUris" | "postLogoutRedirectUris">>;

function toClient(row: Selectable<OauthClientsTable>): OauthClientRecord {
  return {
    clientId: row.client_id,
    name: row.name,
    // Rows are written only from the OauthClientType union.
    type: row.type as OauthClientType,
    firstParty: Number(row.first_party) === 1,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
    secretHash: row.secret_hash,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

export class OauthClientStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertClient(tenantId: string, client: OauthClientRecord): Promise<void> {
    await this.db
      .insertInto("oauth_clients")
      .values({
        tenant_id: tenantId,
        client_id: client.clientId,
        name: client.name,
        type: client.type,
        first_party: client.firstParty ? 1 : 0,
        redirect_uris: JSON.stringify(client.redirectUris),
        post_logout_redirect_uris: JSON.stringify(client.postLogoutRedirectUris),
        secret_hash: client.secretHash,
        created_at: client.createdAt,
        updated_at: client.updatedAt,
      })
      .execute();
  }

  async findClient(tenantId: string, clientId: string): Promise<OauthClientRecord | undefined> {
    const row = await this.db.selectFrom("oauth_clients").selectAll().where("tenant_id", "=", tenantId).where("client_id", "=", clientId).executeTakeFirst();
    return row && toClient(row);
  }

  /** Oldest first. */
  async listClients(tenantId: string): Promise<OauthClientRecord[]> {
    const rows = await this.db.selectFrom("oauth_clients").selectAll().where("tenant_id", "=", tenantId).orderBy("created_at").orderBy("client_id").execute();
    return rows.map(toClient);
  }

  async countClients(tenantId: string): Promise<number> {
    const row = await this.db
      .selectFrom("oauth_clients")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("tenant_id", "=", tenantId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** False when the client is gone. */
  async updateClient(tenantId: string, clientId: string, changes: OauthClientChanges, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("oauth_clients")
      .set({
        updated_at: now,
        ...(changes.name !== undefined && { name: changes.name }),
        ...(changes.firstParty !== undefined && { first_party: changes.firstParty ? 1 : 0 }),
        ...(changes.redirectUris !== undefined && { redirect_uris: JSON.stringify(changes.redirectUris) }),
        ...(changes.postLogoutRedirectUris !== undefined && { post_logout_redirect_uris: JSON.stringify(changes.postLogoutRedirectUris) }),
      })
      .where("tenant_id", "=", tenantId)
      .where("client_id", "=", clientId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Deletes the client and every grant given to it (their codes and tokens go by cascade). False when it was gone. */
  async deleteClient(tenantId: string, clientId: string): Promise<boolean> {
    await this.db.deleteFrom("oauth_grants").where("tenant_id", "=", tenantId).where("client_id", "=", clientId).execute();
    const result = await this.db.deleteFrom("oauth_clients").where("tenant_id", "=", tenantId).where("client_id", "=", clientId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
