/**
 * The gate in front of every password check (login, change-password, disabling 2FA): the
 * progressive lockout of D13 and, for login, the distinct-IP velocity rows of spec 8.2.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { RequestContext, Tenant } from "../model.js";
import { finishFailedCheck, lockoutRemainingMs, noLockout, startPasswordCheck } from "../security/lockout.js";
import { distinctIpRules, VELOCITY_LOCKOUT_MS } from "../rules.js";
import type { Store } from "../store/index.js";
import { normalizePassword } from "../security/password.js";
import { countDistinctIps } from "./guards.js";

const LOCKED_OUT_MESSAGE = "Too many failed attempts. Please try again later.";
/** A check waiting for a place in the budget asks again this often, this many times (about 5 s). */
const WAIT_STEP_MS = 25;
const WAIT_ROUNDS = 200;
/** Checks of one email that may wait at once in this process; more are refused at once (429). */
const MAX_WAITING_PER_EMAIL = 8;
const waitingChecks = new Map<string, number>();

type GateDecision =
  | { kind: "refused"; refusedForMs: number; velocityLockout: boolean; distinctIps: number }
  | { kind: "wait"; distinctIps: number }
  | { kind: "start"; distinctIps: number };

/** A started password check: its email's lockout row holds a place for it until it is finished. */
export interface PasswordAttempt {
  email: string;
  /** How many IPs tried the email recently (login only). */
  distinctIps: number;
  /** The place was turned into a failure or cleared with the lockout; otherwise it is given back. */
  settled: boolean;
}

/**
 * Gate for any password check, keyed by email so an unknown email locks out like a known one.
 * The check takes a place in the lockout budget before the slow hash (D13: a burst of concurrent
 * guesses can't all pass the gate before the first failure is written); a wrong password turns
 * the place into a failure, a right one clears the row (D20: a correct password never counts as a
 * failure, so N concurrent correct logins all succeed). With the budget taken by checks in flight
 * a new one waits for a place. Refused attempts neither count nor extend a lockout.
 */
export async function reservePasswordAttempt(
  deps: Deps,
  tenant: Tenant,
  email: string,
  context: RequestContext,
  options: { trackVelocity: boolean },
): Promise<PasswordAttempt> {
  // With Redis the distinct-IP set is counted before the transaction: no network call may hold
  // the lockout row's lock. In the SQL store it is counted inside, which saves a commit (an fsync
  // on SQLite) per attempt. Either way an attempt refused by a running lockout records its IP,
  // and it is counted once: a check that waits does not add its IP again.
  let counted =
    options.trackVelocity && deps.redis
      ? await countDistinctIps(deps.subjects, deps.counters, tenant, distinctIpRules.lockingLoginIps, email, context.ip, deps.clock.now())
      : undefined;
  let waitedRounds = 0;
  let leaveQueue: (() => void) | undefined;
  try {
    for (;;) {
      const decision = await decideCheck(deps, tenant, email, context, counted, options);
      if (decision.kind === "start") {
        if (decision.distinctIps >= distinctIpRules.suspiciousLoginIps.threshold)
          deps.log.warn({ tenantId: tenant.id, distinctIps: decision.distinctIps }, "suspicious_login_velocity");
        return { email, distinctIps: decision.distinctIps, settled: false };
      }
      if (decision.kind === "refused") throw refusal(deps, tenant, decision);
      counted = decision.distinctIps;
      leaveQueue ??= joinQueue(`${tenant.id}\n${email}`);
      waitedRounds = await waitForPlace(deps, tenant, email, waitedRounds);
    }
  } finally {
    leaveQueue?.();
  }
}

/** Counts a check among those waiting for one email in this process; refused (429) when they are too many. */
function joinQueue(key: string): () => void {
  const waiting = waitingChecks.get(key) ?? 0;
  if (waiting >= MAX_WAITING_PER_EMAIL) throw busy();
  waitingChecks.set(key, waiting + 1);
  return () => {
    const left = (waitingChecks.get(key) ?? 1) - 1;
    if (left === 0) waitingChecks.delete(key);
    else waitingChecks.set(key, left);
  };
}

/**
 * Reads (never writes) the lockout row every WAIT_STEP_MS until the budget has a place or a
 * lockout, then returns the rounds waited so far; 429 once WAIT_ROUNDS have passed in all.
 */
async function waitForPlace(deps: Deps, tenant: Tenant, email: string, waitedRounds: number): Promise<number> {
  let rounds = waitedRounds;
  while (rounds < WAIT_ROUNDS) {
    await sleep(WAIT_STEP_MS);
    rounds++;
    const stored = (await deps.store.limits.findLockout(tenant.id, email)) ?? noLockout;
    if (startPasswordCheck(stored, deps.clock.now()).kind !== "wait") return rounds;
  }
  throw busy();
}

function busy(): AuthError {
  return new AuthError("rate_limited", { message: LOCKED_OUT_MESSAGE, retryAfterSeconds: 1, logFields: { lockout: "busy" } });
}

