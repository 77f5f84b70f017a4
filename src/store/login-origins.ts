import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

export type OriginKind = "country" | "network";

export interface LoginOrigin {
  kind: OriginKind;
  value: string;
}

export interface RecordedOrigins {
  /** Whether the member had logged in before (a first login is never an anomaly). */
  hadHistory: boolean;
  /** The origins of this login that had not been seen for the member. */
  unseen: LoginOrigin[];
}

export class LoginOriginStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Notes this login's origins and tells which were new; called inside the login's transaction. */
  async recordOrigins(tenantId: string, memberId: number, origins: LoginOrigin[], now: number): Promise<RecordedOrigins> {
    const known = await this.db
      .selectFrom("login_origins")
      .select(["kind", "value"])
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .execute();
    const seen = new Set(known.map((o) => `${o.kind}:${o.value}`));
    const unseen = origins.filter((o) => !seen.has(`${o.kind}:${o.value}`));
    for (const origin of origins) {
      await this.db
        .insertInto("login_origins")
        .values({ tenant_id: tenantId, member_id: memberId, kind: origin.kind, value: origin.value, first_seen: now, last_seen: now })
        .onConflict((oc) => oc.columns(["tenant_id", "member_id", "kind", "value"]).doUpdateSet({ last_seen: now }))
        .execute();
    }
    return { hadHistory: known.length > 0, unseen };
  }

  /** contract.md#d22: where the member logged in from (export). */
  async listMemberOrigins(tenantId: string, memberId: number): Promise<{ kind: OriginKind; value: string; firstSeen: number; lastSeen: number }[]> {
    const rows = await this.db
      .selectFrom("login_origins")
      .select(["kind", "value", "first_seen", "last_seen"])
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .orderBy("first_seen")
      .execute();
    return rows.map((r) => ({ kind: r.kind as OriginKind, value: r.value, firstSeen: Number(r.first_seen), lastSeen: Number(r.last_seen) }));
  }

  /** contract.md#d22 erasure. */
  async deleteMemberOrigins(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("login_origins").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
  }

  async deleteOriginsNotSeenSince(cutoff: number): Promise<void> {
    await this.db.deleteFrom("login_origins").where("last_seen", "<", cutoff).execute();
  }
}
