import type { Kysely } from "kysely";
import { type DialectName, lockingRead } from "./dialects.js";
import type { Database } from "./schema.js";

export interface TwoFactorState {
  secretEnc: string | null;
  pendingSecretEnc: string | null;
  /** contract.md#d30: the session (SHA-256 of its id) that started the pending enrolment: only it may see or finish it. */
  pendingSessionHash: string | null;
  /** contract.md#d30: whether that session re-authenticated as it started it. */
  pendingReauthenticated: boolean;
  /** Last accepted TOTP time step: a code of this step or earlier is a replay. */
  lastStep: number;
  failures: number;
  lockedUntil: number;
  /** When 2FA was last turned on; null before migration 0009 recorded it. */
  enabledAt: number | null;
  /** contract.md#d30: the member's `security_seq` when 2FA was last turned on; null before migration 0015. */
  enabledSeq: number | null;
}

export interface TwoFactorAttempt {
  failures: number;
  lockedUntil: number;
  lastStep: number;
}

export interface SealedTotpSecrets {
  memberId: number;
  secretEnc: string | null;
  pendingSecretEnc: string | null;
}

/** The second factor's state on the member row, and hashed recovery codes (contract.md#d14). */
export class TwoFactorStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * Inside a transaction the member row stays locked until commit on PostgreSQL (FOR UPDATE), so
   * concurrent code checks can't both pass a replay mark or lose a failure; SQLite serialises
   * writers, and has no FOR UPDATE.
   */
  async findTwoFactorState(tenantId: string, memberId: number): Promise<TwoFactorState | undefined> {
    let query = this.db
      .selectFrom("members")
      .select([
        "totp_secret_enc",
        "totp_pending_secret_enc",
        "totp_pending_session_hash",
        "totp_pending_reauthenticated",
        "totp_last_step",
        "two_factor_failures",
        "two_factor_locked_until",
        "two_factor_enabled_at",
        "two_factor_enabled_seq",
      ])
      .where("tenant_id", "=", tenantId)
      .where("id", "=", memberId);
    query = lockingRead(query, this.dialect);
    const row = await query.executeTakeFirst();
    return (
      row && {
        secretEnc: row.totp_secret_enc,
        pendingSecretEnc: row.totp_pending_secret_enc,
        pendingSessionHash: row.totp_pending_session_hash,
        pendingReauthenticated: Number(row.totp_pending_reauthenticated) === 1,
        lastStep: Number(row.totp_last_step),
        failures: Number(row.two_factor_failures),
        lockedUntil: Number(row.two_factor_locked_until),
        enabledAt: row.two_factor_enabled_at === null ? null : Number(row.two_factor_enabled_at),
        enabledSeq: row.two_factor_enabled_seq === null ? null : Number(row.two_factor_enabled_seq),
      }
    );
  }

  /**
   * A new pending secret, owned by the session that started it and marked when that session
   * re-authenticated. False (nothing written) once 2FA is on: a setup can't start beside an
   * enabled secret (contract.md#d20).
   */
  async savePendingSecret(
    tenantId: string,
    memberId: number,
    pending: { secretEnc: string; sessionHash: string; reauthenticated: boolean },
    now: number,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({
        totp_pending_secret_enc: pending.secretEnc,
        totp_pending_session_hash: pending.sessionHash,
        totp_pending_reauthenticated: pending.reauthenticated ? 1 : 0,
        updated_at: now,
      })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", memberId)
      .where("two_factor_status", "=", "Disabled")
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async saveAttempt(tenantId: string, memberId: number, attempt: TwoFactorAttempt, now: number): Promise<void> {
    await this.db
      .updateTable("members")
      .set({ two_factor_failures: attempt.failures, two_factor_locked_until: attempt.lockedUntil, totp_last_step: attempt.lastStep, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", memberId)
      .execute();
  }

  /**
   * Moves the pending secret into place and stores a fresh set of recovery code hashes; false
   * (nothing written) when 2FA is already on: contract.md#d20, a conditional update from the state decided on.
   */
  async enableTwoFactor(
    tenantId: string,
    memberId: number,
    enabled: { secretEnc: string; lastStep: number; seq: number },
    codeHashes: string[],
    now: number,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({
        two_factor_status: "Enabled",
        totp_secret_enc: enabled.secretEnc,
        totp_pending_secret_enc: null,
        totp_pending_session_hash: null,
        totp_pending_reauthenticated: 0,
        totp_last_step: enabled.lastStep,
        two_factor_failures: 0,
        two_factor_locked_until: 0,
        two_factor_enabled_at: now,
        two_factor_enabled_seq: enabled.seq,
        updated_at: now,
      })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", memberId)
      .where("two_factor_status", "=", "Disabled")
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) return false;
    await this.replaceRecoveryCodes(tenantId, memberId, codeHashes);
    return true;
  }

  /** False (nothing written) when 2FA is already off (contract.md#d20). */
  async disableTwoFactor(tenantId: string, memberId: number, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({
        two_factor_status: "Disabled",
        totp_secret_enc: null,
        totp_pending_secret_enc: null,
        totp_pending_session_hash: null,
        totp_pending_reauthenticated: 0,
        totp_last_step: 0,
        two_factor_failures: 0,
        two_factor_locked_until: 0,
        updated_at: now,
      })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", memberId)
      .where("two_factor_status", "=", "Enabled")
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) return false;
    await this.db.deleteFrom("recovery_codes").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
    return true;
  }

  /** A new set voids the old one entirely. */
  async replaceRecoveryCodes(tenantId: string, memberId: number, codeHashes: string[]): Promise<void> {
    await this.db.deleteFrom("recovery_codes").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
    if (codeHashes.length === 0) return;
    await this.db
      .insertInto("recovery_codes")
      .values(codeHashes.map((code_hash) => ({ tenant_id: tenantId, member_id: memberId, code_hash })))
      .execute();
  }

  /** Single use in one statement: of two concurrent uses exactly one deletes the row. */
  async consumeRecoveryCode(tenantId: string, memberId: number, codeHash: string): Promise<boolean> {
    const row = await this.db
      .deleteFrom("recovery_codes")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("code_hash", "=", codeHash)
      .returning("code_hash")
      .executeTakeFirst();
    return row !== undefined;
  }

  /** One page of a tenant's members holding a sealed TOTP secret or pending secret (by id, after `afterId`). */
  async listSealedTotpSecrets(tenantId: string, afterId: number, limit: number): Promise<SealedTotpSecrets[]> {
    const rows = await this.db
      .selectFrom("members")
      .select(["id", "totp_secret_enc", "totp_pending_secret_enc"])
      .where("tenant_id", "=", tenantId)
      .where("id", ">", afterId)
      .where((eb) => eb.or([eb("totp_secret_enc", "is not", null), eb("totp_pending_secret_enc", "is not", null)]))
      .orderBy("id")
      .limit(limit)
      .execute();
    return rows.map((r) => ({ memberId: Number(r.id), secretEnc: r.totp_secret_enc, pendingSecretEnc: r.totp_pending_secret_enc }));
  }

  /**
   * Swaps one sealed secret only if it is still `from`: an enable or disable racing the reseal wins.
   * updated_at stays, and nothing else on the row (2FA state, sessions) is touched.
   */
  async replaceSealedTotpSecret(tenantId: string, memberId: number, which: "active" | "pending", from: string, to: string): Promise<boolean> {
    const column = which === "active" ? "totp_secret_enc" : "totp_pending_secret_enc";
    const result = await this.db
      .updateTable("members")
      .set({ [column]: to })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", memberId)
      .where(column, "=", from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
