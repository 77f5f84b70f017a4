import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import type { MemberStatus, TwoFactorStatus } from "../model.js";
import { PreparedQuery } from "./prepared.js";
import type { HotReader } from "./dialects.js";
import type { SessionTouches } from "./session-touches.js";

export interface SessionRecord {
  memberId: number;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
  memberStatus: MemberStatus;
  twoFactorStatus: TwoFactorStatus;
  /** contract.md#d26: opened by a passkey login. */
  byPasskey: boolean;
  /** decisions.md#authentication-methods: RFC 8176 values, how the session was opened. */
  amr: string[];
}

/** Where a session was opened (contract.md#d24): kept to show the member, never a secret. */
export interface SessionOrigin {
  publicId: string;
  ip: string | null;
  userAgent: string | null;
  country: string | null;
  /** contract.md#d26: a passkey login opened it. */
  byPasskey?: boolean;
  /** decisions.md#authentication-methods: RFC 8176 values, how the session was opened. */
  amr?: readonly string[];
}

/** A session as its member sees it (contract.md#d24): the public id, never the cookie or its hash. */
export interface SessionSummary extends SessionOrigin {
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
}

/** Sessions are keyed by the SHA-256 of the cookie value; the cookie itself is never stored. */
export class SessionStore {
  constructor(
    private readonly db: Kysely<Database>,
    /** Outside a transaction, the session check's own path (dialects.ts HotReader). */
    private readonly reader: HotReader | undefined,
    /** `last_seen_at` written behind, shared by the root store and its transactions. */
    private readonly touches: SessionTouches,
  ) {}

  async insertSession(tenantId: string, idHash: string, memberId: number, origin: SessionOrigin, now: number, expiresAt: number): Promise<void> {
    await this.db
      .insertInto("sessions")
      .values({
        tenant_id: tenantId,
        id_hash: idHash,
        member_id: memberId,
        created_at: now,
        expires_at: expiresAt,
        last_seen_at: now,
        public_id: origin.publicId,
        ip: origin.ip,
        user_agent: origin.userAgent,
        country: origin.country,
        by_passkey: origin.byPasskey ? 1 : 0,
        amr: JSON.stringify(origin.amr ?? []),
      })
      .execute();
  }

  /**
   * Moves `last_seen_at` forward when it is a minute old or more; a no-op otherwise (idempotent
   * under races). Written behind, with other sessions' (session-touches.ts); this process reads it at once.
   */
  touchSession(tenantId: string, idHash: string, now: number): void {
    this.touches.touch(tenantId, idHash, now);
  }

  /** The session check: one primary-key lookup joined to the member row by its primary key. */
  private readonly liveSession = new PreparedQuery(["tenantId", "idHash", "now"], (v: { tenantId: string; idHash: string; now: number }) =>
    this.db
      .selectFrom("sessions as s")
      .innerJoin("members as m", (join) => join.onRef("m.tenant_id", "=", "s.tenant_id").onRef("m.id", "=", "s.member_id"))
      .select(["s.member_id", "s.created_at", "s.expires_at", "s.last_seen_at", "s.by_passkey", "s.amr", "m.status", "m.two_factor_status"])
      .where("s.tenant_id", "=", v.tenantId)
      .where("s.id_hash", "=", v.idHash)
      .where("s.expires_at", ">", v.now),
  );

  async findLiveSession(tenantId: string, idHash: string, now: number): Promise<SessionRecord | undefined> {
    const rows = this.liveSession.execute(this.db, { tenantId, idHash, now }, this.reader);
    const [row] = Array.isArray(rows) ? rows : await rows;
    return (
      row && {
        memberId: Number(row.member_id),
        createdAt: Number(row.created_at),
        expiresAt: Number(row.expires_at),
        lastSeenAt: this.touches.seenAt(tenantId, idHash, Number(row.last_seen_at)),
        memberStatus: row.status as MemberStatus,
        twoFactorStatus: row.two_factor_status as TwoFactorStatus,
        byPasskey: Number(row.by_passkey) === 1,
        amr: JSON.parse(row.amr) as string[],
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

  /** Ends one session of the member by its public id; false when the member has no such live session. */
  async deleteSessionByPublicId(tenantId: string, memberId: number, publicId: string): Promise<boolean> {
    const rows = await this.db
      .deleteFrom("sessions")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("public_id", "=", publicId)
      .returning("member_id")
      .execute();
    return rows.length > 0;
  }

  /** The public id of the session a cookie hash names (to mark the current one in a list). */
  async findPublicId(tenantId: string, idHash: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("sessions").select("public_id").where("tenant_id", "=", tenantId).where("id_hash", "=", idHash).executeTakeFirst();
    return row?.public_id;
  }

  /** contract.md#d22/contract.md#d24: the member's live sessions, newest first; never their id hashes. */
  async listMemberSessions(tenantId: string, memberId: number, now: number): Promise<SessionSummary[]> {
    const rows = await this.db
      .selectFrom("sessions")
      .select(["public_id", "id_hash", "created_at", "last_seen_at", "expires_at", "ip", "user_agent", "country"])
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("expires_at", ">", now)
      .orderBy("created_at", "desc")
      .orderBy("public_id")
      .execute();
    return rows.map((r) => ({
      publicId: r.public_id,
      createdAt: Number(r.created_at),
      lastSeenAt: this.touches.seenAt(tenantId, r.id_hash, Number(r.last_seen_at)),
      expiresAt: Number(r.expires_at),
      ip: r.ip,
      userAgent: r.user_agent,
      country: r.country,
    }));
  }

  async deleteExpiredSessions(now: number): Promise<void> {
    await this.db.deleteFrom("sessions").where("expires_at", "<=", now).execute();
  }
}
