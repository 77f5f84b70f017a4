/**
 * decisions.md#federated-connections: a tenant's upstream identity providers. Every query names the
 * tenant; the client secret is stored only sealed (the caller seals it) and is never logged.
 */
import type { Kysely, Selectable, Updateable } from "kysely";
import type { ConnectionsTable, Database } from "./schema.js";

export type ConnectionType = "oidc" | "google" | "microsoft" | "apple" | "gitlab" | "github";

export interface Connection {
  id: string;
  type: ConnectionType;
  displayName: string;
  /** Presets filled in; null for github. */
  issuer: string | null;
  clientId: string;
  clientSecretSealed: string;
  scopes: string[];
  allowSignup: boolean;
  /** Lowercase domains an account made by this connection must have; null for any. */
  emailDomains: string[] | null;
  createdAt: number;
  updatedAt: number;
}

export type ConnectionChanges = Partial<Omit<Connection, "id" | "createdAt" | "updatedAt">>;

/** One sealed client secret, for `latch secrets reseal`. */
export interface SealedConnectionSecret {
  id: string;
  clientSecretSealed: string;
}

function toConnection(row: Selectable<ConnectionsTable>): Connection {
  return {
    id: row.id,
    // Rows are written only from the ConnectionType union (flows/federation/connections.ts).
    type: row.type as ConnectionType,
    displayName: row.display_name,
    issuer: row.issuer,
    clientId: row.client_id,
    clientSecretSealed: row.client_secret_enc,
    scopes: row.scopes === "" ? [] : row.scopes.split(" "),
    allowSignup: Number(row.allow_signup) === 1,
    emailDomains: row.email_domains === null ? null : (JSON.parse(row.email_domains) as string[]),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** The columns a change writes: only the fields it names. */
function columnsOf(changes: ConnectionChanges): Updateable<ConnectionsTable> {
  const columns: Updateable<ConnectionsTable> = {};
  if (changes.type !== undefined) columns.type = changes.type;
  if (changes.displayName !== undefined) columns.display_name = changes.displayName;
  if (changes.issuer !== undefined) columns.issuer = changes.issuer;
  if (changes.clientId !== undefined) columns.client_id = changes.clientId;
  if (changes.clientSecretSealed !== undefined) columns.client_secret_enc = changes.clientSecretSealed;
  if (changes.scopes !== undefined) columns.scopes = changes.scopes.join(" ");
  if (changes.allowSignup !== undefined) columns.allow_signup = changes.allowSignup ? 1 : 0;
  if (changes.emailDomains !== undefined) columns.email_domains = changes.emailDomains === null ? null : JSON.stringify(changes.emailDomains);
  return columns;
}

export class ConnectionStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** False when the tenant already has a connection with this id. */
  async insertConnection(tenantId: string, c: Omit<Connection, "createdAt" | "updatedAt">, now: number): Promise<boolean> {
    const inserted = await this.db
      .insertInto("connections")
      .values({
        tenant_id: tenantId,
        id: c.id,
        type: c.type,
        display_name: c.displayName,
        issuer: c.issuer,
        client_id: c.clientId,
        client_secret_enc: c.clientSecretSealed,
        scopes: c.scopes.join(" "),
        allow_signup: c.allowSignup ? 1 : 0,
        email_domains: c.emailDomains === null ? null : JSON.stringify(c.emailDomains),
        created_at: now,
        updated_at: now,
      })
      .onConflict((oc) => oc.columns(["tenant_id", "id"]).doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async findConnection(tenantId: string, id: string): Promise<Connection | undefined> {
    const row = await this.db.selectFrom("connections").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst();
    return row && toConnection(row);
  }

  /** Oldest first, then by id: the order the admin made them in. */
  async listConnections(tenantId: string): Promise<Connection[]> {
    const rows = await this.db.selectFrom("connections").selectAll().where("tenant_id", "=", tenantId).orderBy("created_at").orderBy("id").execute();
    return rows.map(toConnection);
  }

  /** The connection as it is after the change, or undefined when the tenant has none by that id. */
  async updateConnection(tenantId: string, id: string, changes: ConnectionChanges, now: number): Promise<Connection | undefined> {
    const row = await this.db
      .updateTable("connections")
      .set({ ...columnsOf(changes), updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    return row && toConnection(row);
  }

  /**
   * The connection and everything keyed to it: its identities (the links to members), its sign-ins in
   * flight and its pending steps, so a connection made again with the same id starts with none.
   * Callers run it inside store.transaction, so it is all or nothing.
   */
  async deleteConnection(tenantId: string, id: string): Promise<boolean> {
    await this.db.deleteFrom("federated_identities").where("tenant_id", "=", tenantId).where("connection_id", "=", id).execute();
    await this.db.deleteFrom("federation_flows").where("tenant_id", "=", tenantId).where("connection_id", "=", id).execute();
    await this.db.deleteFrom("federation_pending").where("tenant_id", "=", tenantId).where("connection_id", "=", id).execute();
    const result = await this.db.deleteFrom("connections").where("tenant_id", "=", tenantId).where("id", "=", id).executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }

  /** One page of the tenant's sealed client secrets by id, after `afterId` (exclusive), for `latch secrets reseal`. */
  async listSealedClientSecrets(tenantId: string, afterId: string, limit: number): Promise<SealedConnectionSecret[]> {
    const rows = await this.db
      .selectFrom("connections")
      .select(["id", "client_secret_enc"])
      .where("tenant_id", "=", tenantId)
      .where("id", ">", afterId)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, clientSecretSealed: r.client_secret_enc }));
  }

  /**
   * Swaps the sealed client secret only if it is still `from`, so an admin's new secret racing the
   * reseal wins. updated_at stays: the secret itself did not change.
   */
  async replaceSealedClientSecret(tenantId: string, id: string, from: string, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable("connections")
      .set({ client_secret_enc: to })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .where("client_secret_enc", "=", from)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }
}
