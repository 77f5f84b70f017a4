/**
 * Progressive password-login lockout (contract.md#spec-8-2, contract.md#d13) as pure functions of (state, now).
 * Three consecutive failures lock for 1 h; each later round of three escalates to 4 h, 24 h,
 * then 7 d and stays there. Attempts during a lockout are refused and do not extend it.
 *
 * A check in progress holds a place in the budget of three (contract.md#d20): failures plus checks in flight
 * never exceed it, so a burst of guesses gets at most three checked, and a correct password is
 * never counted as a failure: a fourth concurrent login waits for its turn instead of being
 * refused, and one that gets none before its deadline is an overload (contract.md#d30), not a lockout.
 */
import { CHECK_ABANDONED_AFTER_MS, FAILURES_BEFORE_LOCKOUT, LOCKOUT_DURATIONS_MS } from "../rules.js";

export interface LockoutState {
  failures: number;
  /** How many lockouts have been served; picks the next duration. */
  level: number;
  lockedUntil: number;
  /** Password checks started and not yet finished. */
  inFlight: number;
  inFlightUntil: number;
}

export const noLockout: LockoutState = { failures: 0, level: 0, lockedUntil: 0, inFlight: 0, inFlightUntil: 0 };

/** Milliseconds left in the lockout, or 0 when login may be tried. */
export function lockoutRemainingMs(state: LockoutState | undefined, now: number): number {
  return state && state.lockedUntil > now ? state.lockedUntil - now : 0;
}

export function recordFailedLogin(state: LockoutState | undefined, now: number): LockoutState {
  const current = state ?? noLockout;
  const failures = current.failures + 1;
  if (failures < FAILURES_BEFORE_LOCKOUT) return { ...current, failures };
  const duration = LOCKOUT_DURATIONS_MS[Math.min(current.level, LOCKOUT_DURATIONS_MS.length - 1)]!;
  return { ...current, failures: 0, level: current.level + 1, lockedUntil: now + duration };
}

/** What a new password check may do: be refused (a lockout runs), wait for a place, or start. */
export type CheckGate = { kind: "refused"; state: LockoutState; remainingMs: number } | { kind: "wait" } | { kind: "start"; state: LockoutState };

export function startPasswordCheck(stored: LockoutState, now: number): CheckGate {
  const state = dropAbandonedChecks(stored, now);
  const remainingMs = lockoutRemainingMs(state, now);
  if (remainingMs > 0) return { kind: "refused", state, remainingMs };
  if (state.failures + state.inFlight >= FAILURES_BEFORE_LOCKOUT) return { kind: "wait" };
  return { kind: "start", state: { ...state, inFlight: state.inFlight + 1, inFlightUntil: now + CHECK_ABANDONED_AFTER_MS } };
}

/** A started check found the password wrong. One started before a lockout began does not count on. */
export function finishFailedCheck(state: LockoutState, now: number): LockoutState {
  const finished = { ...state, inFlight: Math.max(0, state.inFlight - 1) };
  return lockoutRemainingMs(finished, now) > 0 ? finished : recordFailedLogin(finished, now);
}

/**
 * How long a check that found the budget full sleeps before it reads the row again (unless woken
 * first): until the next re-check or its deadline, whichever comes first; undefined once the
 * deadline has passed (it gives up: 503, contract.md#d30).
 */
export function nextTurnCheckInMs(now: number, deadline: number, recheckMs: number): number | undefined {
  if (now >= deadline) return undefined;
  return Math.min(recheckMs, deadline - now);
}

/** Checks whose process died never report: once their time is up their places are free again. */
function dropAbandonedChecks(state: LockoutState, now: number): LockoutState {
  if (state.inFlight === 0 || state.inFlightUntil > now) return state;
  return { ...state, inFlight: 0, inFlightUntil: 0 };
}
