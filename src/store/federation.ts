/**
 * decisions.md#federated-sign-in: the identities members sign in with, the sign-ins in flight and
 * what waits for one more step after a callback. Every query names the tenant; flows and pending
 * steps are keyed by the SHA-256 of their cookie and used up in one statement (of two callbacks
 * with one cookie, exactly one gets the flow).
 */
import type { Kysely, Selectable } from "kysely";
import type { Database, FederatedIdentitiesTable } from "./schema.js";

export interface FederatedIdentity {
  id: string;
  connectionId: string;
  subject: string;
  memberId: number;
  email: string | null;
  linkedSeq: number | null;
  createdAt: number;
  lastUsedAt: number | null;
}

export type FlowPurpose = "login" | "link";

export interface FederationFlow {
  connectionId: string;
  purpose: FlowPurpose;
  /** The member a `link` flow adds an identity to; 0 for `login`. */
  memberId: number;
  /** The session that started a `link` flow (its SHA-256); the callback must come with it. */
  sessionHash: string | null;
  returnTo: string | null;
  createdAt: number;
}

export type PendingKind = "link" | "second_factor";

export interface PendingStep {
  kind: PendingKind;
  connectionId: string;
  subject: string;
  email: string | null;
  memberId: number;
  returnTo: string | null;
  createdAt: number;
}