/**
 * Runs `work` (the password check and what follows it) while the attempt holds its place: if
 * `work` ends without settling the place (an error: the database failed, the member changed
 * too often), the place is given back without a failure, so a member's own correct logins during
 * an outage never add up to a lockout. A place the process dies with frees itself after 60 s.
 */
export async function holdingPlace<T>(deps: Deps, tenant: Tenant, attempt: PasswordAttempt, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } finally {
    if (!attempt.settled) {
      await releasePasswordCheck(deps, tenant, attempt).catch((err: unknown) =>
        deps.log.warn({ err, tenantId: tenant.id }, "a password check's place could not be given back; it frees itself in 60 s"),
      );
    }
  }
}

async function releasePasswordCheck(deps: Deps, tenant: Tenant, attempt: PasswordAttempt): Promise<void> {
  await deps.store.limits.releaseCheckInFlight(tenant.id, attempt.email, deps.clock.now());
  attempt.settled = true;
}

/** The password was right: the lockout count is cleared (D13), the place with it. */
export async function passwordCheckPassed(store: Store, tenant: Tenant, attempt: PasswordAttempt): Promise<void> {
  await store.limits.clearLockout(tenant.id, attempt.email);
  attempt.settled = true;
}

async function decideCheck(
  deps: Deps,
  tenant: Tenant,
  email: string,
  context: RequestContext,
  counted: number | undefined,
  options: { trackVelocity: boolean },
): Promise<GateDecision> {
  const now = deps.clock.now();
  return deps.store.transaction(async (tx): Promise<GateDecision> => {
    const distinctIps =
      counted ??
      (options.trackVelocity ? await countDistinctIps(deps.subjects, tx.limits, tenant, distinctIpRules.lockingLoginIps, email, context.ip, now) : 0);
    const stored = await tx.limits.lockLockout(tenant.id, email, now);
    const gate = startPasswordCheck(stored, now);
    if (gate.kind === "refused") {
      if (gate.state !== stored) await tx.limits.saveLockout(tenant.id, email, gate.state, now);
      return { kind: "refused", refusedForMs: gate.remainingMs, velocityLockout: false, distinctIps };
    }
    if (distinctIps >= distinctIpRules.lockingLoginIps.threshold) {
      await tx.limits.saveLockout(tenant.id, email, { ...stored, lockedUntil: now + VELOCITY_LOCKOUT_MS }, now);
      return { kind: "refused", refusedForMs: VELOCITY_LOCKOUT_MS, velocityLockout: true, distinctIps };
    }
    if (gate.kind === "wait") return { kind: "wait", distinctIps };
    await tx.limits.saveLockout(tenant.id, email, gate.state, now);
    return { kind: "start", distinctIps };
  });
}

function refusal(deps: Deps, tenant: Tenant, decision: Extract<GateDecision, { kind: "refused" }>): AuthError {
  if (decision.velocityLockout) {
    deps.metrics.lockoutStarted("velocity");
    deps.log.warn({ tenantId: tenant.id, distinctIps: decision.distinctIps }, "login velocity lockout: too many IPs for one account");
  }
  return new AuthError("rate_limited", {
    message: LOCKED_OUT_MESSAGE,
    retryAfterSeconds: Math.ceil(decision.refusedForMs / 1000),
    logFields: { lockout: decision.velocityLockout ? "velocity" : "password" },
  });
}

/** The password was wrong: the check's place becomes a failure, which may start a lockout. */
export async function recordFailedPasswordCheck(deps: Deps, tenant: Tenant, attempt: PasswordAttempt): Promise<void> {
  const now = deps.clock.now();
  const startedLockout = await deps.store.transaction(async (tx) => {
    const state = await tx.limits.lockLockout(tenant.id, attempt.email, now);
    const next = finishFailedCheck(state, now);
    await tx.limits.saveLockout(tenant.id, attempt.email, next, now);
    return lockoutRemainingMs(state, now) === 0 && lockoutRemainingMs(next, now) > 0;
  });
  attempt.settled = true;
  if (startedLockout) deps.metrics.lockoutStarted("password");
}

/**
 * Checks the current password of a signed-in member (change-password, disabling 2FA, D24
 * re-authentication) behind the same lockout as login, so a stolen session is no password oracle.
 * `onWrong` runs before the refusal (an audit row of the caller's choosing).
 */
export async function checkCurrentPassword(
  deps: Deps,
  tenant: Tenant,
  member: { email: string; passwordHash: string | null },
  password: string,
  context: RequestContext,
  refusal: { message: string; onWrong?: () => Promise<void> },
): Promise<void> {
  const attempt = await reservePasswordAttempt(deps, tenant, member.email, context, { trackVelocity: false });
  await holdingPlace(deps, tenant, attempt, async () => {
    if (!member.passwordHash || !(await deps.hasher.verifyPassword(member.passwordHash, normalizePassword(password)))) {
      await recordFailedPasswordCheck(deps, tenant, attempt);
      await refusal.onWrong?.();
      throw new AuthError("invalid_credentials", { message: refusal.message });
    }
    // The password was right: the check must not count, whatever follows.
    await passwordCheckPassed(deps.store, tenant, attempt);
  });
}
