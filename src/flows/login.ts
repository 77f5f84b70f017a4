/**
 * Password login (spec 4.2). Order: bot check, lockout and velocity, password, then account
 * status (D4's deliberate deviation: status is revealed only to someone who knows the password),
 * then the second factor, then the session.
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { MemberStatus, type RequestContext, type Tenant } from "../model.js";
import { normalizeEmail } from "../security/identity.js";
import { lockoutRemainingMs, recordFailedLogin } from "../security/lockout.js";
import { normalizePassword } from "../security/password.js";
import { distinctIpRules, VELOCITY_LOCKOUT_MS } from "../security/rate-limit.js";
import { countDistinctIps, verifyBotChallenge } from "./guards.js";
import { hashNewPassword } from "./passwords.js";
import { createSession, type IssuedSession } from "./sessions.js";

export const TWO_FACTOR_REQUIRED_MESSAGE = "Enter the code from your authenticator app or a recovery code.";
const LOCKED_OUT_MESSAGE = "Too many failed attempts. Please try again later.";

export interface PasswordLoginInput {
  email: string;
  password: string;
  twoFACode: string | undefined;
  botToken: string | undefined;
}

export type LoginResult =
  | { authorized: true; recordid: string; redirectUrl: string; session: IssuedSession }
  | { authorized: false; twoFactorRequired: true; message: string };

export async function loginWithPassword(deps: Deps, tenant: Tenant, input: PasswordLoginInput, context: RequestContext): Promise<LoginResult> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  const { distinctIps } = await reservePasswordAttempt(deps, tenant, email, context, now, { trackVelocity: true });

  const member = await deps.store.members.findMemberByEmail(tenant.id, email);
  if (member && distinctIps >= distinctIpRules.suspiciousLoginIps.threshold) {
    await deps.store.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "suspicious_login_velocity", ip: context.ip, userAgent: context.userAgent, details: { distinctIps } }, now);
  }
  const password = normalizePassword(input.password);
  const matched = member?.passwordHash
    ? await deps.hasher.verifyPassword(member.passwordHash, password)
    : await deps.hasher.verifyAgainstDummy(password).then(() => false);
  if (!member || !matched) {
    if (member) await deps.store.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "login_failed", ip: context.ip, userAgent: context.userAgent, details: { reason: "password" } }, now);
    throw new AuthError("invalid_credentials");
  }
  await deps.store.limits.clearLockout(tenant.id, email);

  if (member.status === MemberStatus.locked) throw new AuthError("account_locked");
  if (member.status === MemberStatus.pending) throw new AuthError("email_not_verified");
  if (member.status === MemberStatus.passwordChangePending) throw new AuthError("password_change_required");

  if (member.twoFactorStatus === "Enabled") {
    if (!input.twoFACode) return { authorized: false, twoFactorRequired: true, message: TWO_FACTOR_REQUIRED_MESSAGE };
    // TODO(issue 3): verify TOTP or recovery code here (spec 4.2 step 7). Until enrolment exists
    // no member can reach this branch; refusing keeps it closed rather than open.
    throw new AuthError("invalid_2fa_code");
  }

  if (deps.hasher.needsRehash(member.passwordHash!)) await rehashPassword(deps, tenant, member.recordId, password, now);
  const session = await deps.store.transaction(async (tx) => {
    const issued = await createSession(tx, deps, tenant, member.recordId, now);
    await tx.audit.insertAuditEvent(tenant.id, { memberId: member.recordId, type: "login_succeeded", ip: context.ip, userAgent: context.userAgent, details: { method: "password" } }, now);
    return issued;
  });
  return { authorized: true, recordid: String(member.recordId), redirectUrl: tenant.settings.loginSuccessRedirect, session };
}

type AttemptDecision = { refusedForMs: number; velocityLockout: boolean; distinctIps: number };

/**
 * Gate for any password check, keyed by email so an unknown email locks out like a known one.
 * The attempt is counted as failed BEFORE the slow hash and cleared on success: otherwise a burst
 * of concurrent guesses would all pass the gate before the first failure was written (D13).
 * Refused attempts neither count nor extend a lockout. Login also tracks distinct IPs (8.2).
 */
export async function reservePasswordAttempt(deps: Deps, tenant: Tenant, email: string, context: RequestContext, now: number, options: { trackVelocity: boolean }): Promise<{ distinctIps: number }> {
  const decision = await deps.store.transaction(async (tx): Promise<AttemptDecision> => {
    const state = await tx.limits.findLockout(tenant.id, email);
    const remaining = lockoutRemainingMs(state, now);
    if (remaining > 0) return { refusedForMs: remaining, velocityLockout: false, distinctIps: 0 };
    const distinctIps = options.trackVelocity ? await countDistinctIps(tx, tenant, distinctIpRules.lockingLoginIps, email, context.ip, now) : 0;
    if (distinctIps >= distinctIpRules.lockingLoginIps.threshold) {
      const current = state ?? { failures: 0, level: 0, lockedUntil: 0 };
      await tx.limits.saveLockout(tenant.id, email, { ...current, lockedUntil: now + VELOCITY_LOCKOUT_MS }, now);
      return { refusedForMs: VELOCITY_LOCKOUT_MS, velocityLockout: true, distinctIps };
    }
    await tx.limits.saveLockout(tenant.id, email, recordFailedLogin(state, now), now);
    return { refusedForMs: 0, velocityLockout: false, distinctIps };
  });
  if (decision.velocityLockout) deps.log.warn({ tenantId: tenant.id, distinctIps: decision.distinctIps }, "login velocity lockout: too many IPs for one account");
  else if (decision.distinctIps >= distinctIpRules.suspiciousLoginIps.threshold) deps.log.warn({ tenantId: tenant.id, distinctIps: decision.distinctIps }, "suspicious_login_velocity");
  if (decision.refusedForMs > 0) {
    throw new AuthError("rate_limited", { message: LOCKED_OUT_MESSAGE, retryAfterSeconds: Math.ceil(decision.refusedForMs / 1000) });
  }
  return { distinctIps: decision.distinctIps };
}

/** D12: parameters live in the hash; a login with outdated ones stores a fresh hash. */
async function rehashPassword(deps: Deps, tenant: Tenant, recordId: number, password: string, now: number): Promise<void> {
  const { passwordHash, passwordSalt } = await hashNewPassword(deps, password);
  await deps.store.members.replacePasswordHash(tenant.id, recordId, passwordHash, passwordSalt, now);
}
