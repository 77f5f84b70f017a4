import type { ExpressionBuilder, Kysely } from "kysely";
import { type DialectName, lockingRead } from "./dialects.js";
import type { Database } from "./schema.js";
import type { TokenKind } from "../model.js";

/** The one row a link may use: its tenant, member, kind and hash, not expired. */
function liveToken(eb: ExpressionBuilder<Database, "one_time_tokens">, tenantId: string, memberId: number, kind: TokenKind, tokenHash: string, now: number) {
  return eb.and([
    eb("tenant_id", "=", tenantId),
    eb("token_hash", "=", tokenHash),
    eb("kind", "=", kind),
    eb("member_id", "=", memberId),
    eb("expires_at", ">", now),
  ]);
}

/** What a few kinds of token carry besides the hash. */
export interface TokenExtras {
  /** email_change and secure_account (contract.md#d24): the address the link confirms or restores. */
  newEmail?: string | null;
  /** magic_login (contract.md#d26): the keyed hash of the emailed code. */
  codeHash?: string | null;
  /** secure_account (contract.md#d30): the member's `security_seq` it was issued under. */
  seq?: number | null;
}

/** When a "this wasn't me" link was issued: its `security_seq` (null before migration 0015) and its time. */
export interface AlertOrder {
  seq: number | null;
  at: number;
}

