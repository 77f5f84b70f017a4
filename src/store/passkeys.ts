import type { Kysely, Selectable } from "kysely";
import type { Database, PasskeysTable } from "./schema.js";

export type ChallengePurpose = "registration" | "login";

export interface Passkey {
  id: string;
  memberId: number;
  credentialId: string;
  /** COSE public key, base64url. */
  publicKey: string;
  counter: number;
  backupEligible: boolean;
  backedUp: boolean;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

export type NewPasskey = Omit<Passkey, "lastUsedAt" | "createdAt">;

function toPasskey(row: Selectable<PasskeysTable>): Passkey {
  return {
    id: row.id,
    memberId: Number(row.member_id),
    credentialId: row.credential_id,
    publicKey: row.public_key,
    counter: Number(row.counter),
    backupEligible: row.backup_eligible === 1,
    backedUp: row.backed_up === 1,
    transports: JSON.parse(row.transports) as string[],
    name: row.name,
    createdAt: Number(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

/** contract.md#d26: passkeys and the challenges of the ceremonies in flight. Every query names the tenant. */
export class PasskeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertChallenge(tenantId: string, challengeHash: string, purpose: ChallengePurpose, memberId: number, now: number, expiresAt: number): Promise<void> {
    await this.db
      .insertInto("passkey_challenges")
      .values({ tenant_id: tenantId, challenge_hash: challengeHash, purpose, member_id: memberId, created_at: now, expires_at: expiresAt })
      .execute();
  }

  /** A registration voids the member's earlier one still in flight: one ceremony at a time. */
  async deleteMemberChallenges(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("passkey_challenges").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
  }

  /** Uses the challenge up in one statement: of two answers to one challenge, exactly one gets it. */
  async consumeChallenge(tenantId: string, challengeHash: string, purpose: ChallengePurpose, memberId: number, now: number): Promise<boolean> {
    const row = await this.db
      .deleteFrom("passkey_challenges")
      .where("tenant_id", "=", tenantId)
      .where("challenge_hash", "=", challengeHash)
      .where("purpose", "=", purpose)
      .where("member_id", "=", memberId)
      .where("expires_at", ">", now)
      .returning("challenge_hash")
      .executeTakeFirst();
    return row !== undefined;
  }

  async deleteExpiredChallenges(now: number): Promise<void> {
    await this.db.deleteFrom("passkey_challenges").where("expires_at", "<=", now).execute();
  }

  /** False when the credential is already registered in this tenant (to anyone). */
  async insertPasskey(tenantId: string, passkey: NewPasskey, now: number): Promise<boolean> {
    const inserted = await this.db
      .insertInto("passkeys")
      .values({
        tenant_id: tenantId,
        id: passkey.id,
        member_id: passkey.memberId,
        credential_id: passkey.credentialId,
        public_key: passkey.publicKey,
        counter: passkey.counter,
        backup_eligible: passkey.backupEligible ? 1 : 0,
        backed_up: passkey.backedUp ? 1 : 0,
        transports: JSON.stringify(passkey.transports),
        name: passkey.name,
        created_at: now,
        last_used_at: null,
      })
      .onConflict((oc) => oc.columns(["tenant_id", "credential_id"]).doNothing())
      .executeTakeFirst();
    return Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1;
  }

  async findByCredentialId(tenantId: string, credentialId: string): Promise<Passkey | undefined> {
    const row = await this.db.selectFrom("passkeys").selectAll().where("tenant_id", "=", tenantId).where("credential_id", "=", credentialId).executeTakeFirst();
    return row && toPasskey(row);
  }

  async listMemberPasskeys(tenantId: string, memberId: number): Promise<Passkey[]> {
    const rows = await this.db
      .selectFrom("passkeys")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .orderBy("created_at")
      .orderBy("id")
      .execute();
    return rows.map(toPasskey);
  }

  async countMemberPasskeys(tenantId: string, memberId: number): Promise<number> {
    const row = await this.db
      .selectFrom("passkeys")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /**
   * A login's conditional update from the counter it was verified against: of two logins racing on
   * one counter value (a cloned authenticator), one wins. False when the counter moved meanwhile.
   */
  async recordUse(tenantId: string, id: string, expectedCounter: number, newCounter: number, backedUp: boolean, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("passkeys")
      .set({ counter: newCounter, backed_up: backedUp ? 1 : 0, last_used_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .where("counter", "=", expectedCounter)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async renamePasskey(tenantId: string, memberId: number, id: string, name: string): Promise<boolean> {
    const result = await this.db
      .updateTable("passkeys")
      .set({ name })
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("id", "=", id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** The deleted passkey, or undefined when the member has none by that id. */
  async deletePasskey(tenantId: string, memberId: number, id: string): Promise<Passkey | undefined> {
    const row = await this.db
      .deleteFrom("passkeys")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("id", "=", id)
      .returningAll()
      .executeTakeFirst();
    return row && toPasskey(row);
  }

  /** Erasure (contract.md#d22), or "this wasn't me" with `since`: only those added at or after it (contract.md#d24). */
  async deleteMemberPasskeys(tenantId: string, memberId: number, since?: number): Promise<number> {
    let query = this.db.deleteFrom("passkeys").where("tenant_id", "=", tenantId).where("member_id", "=", memberId);
    if (since !== undefined) query = query.where("created_at", ">=", since);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
