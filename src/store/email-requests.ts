import type { Kysely, Selectable } from "kysely";
import type { Database, EmailRequestsTable } from "./schema.js";
import type { AuthenticationType } from "../model.js";

/** contract.md#d19: the four public requests that may send an email. */
export type EmailRequestKind = "registration" | "verification_resend" | "password_reset" | "magic_link";

export interface EmailRequest {
  id: string;
  tenantId: string;
  kind: EmailRequestKind;
  email: string;
  ip: string | null;
  userAgent: string | null;
  createdAt: number;
  /** Registrations only: the record id answered, and what the registration asks for. */
  registration?: { recordId: number; name: string; authenticationType: AuthenticationType; passwordHash: string | null; passwordSalt: string | null };
}

export type NewEmailRequest = Omit<EmailRequest, "createdAt">;

function toEmailRequest(row: Selectable<EmailRequestsTable>): EmailRequest {
  const request: EmailRequest = {
    id: row.id,
    tenantId: row.tenant_id,
    kind: row.kind as EmailRequestKind,
    email: row.email,
    ip: row.ip,
    userAgent: row.user_agent,
    createdAt: Number(row.created_at),
  };
  if (row.record_id !== null) {
    request.registration = {
      recordId: Number(row.record_id),
      name: row.name ?? "",
      authenticationType: (row.authentication_type ?? "Password") as AuthenticationType,
      passwordHash: row.password_hash,
      passwordSalt: row.password_salt,
    };
  }
  return request;
}

/** The durable queue of contract.md#d19: one row per call, whatever the email; deleted by the worker that handles it. */
export class EmailRequestStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insertEmailRequest(request: NewEmailRequest, now: number): Promise<void> {
    const registration = request.registration;
    await this.db
      .insertInto("email_requests")
      .values({
        id: request.id,
        tenant_id: request.tenantId,
        kind: request.kind,
        email: request.email,
        record_id: registration?.recordId ?? null,
        name: registration?.name ?? null,
        authentication_type: registration?.authenticationType ?? null,
        password_hash: registration?.passwordHash ?? null,
        password_salt: registration?.passwordSalt ?? null,
        ip: request.ip,
        user_agent: request.userAgent?.slice(0, 512) ?? null,
        created_at: now,
      })
      .execute();
  }

  /** The oldest waiting ids, for the worker to claim one at a time. */
  async listWaitingIds(limit: number): Promise<string[]> {
    const rows = await this.db.selectFrom("email_requests").select("id").orderBy("created_at").orderBy("id").limit(limit).execute();
    return rows.map((r) => r.id);
  }

  /** Deletes and returns the row: of two workers (two instances) exactly one gets it. */
  async claimEmailRequest(id: string): Promise<EmailRequest | undefined> {
    const row = await this.db.deleteFrom("email_requests").where("id", "=", id).returningAll().executeTakeFirst();
    return row && toEmailRequest(row);
  }

  /**
   * contract.md#d22 erasure: link requests still waiting for the member's email go with the member. A waiting
   * registration stays: it is someone's new sign-up, answered 200, and makes a new pending account
   * once the member is gone (contract.md#d19: no answered email request is lost).
   */
  async deleteRequestsForEmail(tenantId: string, email: string): Promise<void> {
    await this.db.deleteFrom("email_requests").where("tenant_id", "=", tenantId).where("email", "=", email).where("kind", "!=", "registration").execute();
  }

  async countWaiting(): Promise<number> {
    const row = await this.db
      .selectFrom("email_requests")
      .select((eb) => eb.fn.countAll().as("n"))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }
}