/** One-time tokens, stored as SHA-256 only (contract.md#spec-2-3, contract.md#d7). */
export class TokenStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /**
   * Issuing voids earlier unused tokens of the same kind for the member (contract.md#d7). A verification link
   * of a registration is the exception (contract.md#d18): a resend voids only earlier resends.
   */
  async replaceToken(
    tenantId: string,
    memberId: number,
    kind: TokenKind,
    tokenHash: string,
    now: number,
    expiresAt: number,
    extras: TokenExtras = {},
  ): Promise<void> {
    let voided = this.db.deleteFrom("one_time_tokens").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).where("kind", "=", kind);
    if (kind === "verify_email") voided = voided.where("registration_id", "is", null);
    await voided.execute();
    await this.insertToken(tenantId, memberId, kind, tokenHash, now, expiresAt, null, extras);
  }

  /** Adds a token beside the member's others: a registration's own verification link (contract.md#d18). */
  async insertToken(
    tenantId: string,
    memberId: number,
    kind: TokenKind,
    tokenHash: string,
    now: number,
    expiresAt: number,
    registrationId: string | null,
    extras: TokenExtras = {},
  ): Promise<void> {
    await this.db
      .insertInto("one_time_tokens")
      .values({
        tenant_id: tenantId,
        token_hash: tokenHash,
        kind,
        member_id: memberId,
        created_at: now,
        expires_at: expiresAt,
        registration_id: registrationId,
        new_email: extras.newEmail ?? null,
        code_hash: extras.codeHash ?? null,
        seq: extras.seq ?? null,
      })
      .execute();
  }

  /** contract.md#d26: the member's live magic link with its code's hash, read without a lock (a wrong code writes nothing here). */
  async findLoginCode(tenantId: string, memberId: number, now: number): Promise<{ tokenHash: string; codeHash: string } | undefined> {
    const row = await this.db
      .selectFrom("one_time_tokens")
      .select(["token_hash", "code_hash"])
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("kind", "=", "magic_login")
      .where("expires_at", ">", now)
      .where("code_hash", "is not", null)
      .executeTakeFirst();
    return row && { tokenHash: row.token_hash, codeHash: row.code_hash! };
  }

  /**
   * contract.md#d24: uses an email change link (or a "this wasn't me" link) up in one statement, returning the
   * address it carries (the new email to confirm, or the old one to restore; null when none) and
   * when it was issued.
   */
  async consumeTokenWithEmail(
    tenantId: string,
    memberId: number,
    kind: "email_change" | "secure_account",
    tokenHash: string,
    now: number,
  ): Promise<{ email: string | null; issued: AlertOrder } | undefined> {
    const row = await this.db
      .deleteFrom("one_time_tokens")
      .where((eb) => liveToken(eb, tenantId, memberId, kind, tokenHash, now))
      .returning(["new_email", "created_at", "seq"])
      .executeTakeFirst();
    return row && { email: row.new_email, issued: { seq: row.seq === null ? null : Number(row.seq), at: Number(row.created_at) } };
  }

  /** Peeks at a verification link: undefined when not valid, else the registration it confirms (null for a resend). */
  async findVerificationToken(tenantId: string, memberId: number, tokenHash: string, now: number): Promise<{ registrationId: string | null } | undefined> {
    const row = await this.db
      .selectFrom("one_time_tokens")
      .select("registration_id")
      .where((eb) => liveToken(eb, tenantId, memberId, "verify_email", tokenHash, now))
      .executeTakeFirst();
    return row && { registrationId: row.registration_id };
  }

  /** Uses a verification link up in one statement, returning the registration it was bound to. */
  async consumeVerificationToken(tenantId: string, memberId: number, tokenHash: string, now: number): Promise<{ registrationId: string | null } | undefined> {
    const row = await this.db
      .deleteFrom("one_time_tokens")
      .where((eb) => liveToken(eb, tenantId, memberId, "verify_email", tokenHash, now))
      .returning("registration_id")
      .executeTakeFirst();
    return row && { registrationId: row.registration_id };
  }

  /**
   * Looks without using it up, so a failed attempt leaves the token valid (contract.md#d15). With `lock`, inside
   * a transaction, the row stays locked until commit on PostgreSQL (SQLite serialises writers).
   */
  async isTokenValid(tenantId: string, memberId: number, kind: TokenKind, tokenHash: string, now: number, options: { lock?: boolean } = {}): Promise<boolean> {
    let query = this.db
      .selectFrom("one_time_tokens")
      .select("member_id")
      .where((eb) => liveToken(eb, tenantId, memberId, kind, tokenHash, now));
    if (options.lock) query = lockingRead(query, this.dialect);
    return (await query.executeTakeFirst()) !== undefined;
  }

  /**
   * Uses the token up in one statement: of two concurrent consumers exactly one gets a row back.
   * The lookup is by hash, so no timing of a string compare reaches the attacker.
   */
  async consumeToken(tenantId: string, memberId: number, kind: TokenKind, tokenHash: string, now: number): Promise<boolean> {
    const row = await this.db
      .deleteFrom("one_time_tokens")
      .where((eb) => liveToken(eb, tenantId, memberId, kind, tokenHash, now))
      .returning("member_id")
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Every token of the member (an admin lock, an erasure), or those of one kind. */
  async deleteMemberTokens(tenantId: string, memberId: number, kind?: TokenKind): Promise<void> {
    let query = this.db.deleteFrom("one_time_tokens").where("tenant_id", "=", tenantId).where("member_id", "=", memberId);
    if (kind !== undefined) query = query.where("kind", "=", kind);
    await query.execute();
  }

  /**
   * Voids the member's links after a password or email change or "this wasn't me", but not their
   * "this wasn't me" links (contract.md#d24, contract.md#d30): those are how a member undoes exactly such a change made by
   * someone else, so nothing an intruder does may void them (their own alert links included).
   */
  async deleteMemberLinks(tenantId: string, memberId: number): Promise<void> {
    await this.db
      .deleteFrom("one_time_tokens")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("kind", "!=", "secure_account")
      .execute();
  }

  /**
   * contract.md#d30: after "this wasn't me" gave an address back, the member's other "this wasn't me" links
   * issued after the one used are void: they went to the addresses the restore just replaced, and
   * the restore is final (their holder must neither move the address again nor keep locking the
   * owner out, turning off the owner's new 2FA and passkeys). Links issued before it stay: they
   * lead further back, to addresses the account had earlier. Ordered by `seq`; a link from before
   * migration 0015 (no seq) is older than every link that has one, and those are ordered by time.
   */
  async voidAlertLinksIssuedAfter(tenantId: string, memberId: number, issued: AlertOrder): Promise<void> {
    await this.db
      .deleteFrom("one_time_tokens")
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("kind", "=", "secure_account")
      .where((eb) => (issued.seq !== null ? eb("seq", ">", issued.seq) : eb.or([eb("seq", "is not", null), eb("created_at", ">=", issued.at)])))
      .execute();
  }

  async deleteExpiredTokens(now: number): Promise<void> {
    await this.db.deleteFrom("one_time_tokens").where("expires_at", "<=", now).execute();
  }
}
