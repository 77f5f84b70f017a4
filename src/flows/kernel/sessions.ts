/** Sessions (contract.md#spec-2-2, contract.md#d6): creation after login, the session check, logout. */
import { randomToken } from "../../core/random.js";
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { MemberStatus, type Member, type RequestContext, type Tenant } from "../../model.js";
import { sha256Hex } from "../../security/hashing.js";
import type { Store } from "../../store/index.js";
import { LAST_SEEN_RESOLUTION_MS, SESSION_USER_AGENT_MAX_LENGTH, sessionTiers } from "../../rules.js";
import { enqueueMemberEvent } from "./member-events.js";

/** The session data of contract.md#spec-2-2. */
export interface SessionData {
  recordId: string;
  hostname: string;
  iat: number;
  exp: number;
  is2FAEnabled: boolean;
  require2FASetup: boolean;
  passwordChangePending: boolean;
  loginContext: null;
  attemptedPath: null;
}

export interface IssuedSession {
  /** The cookie value: returned once, stored only as its SHA-256. */
  sessionId: string;
  maxAgeSeconds: number;
}

export interface ActiveSession {
  data: SessionData;
  memberId: number;
  idHash: string;
  /** Milliseconds; contract.md#d24 lets a member without a password re-authenticate with a young session. */
  createdAt: number;
  /** decisions.md#authentication-methods: how the session was opened (RFC 8176 values). */
  amr: string[];
}

/**
 * decisions.md#authentication-methods: the methods a session records, RFC 8176 values plus `email`
 * (a magic link or its emailed code: RFC 8176 has no value for it, and its `otp` means an
 * authenticator's code). The ID tokens and session tokens of the session carry exactly these.
 */
export type AuthenticationMethod = "pwd" | "otp" | "mfa" | "hwk" | "fed" | "email";

/** A passkey: possession of the authenticator and its user verification, two factors in one (contract.md#d26). */
export const PASSKEY_AMR: readonly AuthenticationMethod[] = ["hwk", "mfa"];

/**
 * The methods of a session opened by `first` (a password, an email link or code, a federated
 * provider), followed by the TOTP or recovery code of the member's 2FA when it was asked for.
 */
export function sessionAmr(first: "pwd" | "email" | "fed", secondFactor: boolean): AuthenticationMethod[] {
  return secondFactor ? [first, "otp", "mfa"] : [first];
}

export function sessionTtlSeconds(tenant: Tenant): number {
  return sessionTiers[tenant.settings.sessionTier] ?? sessionTiers["1d"];
}

export async function createSession(
  tx: Store,
  deps: TransactionDeps,
  tenant: Tenant,
  recordId: number,
  context: RequestContext,
  now: number,
  // Required: every place that opens a session says how (decisions.md#authentication-methods).
  options: { amr: readonly AuthenticationMethod[]; byPasskey?: boolean },
): Promise<IssuedSession> {
  const sessionId = randomToken(deps.random, 32);
  const maxAgeSeconds = sessionTtlSeconds(tenant);
  const origin = {
    publicId: randomToken(deps.random, 16),
    ip: context.ip,
    userAgent: context.userAgent?.slice(0, SESSION_USER_AGENT_MAX_LENGTH) ?? null,
    country: deps.geo.locate(context.ip).country ?? null,
    byPasskey: options.byPasskey === true,
    amr: [...options.amr],
  };
  await tx.sessions.insertSession(tenant.id, sha256Hex(sessionId), recordId, origin, now, now + maxAgeSeconds * 1000);
  await tx.members.recordLogin(tenant.id, recordId, now);
  // contract.md#d25: the public id, never the cookie; the caller wakes the dispatcher after its commit.
  await enqueueMemberEvent(tx, deps, tenant, "session.created", recordId, { session: origin.publicId }, now);
  return { sessionId, maxAgeSeconds };
}

/**
 * One indexed lookup; a session of another tenant is simply not found (contract.md#d6). `last_seen_at` moves
 * when it is a minute old or more (contract.md#d24), written behind with other sessions' (store/session-touches.ts).
 */
export async function findActiveSession(deps: Deps, tenant: Tenant, sessionId: string | undefined): Promise<ActiveSession | undefined> {
  if (!sessionId) return undefined;
  const idHash = sha256Hex(sessionId);
  const now = deps.clock.now();
  const record = await deps.store.sessions.findLiveSession(tenant.id, idHash, now);
  if (!record || record.memberStatus === MemberStatus.locked) return undefined;
  if (now - record.lastSeenAt >= LAST_SEEN_RESOLUTION_MS) deps.store.sessions.touchSession(tenant.id, idHash, now);
  const is2FAEnabled = record.twoFactorStatus === "Enabled";
  return {
    memberId: record.memberId,
    idHash,
    createdAt: record.createdAt,
    amr: record.amr,
    data: {
      recordId: String(record.memberId),
      hostname: tenant.domain,
      iat: Math.floor(record.createdAt / 1000),
      exp: Math.floor(record.expiresAt / 1000),
      is2FAEnabled,
      // contract.md#d26: a passkey is a second factor in itself (possession and user verification).
      require2FASetup: tenant.settings.require2FA && !is2FAEnabled && !record.byPasskey,
      passwordChangePending: record.memberStatus === MemberStatus.passwordChangePending,
      loginContext: null,
      attemptedPath: null,
    },
  };
}

/**
 * decisions.md#held-back-sessions: a live session whose member must first change the password (Password Change Pending)
 * or turn on the tenant's required 2FA. The tenant's pages hold it back; nothing that leaves Latch (a session token, an
 * OpenID code) is issued for it, as the party that gets it never sees those flags.
 */
export function isHeldBack(session: Pick<ActiveSession, "data">): boolean {
  return session.data.passwordChangePending || session.data.require2FASetup;
}

/** The member of a live session, read without a lock; 401 if the member is gone meanwhile. */
export async function findSessionMember(deps: Deps, tenant: Tenant, session: ActiveSession): Promise<Member> {
  const member = await deps.store.members.findMemberById(tenant.id, session.memberId);
  if (!member) throw new AuthError("unauthorized");
  return member;
}

export async function logout(deps: Deps, tenant: Tenant, sessionId: string | undefined): Promise<void> {
  const session = await findActiveSession(deps, tenant, sessionId);
  if (!session) return;
  const now = deps.clock.now();
  await deps.store.transaction(async (tx) => {
    await tx.sessions.deleteSession(tenant.id, session.idHash);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: session.memberId, type: "logout", ip: null, userAgent: null }, now);
  });
}
