/**
 * The gate in front of every password check (login, change-password, disabling 2FA): the
 * progressive lockout of D13 and, for login, the distinct-IP velocity rows of spec 8.2.
 */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { RequestContext, Tenant } from "../model.js";
import { lockoutRemainingMs, recordFailedLogin } from "../security/lockout.js";
import { distinctIpRules, VELOCITY_LOCKOUT_MS } from "../security/rate-limit.js";
import { countDistinctIps } from "./guards.js";

const LOCKED_OUT_MESSAGE = "Too many failed attempts. Please try again later.";

type AttemptDecision = { refusedForMs: number; velocityLockout: boolean; distinctIps: number; locksOnFailure: boolean };

/** A reserved password check: how many IPs tried the email, and whether a failure locks it. */
export interface PasswordAttempt {
  distinctIps: number;
  /** This attempt's reservation starts a lockout unless its password turns out right. */
  locksOnFailure: boolean;
}

/**
 * The reserved attempt's password was wrong, so the reservation stands. Only the metrics need to
 * hear it: counting the lockout at the reservation would count members whose third try was right.
 */
export function countFailedPasswordAttempt(deps: Deps, attempt: PasswordAttempt): void {
  if (attempt.locksOnFailure) deps.metrics.lockoutStarted("password");
}

/**
 * Gate for any password check, keyed by email so an unknown email locks out like a known one.
 * The attempt is counted as failed BEFORE the slow hash and cleared on success: otherwise a burst
 * of concurrent guesses would all pass the gate before the first failure was written (D13).
 * Refused attempts neither count nor extend a lockout. Login also tracks distinct IPs (8.2).
 */
export async function reservePasswordAttempt(deps: Deps, tenant: Tenant, email: string, context: RequestContext, now: number, options: { trackVelocity: boolean }): Promise<PasswordAttempt> {
  // With Redis the distinct-IP set is counted before the transaction: no network call may hold
  // the lockout row's lock. In the SQL store it is counted inside, which saves a commit (an fsync
  // on SQLite) per attempt. Either way an attempt refused by a running lockout records its IP.
  const counted = options.trackVelocity && deps.redis ? await countDistinctIps(deps.counters, tenant, distinctIpRules.lockingLoginIps, email, context.ip, now) : undefined;
  const decision = await deps.store.transaction(async (tx): Promise<AttemptDecision> => {
    const distinctIps = counted ?? (options.trackVelocity ? await countDistinctIps(tx.limits, tenant, distinctIpRules.lockingLoginIps, email, context.ip, now) : 0);
    const state = await tx.limits.lockLockout(tenant.id, email, now);
    const remaining = lockoutRemainingMs(state, now);
    if (remaining > 0) return { refusedForMs: remaining, velocityLockout: false, distinctIps, locksOnFailure: false };
    if (distinctIps >= distinctIpRules.lockingLoginIps.threshold) {
      await tx.limits.saveLockout(tenant.id, email, { ...state, lockedUntil: now + VELOCITY_LOCKOUT_MS }, now);
      return { refusedForMs: VELOCITY_LOCKOUT_MS, velocityLockout: true, distinctIps, locksOnFailure: false };
    }
    const reserved = recordFailedLogin(state, now);
    await tx.limits.saveLockout(tenant.id, email, reserved, now);
    return { refusedForMs: 0, velocityLockout: false, distinctIps, locksOnFailure: lockoutRemainingMs(reserved, now) > 0 };
  });
  if (decision.velocityLockout) {
    deps.metrics.lockoutStarted("velocity");
    deps.log.warn({ tenantId: tenant.id, distinctIps: decision.distinctIps }, "login velocity lockout: too many IPs for one account");
  } else if (decision.distinctIps >= distinctIpRules.suspiciousLoginIps.threshold) deps.log.warn({ tenantId: tenant.id, distinctIps: decision.distinctIps }, "suspicious_login_velocity");
  if (decision.refusedForMs > 0) {
    throw new AuthError("rate_limited", { message: LOCKED_OUT_MESSAGE, retryAfterSeconds: Math.ceil(decision.refusedForMs / 1000), logFields: { lockout: decision.velocityLockout ? "velocity" : "password" } });
  }
  return { distinctIps: decision.distinctIps, locksOnFailure: decision.locksOnFailure };
}
