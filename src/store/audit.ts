import type { Kysely } from "kysely";
import type { AuditEventType } from "../model.js";
import type { Database } from "./schema.js";

export interface AuditEvent {
  memberId: number | null;
  type: AuditEventType;
  ip: string | null;
  userAgent: string | null;
  /** Never a secret: callers pass only ids, statuses and reasons. */
  details?: Record<string, string | number | boolean | null>;
}

/** As read back: `type` is whatever the row holds (a row may predate the current list). */
export interface StoredAuditEvent extends Omit<AuditEvent, "type"> {
  type: string;
  id: number;
  at: number;
}

export class AuditStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertAuditEvent(tenantId: string, event: AuditEvent, now: number): Promise<void> {
    await this.db
      .insertInto("audit_events")
      .values({
        tenant_id: tenantId,
        member_id: event.memberId,
        type: event.type,
        at: now,
        ip: event.ip,
        user_agent: event.userAgent?.slice(0, 512) ?? null,
        details: event.details ? JSON.stringify(event.details) : null,
      })
      .execute();
  }

  /**
   * Retention (AUDIT_RETENTION_DAYS): events recorded before `cutoff` are deleted, `batchSize` rows
   * per statement, so the first sweep after an upgrade doesn't hold SQLite's write lock for a year
   * of events at once. Returns how many were deleted.
   */
  async deleteAuditEventsBefore(cutoff: number, batchSize = 1000): Promise<number> {
    let deleted = 0;
    for (;;) {
      const result = await this.db
        .deleteFrom("audit_events")
        .where("id", "in", (eb) => eb.selectFrom("audit_events").select("id").where("at", "<", cutoff).orderBy("id").limit(batchSize))
        .executeTakeFirst();
      const count = Number(result.numDeletedRows);
      deleted += count;
      if (count < batchSize) return deleted;
    }
  }

  /** contract.md#d22 erasure. */
  async deleteMemberAuditEvents(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("audit_events").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
  }

  async listMemberAuditEvents(tenantId: string, memberId: number, limit: number): Promise<StoredAuditEvent[]> {
    const rows = await this.db
      .selectFrom("audit_events")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .orderBy("id", "desc")
      .limit(limit)
      .execute();
    return rows.map((r) => ({
      id: Number(r.id),
      memberId: r.member_id === null ? null : Number(r.member_id),
      type: r.type,
      at: Number(r.at),
      ip: r.ip,
      userAgent: r.user_agent,
      details: r.details ? (JSON.parse(r.details) as AuditEvent["details"]) : {},
    }));
  }
}