function toIdentity(row: Selectable<FederatedIdentitiesTable>): FederatedIdentity {
  return {
    id: row.id,
    connectionId: row.connection_id,
    subject: row.subject,
    memberId: Number(row.member_id),
    email: row.email,
    linkedSeq: row.linked_seq === null ? null : Number(row.linked_seq),
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

export class FederationStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertFlow(tenantId: string, flowHash: string, flow: FederationFlow, expiresAt: number): Promise<void> {
    await this.db
      .insertInto("federation_flows")
      .values({
        tenant_id: tenantId,
        flow_hash: flowHash,
        connection_id: flow.connectionId,
        purpose: flow.purpose,
        member_id: flow.memberId,
        session_hash: flow.sessionHash,
        return_to: flow.returnTo,
        created_at: flow.createdAt,
        expires_at: expiresAt,
      })
      .execute();
  }

  /** Uses the flow up: a replayed callback, or a second tab's, finds nothing. */
  async consumeFlow(tenantId: string, flowHash: string, connectionId: string, now: number): Promise<FederationFlow | undefined> {
    const row = await this.db
      .deleteFrom("federation_flows")
      .where("tenant_id", "=", tenantId)
      .where("flow_hash", "=", flowHash)
      .where("connection_id", "=", connectionId)
      .where("expires_at", ">", now)
      .returningAll()
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      connectionId: row.connection_id,
      purpose: row.purpose as FlowPurpose,
      memberId: Number(row.member_id),
      sessionHash: row.session_hash,
      returnTo: row.return_to,
      createdAt: Number(row.created_at),
    };
  }

  async insertPending(tenantId: string, pendingHash: string, step: PendingStep, expiresAt: number): Promise<void> {
    await this.db
      .insertInto("federation_pending")
      .values({
        tenant_id: tenantId,
        pending_hash: pendingHash,
        kind: step.kind,
        connection_id: step.connectionId,
        subject: step.subject,
        email: step.email,
        member_id: step.memberId,
        return_to: step.returnTo,
        created_at: step.createdAt,
        expires_at: expiresAt,
      })
      .execute();
  }

  /** The pending step while it is live, without using it up (a wrong code leaves it for the next try). */
  async findPending(tenantId: string, pendingHash: string, kind: PendingKind, now: number): Promise<PendingStep | undefined> {
    const row = await this.db
      .selectFrom("federation_pending")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("pending_hash", "=", pendingHash)
      .where("kind", "=", kind)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      kind: row.kind as PendingKind,
      connectionId: row.connection_id,
      subject: row.subject,
      email: row.email,
      memberId: Number(row.member_id),
      returnTo: row.return_to,
      createdAt: Number(row.created_at),
    };
  }

  /** Uses the pending step up in one statement; false when another request did first or it expired. */
  async consumePending(tenantId: string, pendingHash: string, kind: PendingKind, now: number): Promise<boolean> {
    const result = await this.db
      .deleteFrom("federation_pending")
      .where("tenant_id", "=", tenantId)
      .where("pending_hash", "=", pendingHash)
      .where("kind", "=", kind)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return Number(result.numDeletedRows) === 1;
  }

  async findIdentity(tenantId: string, connectionId: string, subject: string): Promise<FederatedIdentity | undefined> {
    const row = await this.db
      .selectFrom("federated_identities")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("connection_id", "=", connectionId)
      .where("subject", "=", subject)
      .executeTakeFirst();
    return row && toIdentity(row);
  }

  /** False when `(connection, subject)` is already someone's in this tenant: one member per identity. */
  async insertIdentity(tenantId: string, identity: Omit<FederatedIdentity, "lastUsedAt">): Promise<boolean> {
    const inserted = await this.db
      .insertInto("federated_identities")
      .values({
        tenant_id: tenantId,
        id: identity.id,
        connection_id: identity.connectionId,
        subject: identity.subject,
        member_id: identity.memberId,
        email: identity.email,
        linked_seq: identity.linkedSeq,
        created_at: identity.createdAt,
        last_used_at: identity.createdAt,
      })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async recordIdentityUse(tenantId: string, id: string, email: string | null, now: number): Promise<void> {
    await this.db.updateTable("federated_identities").set({ last_used_at: now, email }).where("tenant_id", "=", tenantId).where("id", "=", id).execute();
  }

  async listMemberIdentities(tenantId: string, memberId: number): Promise<FederatedIdentity[]> {
    const rows = await this.db
      .selectFrom("federated_identities")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toIdentity);
  }

  /** The removed identity, or undefined when the member has none by that id. */
  async deleteMemberIdentity(tenantId: string, memberId: number, id: string): Promise<FederatedIdentity | undefined> {
    const row = await this.db
      .deleteFrom("federated_identities")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    return row && toIdentity(row);
  }

  /** "This wasn't me" (decisions.md#federated-sign-in): links made at or after the alert's sequence number. */
  async deleteIdentitiesLinkedSince(tenantId: string, memberId: number, seq: number): Promise<number> {
    const result = await this.db
      .deleteFrom("federated_identities")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("linked_seq", ">=", seq)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /**
   * What waits for the member (pending steps, link flows in flight): gone when the account is secured,
   * locked or an identity unlinked, so a step taken before cannot finish after (decisions.md#federated-sign-in).
   */
  async deleteMemberPending(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("federation_pending").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
    await this.db.deleteFrom("federation_flows").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
  }

  /** A connection's issuer or type changed: its identities named subjects at another provider, and go (with what waits). */
  async deleteConnectionRows(tenantId: string, connectionId: string): Promise<number> {
    const result = await this.db
      .deleteFrom("federated_identities")
      .where("tenant_id", "=", tenantId)
      .where("connection_id", "=", connectionId)
      .executeTakeFirst();
    await this.db.deleteFrom("federation_pending").where("tenant_id", "=", tenantId).where("connection_id", "=", connectionId).execute();
    await this.db.deleteFrom("federation_flows").where("tenant_id", "=", tenantId).where("connection_id", "=", connectionId).execute();
    return Number(result.numDeletedRows);
  }

  /** Erasure (contract.md#d22): the member's identities and whatever waits for them. */
  async deleteMemberFederation(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("federated_identities").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
    await this.deleteMemberPending(tenantId, memberId);
  }

  async deleteExpired(now: number): Promise<void> {
    await this.db.deleteFrom("federation_flows").where("expires_at", "<=", now).execute();
    await this.db.deleteFrom("federation_pending").where("expires_at", "<=", now).execute();
  }
}
