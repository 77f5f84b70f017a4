/**
 * The gate in front of every password check (login, change-password, disabling 2FA): the
 * progressive lockout of contract.md#d13 and, for login, the distinct-IP velocity rows of contract.md#spec-8-2.
 */
import type { Clock } from "../../core/clock.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { finishFailedCheck, lockoutRemainingMs, nextTurnCheckInMs, noLockout, startPasswordCheck } from "../../security/lockout.js";
import { CHECK_TURN_DEADLINE_MS, CHECK_TURN_RECHECK_MS, distinctIpRules, MAX_CHECKS_WAITING_PER_EMAIL, VELOCITY_LOCKOUT_MS } from "../../rules.js";
import type { Store } from "../../store/index.js";
import { verifyStoredPassword } from "./stored-passwords.js";
import { countDistinctIps } from "./guards.js";

const LOCKED_OUT_MESSAGE = "Too many failed attempts. Please try again later.";

/** A check listening for the checks of its email to finish, to decide again (contract.md#d30). */
class TurnWaiter {
  /** Counted among its email's waiting checks (it found the budget full once). */
  queued = false;
  private wakes = new AbortController();
  constructor(readonly key: string) {}
  /** Forgets earlier wakes. Called before each read of the row, so a wake after that read is never lost. */
  arm(): void {
    if (this.wakes.signal.aborted) this.wakes = new AbortController();
  }
  wake(): void {
    this.wakes.abort();
  }
  /** Returns at once when woken since `arm`. */
  sleep(clock: Clock, ms: number): Promise<void> {
    return clock.sleep(ms, this.wakes.signal);
  }
}

/** The checks of each (tenant, email) deciding or waiting for a turn in this process. */
class TurnWaiters {
  private readonly byKey = new Map<string, Set<TurnWaiter>>();

  join(key: string): TurnWaiter {
    const waiter = new TurnWaiter(key);
    const waiters = this.byKey.get(key) ?? new Set<TurnWaiter>();
    waiters.add(waiter);
    this.byKey.set(key, waiters);
    return waiter;
  }

  /** Counts `waiter` among its email's waiting checks; false when `max` wait already. */
  queue(waiter: TurnWaiter, max: number): boolean {
    if (waiter.queued) return true;
    let queued = 0;
    for (const other of this.byKey.get(waiter.key) ?? []) if (other.queued) queued++;
    if (queued >= max) return false;
    waiter.queued = true;
    return true;
  }

  leave(waiter: TurnWaiter): void {
    const waiters = this.byKey.get(waiter.key);
    waiters?.delete(waiter);
    if (waiters?.size === 0) this.byKey.delete(waiter.key);
  }

  /** A check of the email finished: every check deciding or waiting looks at the row again. */
  wake(key: string): void {
    for (const waiter of this.byKey.get(key) ?? []) waiter.wake();
  }
}

