/**
 * decisions.md#openid-provider-storage: the rows behind oidc-provider's models (oidc.ts adapts
 * them to its adapter interface). Every key is a SHA-256 the caller computed; every query carries
 * tenant_id. Revocation is by deleting the grant: its artefacts go by ON DELETE CASCADE, and the
 * grant itself goes with the Latch session it is bound to.
 */
import type { Kysely } from "kysely";
import { MemberStatus } from "../model.js";
import type { Database } from "./schema.js";

export interface OauthRow {
  payload: string;
  consumedAt: number | null;
}

export interface GrantWrite {
  idHash: string;
  clientId: string;
  accountId: string;
  expiresAt: number;
  payload: string;
}

export interface ArtifactWrite {
  model: string;
  idHash: string;
  grantHash: string | null;
  uid: string | null;
  userCodeHash: string | null;
  expiresAt: number;
  payload: string;
}

export class OauthStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Never touches the session binding: a re-save by the provider must not unbind (or rebind) a grant. */
  async upsertGrant(tenantId: string, grant: GrantWrite): Promise<void> {
    await this.db
      .insertInto("oauth_grants")
      .values({
        tenant_id: tenantId,
        id_hash: grant.idHash,
        client_id: grant.clientId,
        account_id: grant.accountId,
        member_id: null,
        session_id_hash: null,
        expires_at: grant.expiresAt,
        payload: grant.payload,
      })
      .onConflict((oc) => oc.columns(["tenant_id", "id_hash"]).doUpdateSet({ payload: grant.payload, expires_at: grant.expiresAt }))
      .execute();
  }

  /**
   * Binds a grant to the Latch session (and member) it was given under; until then `findGrant`
   * answers nothing, so a grant nobody bound fails closed. False when the grant is gone.
   */
  async bindGrant(tenantId: string, idHash: string, sessionIdHash: string, memberId: number): Promise<boolean> {
    const result = await this.db
      .updateTable("oauth_grants")
      .set({ session_id_hash: sessionIdHash, member_id: memberId })
      .where("tenant_id", "=", tenantId)
      .where("id_hash", "=", idHash)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Only while its session lives and its member is not locked: no grant outlives what the session check refuses, sweep or not. */
  async findGrant(tenantId: string, idHash: string, now: number): Promise<OauthRow | undefined> {
    const row = await this.db
      .selectFrom("oauth_grants as g")
      .innerJoin("sessions as s", (j) => j.onRef("s.tenant_id", "=", "g.tenant_id").onRef("s.id_hash", "=", "g.session_id_hash"))
      .innerJoin("members as m", (j) => j.onRef("m.tenant_id", "=", "s.tenant_id").onRef("m.id", "=", "s.member_id"))
      .select("g.payload")
      .where("g.tenant_id", "=", tenantId)
      .where("g.id_hash", "=", idHash)
      .where("g.expires_at", ">", now)
      .where("s.expires_at", ">", now)
      .where("m.status", "<>", MemberStatus.locked)
      .executeTakeFirst();
    return row && { payload: row.payload, consumedAt: null };
  }

  /** The Latch session a grant is bound to (decisions.md#openid-provider-interaction: the provider's session is reused only with it); undefined when none. */
  async grantSessionHash(tenantId: string, idHash: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("oauth_grants")
      .select("session_id_hash")
      .where("tenant_id", "=", tenantId)
      .where("id_hash", "=", idHash)
      .executeTakeFirst();
    return row?.session_id_hash ?? undefined;
  }

  /** Deletes the grant; its artefacts follow by cascade. */
  async deleteGrant(tenantId: string, idHash: string): Promise<void> {
    await this.db.deleteFrom("oauth_grants").where("tenant_id", "=", tenantId).where("id_hash", "=", idHash).execute();
  }

  /** For callers that end a member's access without deleting sessions (erasure also catches unbound grants). */
  async revokeMemberGrants(tenantId: string, memberId: number): Promise<number> {
    const result = await this.db.deleteFrom("oauth_grants").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Deleting the session does the same by cascade; this is for a caller that keeps the session. */
  async revokeSessionGrants(tenantId: string, sessionIdHash: string): Promise<number> {
    const result = await this.db.deleteFrom("oauth_grants").where("tenant_id", "=", tenantId).where("session_id_hash", "=", sessionIdHash).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** Keeps `consumed_at` and the grant link: a re-save never un-consumes a token or moves it to another family. */
  async upsertArtifact(tenantId: string, artifact: ArtifactWrite): Promise<void> {
    await this.db
      .insertInto("oauth_artifacts")
      .values({
        tenant_id: tenantId,
        model: artifact.model,
        id_hash: artifact.idHash,
        grant_hash: artifact.grantHash,
        uid: artifact.uid,
        user_code_hash: artifact.userCodeHash,
        expires_at: artifact.expiresAt,
        consumed_at: null,
        payload: artifact.payload,
      })
      .onConflict((oc) =>
        oc
          .columns(["tenant_id", "model", "id_hash"])
          .doUpdateSet({ payload: artifact.payload, expires_at: artifact.expiresAt, uid: artifact.uid, user_code_hash: artifact.userCodeHash }),
      )
      .execute();
  }

  async findArtifact(tenantId: string, model: string, by: "id_hash" | "uid" | "user_code_hash", value: string, now: number): Promise<OauthRow | undefined> {
    const row = await this.db
      .selectFrom("oauth_artifacts")
      .select(["payload", "consumed_at"])
      .where("tenant_id", "=", tenantId)
      .where("model", "=", model)
      .where(by, "=", value)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return row && { payload: row.payload, consumedAt: row.consumed_at };
  }

  /** ONE conditional update: of two concurrent consumes exactly one sees `consumed_at IS NULL`. */
  async consumeArtifact(tenantId: string, model: string, idHash: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("oauth_artifacts")
      .set({ consumed_at: now })
      .where("tenant_id", "=", tenantId)
      .where("model", "=", model)
      .where("id_hash", "=", idHash)
      .where("consumed_at", "is", null)
      .where("expires_at", ">", now)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Revokes the family of an artefact (a second use of a code or refresh token): its grant and, by cascade, every artefact of it. */
  async revokeFamilyOf(tenantId: string, model: string, idHash: string): Promise<void> {
    const row = await this.db
      .selectFrom("oauth_artifacts")
      .select("grant_hash")
      .where("tenant_id", "=", tenantId)
      .where("model", "=", model)
      .where("id_hash", "=", idHash)
      .executeTakeFirst();
    if (row?.grant_hash) await this.revokeGrant(tenantId, row.grant_hash);
  }

  /** The grant row and every artefact of it (the cascade would do it; the explicit delete keeps the intent in one place). */
  async revokeGrant(tenantId: string, grantHash: string): Promise<void> {
    await this.db.deleteFrom("oauth_artifacts").where("tenant_id", "=", tenantId).where("grant_hash", "=", grantHash).execute();
    await this.deleteGrant(tenantId, grantHash);
  }

  async deleteArtifact(tenantId: string, model: string, idHash: string): Promise<void> {
    await this.db.deleteFrom("oauth_artifacts").where("tenant_id", "=", tenantId).where("model", "=", model).where("id_hash", "=", idHash).execute();
  }

  /** The sweep (index.ts sweepExpired): keeps the tables bounded; reads already ignore what has expired. */
  async deleteExpired(now: number): Promise<void> {
    await this.db.deleteFrom("oauth_artifacts").where("expires_at", "<=", now).execute();
    await this.db.deleteFrom("oauth_grants").where("expires_at", "<=", now).execute();
  }
}
