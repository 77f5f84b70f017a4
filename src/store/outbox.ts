import type { Kysely, Selectable } from "kysely";
import { claimingRead, type DialectName } from "./dialects.js";
import type { Database, WebhookDeliveriesTable } from "./schema.js";
import type { WebhookEventType } from "../model.js";

/** `discarded`: written for an unknown email so the work matches a real one (contract.md#d19), never sent, swept at once. */
export type DeliveryStatus = "pending" | "delivered" | "failed" | "discarded";

export interface NewDelivery {
  id: string;
  tenantId: string;
  eventType: WebhookEventType;
  url: string;
  payloadEnc: string;
  /** contract.md#d19: the same row for an unknown email, never sent and never holding the payload. */
  discarded?: boolean;
  /** The member the event is about (contract.md#d22 erasure). */
  memberId?: number | null;
}

export interface ClaimedDelivery {
  id: string;
  tenantId: string;
  eventType: WebhookEventType;
  url: string;
  payloadEnc: string;
  attempts: number;
  createdAt: number;
}

/** What the operator may see of a delivery: never the payload, which holds a link with a token. */
export interface DeliverySummary {
  id: string;
  eventType: string;
  /** Discarded rows (contract.md#d19) are never listed. */
  status: Exclude<DeliveryStatus, "discarded">;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: number | null;
  createdAt: number;
}

function toClaimed(row: Selectable<WebhookDeliveriesTable>): ClaimedDelivery {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    eventType: row.event_type as WebhookEventType,
    url: row.url,
    payloadEnc: row.payload_enc ?? "",
    attempts: Number(row.attempts),
    createdAt: Number(row.created_at),
  };
}

export class OutboxStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** Called inside the flow's transaction, beside the state change the event reports. */
  async insertDelivery(delivery: NewDelivery, now: number): Promise<void> {
    await this.db
      .insertInto("webhook_deliveries")
      .values({
        id: delivery.id,
        tenant_id: delivery.tenantId,
        event_type: delivery.eventType,
        url: delivery.url,
        payload_enc: delivery.discarded ? null : delivery.payloadEnc,
        status: delivery.discarded ? "discarded" : "pending",
        attempts: 0,
        next_attempt_at: now,
        claimed_until: 0,
        last_error: null,
        member_id: delivery.memberId ?? null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }

  /** contract.md#d22 erasure: every delivery about the member, waiting ones (whose payload holds the email) and finished ones. */
  async deleteMemberDeliveries(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("webhook_deliveries").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
  }

  /**
   * Leases due deliveries so a crashed sender's rows come back after `leaseMs`. The lease is taken
   * in one UPDATE so two dispatchers never claim the same row.
   */
  async claimDueDeliveries(now: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    let due = this.db
      .selectFrom("webhook_deliveries")
      .select("id")
      .where("status", "=", "pending")
      .where("next_attempt_at", "<=", now)
      .where("claimed_until", "<=", now)
      .orderBy("next_attempt_at")
      .limit(limit);
    // PostgreSQL: rows another instance is claiming are skipped rather than waited for.
    due = claimingRead(due, this.dialect);
    const rows = await this.db
      .updateTable("webhook_deliveries")
      .set({ claimed_until: now + leaseMs })
      .where("id", "in", due)
      .where("claimed_until", "<=", now)
      .returningAll()
      .execute();
    return rows.map(toClaimed);
  }

  /** A delivery whose tenant is gone (contract.md#d23): nobody is left to sign for or send to. */
  async deleteDelivery(id: string): Promise<void> {
    await this.db.deleteFrom("webhook_deliveries").where("id", "=", id).execute();
  }

  /** Success or final failure: the payload is wiped, so no token outlives its delivery. */
  async finishDelivery(id: string, status: "delivered" | "failed", attempts: number, lastError: string | null, now: number): Promise<void> {
    await this.db
      .updateTable("webhook_deliveries")
      .set({ status, attempts, last_error: lastError, payload_enc: null, claimed_until: 0, updated_at: now })
      .where("id", "=", id)
      .execute();
  }

  async scheduleRetry(id: string, attempts: number, lastError: string, nextAttemptAt: number, now: number): Promise<void> {
    await this.db
      .updateTable("webhook_deliveries")
      .set({ attempts, last_error: lastError, next_attempt_at: nextAttemptAt, claimed_until: 0, updated_at: now })
      .where("id", "=", id)
      .execute();
  }

  /** Rows not yet delivered or abandoned, every tenant together: the backlog gauge of /metrics. */
  async countPendingDeliveries(): Promise<number> {
    const row = await this.db
      .selectFrom("webhook_deliveries")
      .select((eb) => eb.fn.countAll().as("pending"))
      .where("status", "=", "pending")
      .executeTakeFirstOrThrow();
    return Number(row.pending);
  }

  /** Finished rows are kept `finishedBefore` for the operator's view; discarded ones (contract.md#d19) go at once. */
  async deleteFinishedDeliveries(finishedBefore: number): Promise<void> {
    await this.db.deleteFrom("webhook_deliveries").where("status", "!=", "pending").where("updated_at", "<", finishedBefore).execute();
    await this.db.deleteFrom("webhook_deliveries").where("status", "=", "discarded").execute();
  }

  async listRecentDeliveries(tenantId: string, limit: number): Promise<DeliverySummary[]> {
    const rows = await this.db
      .selectFrom("webhook_deliveries")
      .select(["id", "event_type", "status", "attempts", "last_error", "next_attempt_at", "created_at"])
      .where("tenant_id", "=", tenantId)
      .where("status", "!=", "discarded")
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: r.id,
      eventType: r.event_type,
      status: r.status as Exclude<DeliveryStatus, "discarded">,
      attempts: Number(r.attempts),
      lastError: r.last_error,
      nextAttemptAt: r.status === "pending" ? Number(r.next_attempt_at) : null,
      createdAt: Number(r.created_at),
    }));
  }

  /** One page of a tenant's payloads not yet wiped (by id, after `afterId`), for `latch secrets reseal`. */
  async listSealedPayloads(tenantId: string, afterId: string, limit: number): Promise<{ id: string; payloadEnc: string }[]> {
    const rows = await this.db
      .selectFrom("webhook_deliveries")
      .select(["id", "payload_enc"])
      .where("tenant_id", "=", tenantId)
      .where("id", ">", afterId)
      .where("payload_enc", "is not", null)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, payloadEnc: r.payload_enc ?? "" }));
  }

  /** Swaps the payload only if it is still `from`: a delivery that finished meanwhile stays wiped. */
  async replaceSealedPayload(tenantId: string, id: string, from: string, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable("webhook_deliveries")
      .set({ payload_enc: to })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .where("payload_enc", "=", from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