/** Module-wide: checks of one email in this process reach each other whatever Deps they carry. */
const turnWaiters = new TurnWaiters();

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
 * The check takes a place in the lockout budget before the slow hash (contract.md#d13: a burst of concurrent
 * guesses can't all pass the gate before the first failure is written); a wrong password turns
 * the place into a failure, a right one clears the row (contract.md#d20: a correct password never counts as a
 * failure, so N concurrent correct logins all succeed). With the budget taken by checks in flight
 * a new one waits for its turn (contract.md#d30): woken when a check finishes, 503 `unavailable` when none
 * comes before the deadline. Refused attempts neither count nor extend a lockout.
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
  const deadline = deps.clock.now() + CHECK_TURN_DEADLINE_MS;
  // Listening before the first decision: a check that finishes while it is taken still wakes it.
  const waiter = turnWaiters.join(waitKey(tenant, email));
  try {
    for (;;) {
      waiter.arm();
      const decision = await decideCheck(deps, tenant, email, context, counted, options);
      if (decision.kind === "start") {
        if (decision.distinctIps >= distinctIpRules.suspiciousLoginIps.threshold)
          deps.log.warn({ tenant: tenant.domain, distinctIps: decision.distinctIps }, "suspicious_login_velocity");
        return { email, distinctIps: decision.distinctIps, settled: false };
      }
      if (decision.kind === "refused") throw refusal(deps, tenant, decision);
      counted = decision.distinctIps;
      if (!turnWaiters.queue(waiter, MAX_CHECKS_WAITING_PER_EMAIL)) throw noTurn("queue_full");
      await waitForTurn(deps, tenant, email, waiter, deadline);
    }
  } finally {
    turnWaiters.leave(waiter);
  }
}

function waitKey(tenant: Tenant, email: string): string {
  return `${tenant.id}\n${email}`;
}

/**
 * Sleeps on the injected clock until a check of this email finishes here (a wake), the next
 * re-check or the deadline, then reads (never writes) the lockout row; returns once the budget
 * has a place or a lockout runs, for the caller to decide in its transaction. Past the deadline:
 * 503 `unavailable`, having taken nothing and counted nothing.
 */
async function waitForTurn(deps: Deps, tenant: Tenant, email: string, waiter: TurnWaiter, deadline: number): Promise<void> {
  for (;;) {
    const sleepMs = nextTurnCheckInMs(deps.clock.now(), deadline, CHECK_TURN_RECHECK_MS);
    if (sleepMs === undefined) throw noTurn("deadline");
    await waiter.sleep(deps.clock, sleepMs);
    waiter.arm();
    const stored = (await deps.store.limits.findLockout(tenant.id, email)) ?? noLockout;
    if (startPasswordCheck(stored, deps.clock.now()).kind !== "wait") return;
  }
}

/** contract.md#d30: an overload, not a lockout: nothing failed, so never "too many failed attempts". */
function noTurn(reason: "deadline" | "queue_full"): AuthError {
  return new AuthError("unavailable", { retryAfterSeconds: Math.ceil(CHECK_TURN_DEADLINE_MS / 1000), logFields: { passwordCheck: reason } });
}

/**
 * Runs `work` (the password check and what follows it) while the attempt holds its place: if
 * `work` ends without settling the place (an error: the database failed, the member changed
 * too often), the place is given back without a failure, so a member's own correct logins during
 * an outage never add up to a lockout. A place the process dies with frees itself after 60 s.
 * However the check ended (a failure recorded, the place given back, the row cleared with the
 * session in login's own transaction), its email's waiting checks are woken when it is committed.
 */
export async function holdingPlace<T>(deps: Deps, tenant: Tenant, attempt: PasswordAttempt, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } finally {
    if (!attempt.settled) {
      await releasePasswordCheck(deps, tenant, attempt).catch((err: unknown) =>
        deps.log.warn({ err, tenant: tenant.domain }, "a password check's place could not be given back; it frees itself in 60 s"),
      );
    }
    turnWaiters.wake(waitKey(tenant, attempt.email));
  }
}

async function releasePasswordCheck(deps: Deps, tenant: Tenant, attempt: PasswordAttempt): Promise<void> {
  await deps.store.limits.releaseCheckInFlight(tenant.id, attempt.email, deps.clock.now());
  attempt.settled = true;
}

/**
 * The password was right: the lockout count is cleared (contract.md#d13), the place with it. The waiting
 * checks are woken now, not when the rest of the login (2FA, a rehash) is done.
 */
export async function passwordCheckPassed(store: Store, tenant: Tenant, attempt: PasswordAttempt): Promise<void> {
  await store.limits.clearLockout(tenant.id, attempt.email);
  attempt.settled = true;
  turnWaiters.wake(waitKey(tenant, attempt.email));
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
    deps.log.warn({ tenant: tenant.domain, distinctIps: decision.distinctIps }, "login velocity lockout: too many IPs for one account");
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
 * Checks the current password of a signed-in member (change-password, disabling 2FA, contract.md#d24
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
    if (!member.passwordHash || !(await verifyStoredPassword(deps, tenant, member.passwordHash, password))) {
      await recordFailedPasswordCheck(deps, tenant, attempt);
      await refusal.onWrong?.();
      throw new AuthError("invalid_credentials", { message: refusal.message });
    }
    // The password was right: the check must not count, whatever follows.
    await passwordCheckPassed(deps.store, tenant, attempt);
  });
}
