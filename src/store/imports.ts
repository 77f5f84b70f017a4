/**
 * decisions.md#importing-members (contract.md#d29): members written by an import, and the sealed Firebase
 * scrypt parameters their hashes need. Every method takes the tenant id into its WHERE clause.
 */
import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import { MemberStatus } from "../model.js";
import { insertMemberRow } from "./members.js";

/** A member as an import writes it: every field decided (and every secret hashed or sealed) beforehand. */
export interface ImportedMember {
  recordId: number;
  email: string;
  name: string;
  /** Verified members are active; the others are pending, their password kept in a registration (contract.md#d18). */
  emailVerified: boolean;
  /** `foreign:…` (security/foreign-hashes.ts), or null for a member without a password. */
  passwordHash: string | null;
  createdAt: number;
  externalId: string | null;
  totpSecretSealed: string | null;
}

export class ImportStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Inserts the member row (the same insert as any member's), or returns false when the email (or, rarely, the random record id) is taken. */
  async insertMember(tenantId: string, member: ImportedMember, now: number): Promise<boolean> {
    const verified = member.emailVerified;
    const hasPassword = member.passwordHash !== null;
    return insertMemberRow(
      this.db,
      tenantId,
      {
        recordId: member.recordId,
        email: member.email,
        name: member.name,
        status: verified ? MemberStatus.unlocked : MemberStatus.pending,
        passwordAuth: verified && hasPassword,
        magicLinkAuth: verified && !hasPassword,
        // A pending account holds no password of its own: its registration does (contract.md#d18).
        passwordHash: verified ? member.passwordHash : null,
        passwordSalt: null,
        emailVerified: verified,
        totpSecretSealed: member.totpSecretSealed,
        // contract.md#d25: a pending account is kept PENDING_RETENTION_DAYS from its import, not from its old creation.
        pendingUntil: verified ? null : now,
        externalId: member.externalId,
        createdAt: member.createdAt,
      },
      now,
    );
  }

  /** Whether the tenant has a member with this email. */
  async emailTaken(tenantId: string, email: string): Promise<boolean> {
    const row = await this.db.selectFrom("members").select("id").where("tenant_id", "=", tenantId).where("email", "=", email).executeTakeFirst();
    return row !== undefined;
  }

  /** Which of `emails` the tenant already has (one query for a batch). */
  async takenEmails(tenantId: string, emails: string[]): Promise<Set<string>> {
    if (emails.length === 0) return new Set();
    const rows = await this.db.selectFrom("members").select("email").where("tenant_id", "=", tenantId).where("email", "in", emails).execute();
    return new Set(rows.map((r) => r.email));
  }

  /** Keeps the parameters once per fingerprint id: a second import of the same project adds nothing. */
  async saveHashParams(tenantId: string, id: string, paramsSealed: string, now: number): Promise<void> {
    await this.db
      .insertInto("imported_hash_params")
      .values({ tenant_id: tenantId, id, params_sealed: paramsSealed, created_at: now })
      .onConflict((oc) => oc.doNothing())
      .execute();
  }

  async findHashParams(tenantId: string, id: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("imported_hash_params")
      .select("params_sealed")
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row?.params_sealed;
  }

  /** For `latch secrets reseal`: a page of the tenant's sealed parameters, by id. */
  async listSealedHashParams(tenantId: string, after: string, limit: number): Promise<{ id: string; paramsSealed: string }[]> {
    const rows = await this.db
      .selectFrom("imported_hash_params")
      .select(["id", "params_sealed"])
      .where("tenant_id", "=", tenantId)
      .where("id", ">", after)
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, paramsSealed: r.params_sealed }));
  }

  /** Conditional on the value read, like every reseal swap. */
  async replaceSealedHashParams(tenantId: string, id: string, from: string, to: string): Promise<boolean> {
    const result = await this.db
      .updateTable("imported_hash_params")
      .set({ params_sealed: to })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", id)
      .where("params_sealed", "=", from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
