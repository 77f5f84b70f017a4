import type { Kysely } from "kysely";
import type { Database } from "./schema.js";
import type { AuthenticationType } from "../model.js";

/** contract.md#d18: what one registration of a pending account would make of it once its link is used. */
export interface Registration {
  id: string;
  memberId: number;
  name: string;
  authenticationType: AuthenticationType;
  passwordHash: string | null;
  passwordSalt: string | null;
  createdAt: number;
}

export interface NewRegistration extends Omit<Registration, "createdAt"> {
  expiresAt: number;
}

/** Registrations of pending accounts (contract.md#d18); every query is scoped by tenant. */
export class RegistrationStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertRegistration(tenantId: string, registration: NewRegistration, now: number): Promise<void> {
    await this.db
      .insertInto("registrations")
      .values({
        tenant_id: tenantId,
        id: registration.id,
        member_id: registration.memberId,
        name: registration.name,
        authentication_type: registration.authenticationType,
        password_hash: registration.passwordHash,
        password_salt: registration.passwordSalt,
        created_at: now,
        expires_at: registration.expiresAt,
      })
      .execute();
  }

  async findRegistration(tenantId: string, memberId: number, id: string): Promise<Registration | undefined> {
    const row = await this.db
      .selectFrom("registrations")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .where("id", "=", id)
      .executeTakeFirst();
    return row && toRegistration(row);
  }

  /**
   * The newest registration, its link expired or not: the one whose password a login to a pending
   * account is checked against, so a member who waited too long still hears email_not_verified.
   */
  async findNewestRegistration(tenantId: string, memberId: number): Promise<Registration | undefined> {
    const row = await this.db
      .selectFrom("registrations")
      .selectAll()
      .where("tenant_id", "=", tenantId)
      .where("member_id", "=", memberId)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc")
      .limit(1)
      .executeTakeFirst();
    return row && toRegistration(row);
  }

  async deleteMemberRegistrations(tenantId: string, memberId: number): Promise<void> {
    await this.db.deleteFrom("registrations").where("tenant_id", "=", tenantId).where("member_id", "=", memberId).execute();
  }

  /** Registrations whose link expired before `cutoff`, and at once the ones written for no member (contract.md#d19). */
  async deleteExpiredRegistrations(cutoff: number): Promise<void> {
    await this.db
      .deleteFrom("registrations")
      .where((eb) => eb.or([eb("expires_at", "<=", cutoff), eb("member_id", "=", 0)]))
      .execute();
  }
}

function toRegistration(row: {
  id: string;
  member_id: number;
  name: string;
  authentication_type: string;
  password_hash: string | null;
  password_salt: string | null;
  created_at: number;
}): Registration {
  return {
    id: row.id,
    memberId: Number(row.member_id),
    name: row.name,
    authenticationType: row.authentication_type as AuthenticationType,
    passwordHash: row.password_hash,
    passwordSalt: row.password_salt,
    createdAt: Number(row.created_at),
  };
}
