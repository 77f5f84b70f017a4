import { sql, type ExpressionBuilder, type Kysely, type Selectable } from "kysely";
import { type DialectName, lockingRead } from "./dialects.js";
import type { Database, MembersTable } from "./schema.js";
import { MemberStatus, type AuthenticationType, type Member, type TwoFactorStatus } from "../model.js";

export interface NewMember {
  recordId: number;
  email: string;
  name: string;
  passwordHash: string | null;
  passwordSalt: string | null;
  authenticationType: AuthenticationType;
}

/** A new member row: what a registration, a federated sign-up and an import decide; every other column starts empty. */
export interface NewMemberRow {
  recordId: number;
  email: string;
  name: string;
  status: MemberStatus;
  passwordAuth: boolean;
  magicLinkAuth: boolean;
  passwordHash: string | null;
  passwordSalt: string | null;
  emailVerified: boolean;
  /** Sealed TOTP secret: the member starts with 2FA on (an import, decisions.md#importing-members). */
  totpSecretSealed?: string | null;
  /** contract.md#d25: counted from here when pending; absent, from `createdAt`. */
  pendingUntil?: number | null;
  externalId?: string | null;
  /** Absent: now. An import keeps the old system's. */
  createdAt?: number;
}

/**
 * The one insert of a member row (MemberStore.insertMember, ImportStore.insertMember): true when written,
 * false when the tenant has the email (or, rarely, the random record id) already; never overwrites.
 */
export async function insertMemberRow(db: Kysely<Database>, tenantId: string, member: NewMemberRow, now: number): Promise<boolean> {
  const twoFactor = member.totpSecretSealed != null;
  const result = await db
    .insertInto("members")
    .values({
      tenant_id: tenantId,
      id: member.recordId,
      email: member.email,
      name: member.name,
      status: member.status,
      has_password_auth: member.passwordAuth ? 1 : 0,
      has_magic_link_auth: member.magicLinkAuth ? 1 : 0,
      password_hash: member.passwordHash,
      password_salt: member.passwordSalt,
      email_verified: member.emailVerified ? 1 : 0,
      two_factor_status: twoFactor ? "Enabled" : "Disabled",
      totp_secret_enc: member.totpSecretSealed ?? null,
      two_factor_enabled_at: twoFactor ? now : null,
      two_factor_enabled_seq: twoFactor ? 0 : null,
      pending_until: member.pendingUntil ?? null,
      external_id: member.externalId ?? null,
      created_at: member.createdAt ?? now,
      updated_at: now,
    })
    .onConflict((oc) => oc.doNothing())
    .returning("id")
    .executeTakeFirst();
  return result !== undefined;
}

export interface Activation {
  name: string;
  passwordHash: string | null;
  passwordSalt: string | null;
  authenticationType: AuthenticationType;
}

/** What a state change was decided from (contract.md#d20). */
export interface MemberState {
  status: MemberStatus;
  passwordHash: string | null;
}

export interface PasswordUpdate {
  passwordHash: string;
  passwordSalt: string;
  status: MemberStatus;
  emailVerified: boolean;
}

/** contract.md#d22: what the admin sees of a member beyond what the flows decide on. */
export interface MemberProfile extends Member {
  createdAt: number;
  lastLoginAt: number | null;
  /** decisions.md#importing-members: the member's id in the system it was imported from; null for every other member. */
  externalId: string | null;
}

/** Filters of the admin's member list; `after` is the last member of the previous page. */
export interface MemberQuery {
  email?: string;
  emailPrefix?: string;
  status?: MemberStatus;
  after?: { createdAt: number; recordId: number };
}

function toProfile(row: Selectable<MembersTable>): MemberProfile {
  return {
    ...toMember(row),
    createdAt: Number(row.created_at),
    lastLoginAt: row.last_login_at === null ? null : Number(row.last_login_at),
    externalId: row.external_id,
  };
}

/** A LIKE pattern that matches `prefix` literally at the start (`%`, `_` and `\` escaped). */
/** contract.md#d25: pending, and its last link expired at or before `cutoff` (accounts pending before migration 0010: created before it). */
function expiredPending(eb: ExpressionBuilder<Database, "members">, cutoff: number) {
  return eb.and([
    eb("status", "=", MemberStatus.pending),
    eb.or([eb("pending_until", "<=", cutoff), eb.and([eb("pending_until", "is", null), eb("created_at", "<=", cutoff)])]),
  ]);
}

function prefixPattern(prefix: string): string {
  return prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + "%";
}

