/** A member as the API shows it (contract.md#spec-1 field names): the admin's views (contract.md#d22) and `/auth/me` (contract.md#d24). */
import { toTimestamp } from "../../core/schema.js";
import type { Member, MemberStatus } from "../../model.js";
import type { MemberProfile } from "../../store/members.js";
import type { SessionSummary } from "../../store/sessions.js";

export interface MemberView {
  recordid: string;
  email: string;
  name: string;
  authentication_status: MemberStatus;
  authentication_type: Member["authenticationType"];
  _2fa_status: Member["twoFactorStatus"];
  createdAt: string;
  lastLoginAt: string | null;
  /** The member's id in the system they were imported from (decisions.md#importing-members); null otherwise. */
  externalId: string | null;
}

/** A time of the store as answers show it (docs/api-conventions.md#times). */
export function iso(time: number): string {
  return toTimestamp(time);
}

export function memberView(member: MemberProfile): MemberView {
  return {
    recordid: String(member.recordId),
    email: member.email,
    name: member.name,
    authentication_status: member.status,
    authentication_type: member.authenticationType,
    _2fa_status: member.twoFactorStatus,
    createdAt: iso(member.createdAt),
    lastLoginAt: member.lastLoginAt === null ? null : iso(member.lastLoginAt),
    externalId: member.externalId,
  };
}

/** A session as the API shows it, to its member (`/auth/sessions`) and to the admin's export (contract.md#d22). */
export interface SessionView {
  createdAt: string;
  lastSeenAt: string;
  expiresAt: string;
  ip: string | null;
  userAgent: string | null;
  country: string | null;
}

export function sessionView(session: SessionSummary): SessionView {
  return {
    createdAt: iso(session.createdAt),
    lastSeenAt: iso(session.lastSeenAt),
    expiresAt: iso(session.expiresAt),
    ip: session.ip,
    userAgent: session.userAgent,
    country: session.country,
  };
}
