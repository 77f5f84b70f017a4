/** Sessions (spec 2.2, D6): creation after login, the session check, logout. */
import { randomToken } from "../core/random.js";
import type { Deps } from "../deps.js";
import { MemberStatus, sessionTiers, type Tenant } from "../model.js";
import { sha256Hex } from "../security/hashing.js";
import type { Store } from "../store/index.js";

/** The session data of spec 2.2. */
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
}

export function sessionTtlSeconds(tenant: Tenant): number {
  return sessionTiers[tenant.settings.sessionTier] ?? sessionTiers["1d"];
}

export async function createSession(tx: Store, deps: Deps, tenant: Tenant, recordId: number, now: number): Promise<IssuedSession> {
  const sessionId = randomToken(deps.random, 32);
  const maxAgeSeconds = sessionTtlSeconds(tenant);
  await tx.sessions.insertSession(tenant.id, sha256Hex(sessionId), recordId, now, now + maxAgeSeconds * 1000);
  await tx.members.recordLogin(tenant.id, recordId, now);
  return { sessionId, maxAgeSeconds };
}

/** One indexed lookup; a session of another tenant is simply not found (D6). */
export async function findActiveSession(deps: Deps, tenant: Tenant, sessionId: string | undefined): Promise<ActiveSession | undefined> {
  if (!sessionId) return undefined;
  const idHash = sha256Hex(sessionId);
  const record = await deps.store.sessions.findLiveSession(tenant.id, idHash, deps.clock.now());
  if (!record || record.memberStatus === MemberStatus.locked) return undefined;
  const is2FAEnabled = record.twoFactorStatus === "Enabled";
  return {
    memberId: record.memberId,
    idHash,
    data: {
      recordId: String(record.memberId),
      hostname: tenant.domain,
      iat: Math.floor(record.createdAt / 1000),
      exp: Math.floor(record.expiresAt / 1000),
      is2FAEnabled,
      require2FASetup: tenant.settings.require2FA && !is2FAEnabled,
      passwordChangePending: record.memberStatus === MemberStatus.passwordChangePending,
      loginContext: null,
      attemptedPath: null,
    },
  };
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