function toMember(row: Selectable<MembersTable>): Member {
  const types: AuthenticationType[] = [];
  if (row.has_password_auth) types.push("Password");
  if (row.has_magic_link_auth) types.push("Magic Link");
  if (row.has_federated_auth) types.push("Federated");
  return {
    tenantId: row.tenant_id,
    recordId: Number(row.id),
    email: row.email,
    name: row.name,
    status: row.status as MemberStatus,
    authenticationType: types,
    passwordHash: row.password_hash,
    emailVerified: row.email_verified === 1,
    twoFactorStatus: row.two_factor_status as TwoFactorStatus,
  };
}

/** Every method takes the tenant id and puts it in the WHERE clause: no query crosses tenants. */
export class MemberStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: DialectName,
  ) {}

  /** A registration's or a federated sign-up's pending member: no password of its own until its link is used (contract.md#d18). */
  async insertMember(tenantId: string, member: NewMember, now: number): Promise<boolean> {
    return insertMemberRow(
      this.db,
      tenantId,
      {
        recordId: member.recordId,
        email: member.email,
        name: member.name,
        status: MemberStatus.pending,
        passwordAuth: member.authenticationType === "Password",
        magicLinkAuth: member.authenticationType === "Magic Link",
        passwordHash: member.passwordHash,
        passwordSalt: member.passwordSalt,
        emailVerified: false,
      },
      now,
    );
  }

  /**
   * With `lock`, inside a transaction on PostgreSQL, the row stays locked until commit: issuers of
   * a token that voids earlier ones (contract.md#d7) run one after the other (contract.md#d20). SQLite serialises writers.
   */
  async findMemberByEmail(tenantId: string, email: string, options: { lock?: boolean } = {}): Promise<Member | undefined> {
    let query = this.db.selectFrom("members").selectAll().where("tenant_id", "=", tenantId).where("email", "=", email);
    if (options.lock) query = lockingRead(query, this.dialect);
    const row = await query.executeTakeFirst();
    return row && toMember(row);
  }

  /** With `lock`, inside a transaction on PostgreSQL, the row stays locked until commit (contract.md#d20). */
  async findMemberById(tenantId: string, recordId: number, options: { lock?: boolean } = {}): Promise<Member | undefined> {
    let query = this.db.selectFrom("members").selectAll().where("tenant_id", "=", tenantId).where("id", "=", recordId);
    if (options.lock) query = lockingRead(query, this.dialect);
    const row = await query.executeTakeFirst();
    return row && toMember(row);
  }

  async findMemberProfile(tenantId: string, recordId: number): Promise<MemberProfile | undefined> {
    const row = await this.db.selectFrom("members").selectAll().where("tenant_id", "=", tenantId).where("id", "=", recordId).executeTakeFirst();
    return row && toProfile(row);
  }

  /** contract.md#d22: newest first, `limit` rows after the cursor; uses the (tenant_id, created_at, id) index. */
  async listMembers(tenantId: string, query: MemberQuery, limit: number): Promise<MemberProfile[]> {
    let select = this.db.selectFrom("members").selectAll().where("tenant_id", "=", tenantId);
    if (query.email !== undefined) select = select.where("email", "=", query.email);
    if (query.emailPrefix !== undefined) select = select.where(sql<boolean>`email like ${prefixPattern(query.emailPrefix)} escape '\\'`);
    if (query.status !== undefined) select = select.where("status", "=", query.status);
    const after = query.after;
    if (after !== undefined) {
      select = select.where((eb) =>
        eb.or([eb("created_at", "<", after.createdAt), eb.and([eb("created_at", "=", after.createdAt), eb("id", "<", after.recordId)])]),
      );
    }
    const rows = await select.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).execute();
    return rows.map(toProfile);
  }

  /** contract.md#d22: when the member last logged in (any kind of login), written with the session. */
  async recordLogin(tenantId: string, recordId: number, now: number): Promise<void> {
    await this.db.updateTable("members").set({ last_login_at: now }).where("tenant_id", "=", tenantId).where("id", "=", recordId).execute();
  }

  /** contract.md#d25: a verification link was issued to the pending account; it is kept at least until `until` (+ retention). */
  async extendPending(tenantId: string, recordId: number, until: number): Promise<void> {
    await this.db
      .updateTable("members")
      .set({ pending_until: until })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("status", "=", MemberStatus.pending)
      .where((eb) => eb.or([eb("pending_until", "is", null), eb("pending_until", "<", until)]))
      .execute();
  }

  /** contract.md#d25: pending accounts whose last link expired at or before `cutoff`. */
  async listExpiredPending(cutoff: number, limit: number): Promise<{ tenantId: string; recordId: number }[]> {
    const rows = await this.db
      .selectFrom("members")
      .select(["tenant_id", "id"])
      .where((eb) => expiredPending(eb, cutoff))
      .limit(limit)
      .execute();
    return rows.map((r) => ({ tenantId: r.tenant_id, recordId: Number(r.id) }));
  }

  /** contract.md#d25: whether the account is still an expired pending one; with `lock`, its row stays locked (PostgreSQL). */
  async isExpiredPending(tenantId: string, recordId: number, cutoff: number, options: { lock?: boolean } = {}): Promise<boolean> {
    let query = this.db
      .selectFrom("members")
      .select("id")
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where((eb) => expiredPending(eb, cutoff));
    if (options.lock) query = lockingRead(query, this.dialect);
    return (await query.executeTakeFirst()) !== undefined;
  }

  /** contract.md#d24: the member's own name change. */
  async updateName(tenantId: string, recordId: number, name: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({ name, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * contract.md#d24: the confirmed new email, applied only while the row still has the email the change was
   * asked from; false when the new email is taken meanwhile (the unique index decides) or the row moved.
   */
  /**
   * contract.md#d30: the member's next `security_seq`, in one statement that takes the member's row lock (on
   * PostgreSQL; SQLite runs one writer): what orders "this wasn't me" links and 2FA enrolments.
   */
  async nextSecuritySeq(tenantId: string, recordId: number): Promise<number> {
    const row = await this.db
      .updateTable("members")
      .set((eb) => ({ security_seq: eb("security_seq", "+", 1) }))
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .returning("security_seq")
      .executeTakeFirstOrThrow();
    return Number(row.security_seq);
  }

  async updateEmail(tenantId: string, recordId: number, from: string, to: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({ email: to, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("email", "=", from)
      .where((eb) =>
        eb.not(eb.exists(eb.selectFrom("members as other").select("other.id").where("other.tenant_id", "=", tenantId).where("other.email", "=", to))),
      )
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** contract.md#d22 erasure; the caller deletes what is keyed to the member in the same transaction. */
  async deleteMember(tenantId: string, recordId: number): Promise<boolean> {
    const result = await this.db.deleteFrom("members").where("tenant_id", "=", tenantId).where("id", "=", recordId).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }

  /** contract.md#d20: applies only while the status is still the one the change was decided from. */
  async updateStatus(tenantId: string, recordId: number, from: MemberStatus, to: MemberStatus, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({ status: to, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("status", "=", from)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * contract.md#d18: using a verification link makes the pending account what the link's registration (or the
   * password chosen with a resend link) says, in one conditional update from the pending state.
   */
  async activatePendingMember(tenantId: string, recordId: number, fields: Activation, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({
        name: fields.name,
        password_hash: fields.passwordHash,
        password_salt: fields.passwordSalt,
        has_password_auth: fields.passwordHash === null ? 0 : 1,
        has_magic_link_auth: fields.authenticationType === "Magic Link" ? 1 : 0,
        email_verified: 1,
        status: "Unlocked",
        updated_at: now,
      })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("status", "=", "Email Verification Pending")
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** contract.md#d20: applies only while status and password are still those the change was decided from. */
  async updatePassword(tenantId: string, recordId: number, from: MemberState, update: PasswordUpdate, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({
        password_hash: update.passwordHash,
        password_salt: update.passwordSalt,
        has_password_auth: 1,
        status: update.status,
        email_verified: update.emailVerified ? 1 : 0,
        updated_at: now,
      })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("status", "=", from.status)
      .where((eb) => (from.passwordHash === null ? eb("password_hash", "is", null) : eb("password_hash", "=", from.passwordHash)))
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** contract.md#d8: a password member gains "Magic Link" on the first magic-link login. */
  async addMagicLinkAuthentication(tenantId: string, recordId: number, now: number): Promise<void> {
    await this.db
      .updateTable("members")
      .set({ has_magic_link_auth: 1, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("has_magic_link_auth", "=", 0)
      .execute();
  }

  /** decisions.md#federated-sign-in: `Federated` joins `authentication_type` on the first federated sign-in. */
  async addFederatedAuthentication(tenantId: string, recordId: number, now: number): Promise<void> {
    await this.db
      .updateTable("members")
      .set({ has_federated_auth: 1, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("has_federated_auth", "=", 0)
      .execute();
  }

  /** A rehash on login keeps the salt column in step with the PHC string's salt; it loses to any other password change. */
  async replacePasswordHash(tenantId: string, recordId: number, oldHash: string, passwordHash: string, passwordSalt: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable("members")
      .set({ password_hash: passwordHash, password_salt: passwordSalt, updated_at: now })
      .where("tenant_id", "=", tenantId)
      .where("id", "=", recordId)
      .where("password_hash", "=", oldHash)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }
}
