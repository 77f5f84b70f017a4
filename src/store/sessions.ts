import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import type { MemberStatus, TwoFactorStatus } from "../model.js";
import { PreparedQuery } from "./prepared.js";
import type { SnapshotReader } from "./dialects.js";

export interface SessionRecord {
  memberId: number;
  createdAt: number;
  expiresAt: number;
  memberStatus: MemberStatus;
  twoFactorStatus: TwoFactorStatus;
}

/** Sessions are keyed by the SHA-256 of the cookie value; the cookie itself is never stored. */
export class SessionStore {
  constructor(
    private readonly db: Kysely<Database>,
    /** SQLite outside a transaction: the session check reads the committed snapshot directly. */
    private readonly reader?: SnapshotReader,
  ) {}

  async insertSession(tenantId: string, idHash: string, memberId: number, now: number, expiresAt: number): Promise<void> {
    await this.db.insertInto("sessions").values({ tenant_id: tenantId, id_hash: idHash, member_id: memberId, created_at: now, expires_at: expiresAt }).execute();
  }

  /** The session check: one primary-key lookup joined to the member row by its primary key. */
  private readonly liveSession = new PreparedQuery(["tenantId", "idHash", "now"], (v: { tenantId: string; idHash: string; now: number }) =>
    this.db
      .selectFrom("sessions as s")
      .innerJoin("members as m", (join) => join.onRef("m.tenant_id", "=", "s.tenant_id").onRef("m.id", "=", "s.member_id"))
      .select(["s.member_id", "s.created_at", "s.expires_at", "m.status", "m.two_factor_status"])
      .where("s.tenant_id", "=", v.tenantId)
      .where("s.id_hash", "=", v.idHash)
      .where("s.expires_at", ">", v.now),
  );

  async findLiveSession(tenantId: string, idHash: string, now: number): Promise<SessionRecord | undefined> {
    const [row] = await this.liveSession.execute(this.db, { tenantId, idHash, now }, this.reader);
    return (
      row && {
        memberId: Number(row.member_id),
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
        memberStatus: row.status as MemberStatus,
        twoFactorStatus: row.two_factor_status as TwoFactorStatus,
      }
    );
  }

  async deleteSession(tenantId: string, idHash: string): Promise<void> {
    await this.db.deleteFrom("sessions").where("tenant_id", "=", tenantId).where("id_hash", "=", idHash).execute();
  }

  /** Revokes every session of a member, or every one but `keepIdHash` (password change). */
  async deleteMemberSessions(tenantId: string, memberId: number, keepIdHash?: string): Promise<void> {
    let query = this.db.deleteFrom("sessions").where("tenant_id", "=", tenantId).where("member_id", "=", memberId);
    if (keepIdHash !== undefined) query = query.where("id_hash", "!=", keepIdHash);
    await query.execute();
  }

  /** D22: the member's live sessions, oldest first; never their id hashes (export, counts). */
  async listMemberSessions(tenantId: string, memberId: number, now: number): Promise<{ createdAt: number; expiresAt: number }[]> {
    const rows = await this.db
      .selectFrom("sessions")
      .select(["created_at", "expires_at"])
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("expires_at", ">", now)
      .orderBy("created_at")
      .execute();
    return rows.map((r) => ({ createdAt: Number(r.created_at), expiresAt: Number(r.expires_at) }));
  }

  async deleteExpiredSessions(now: number): Promise<void> {
    await this.db.deleteFrom("sessions").where("expires_at", "<=", now).execute();
  }
}
