/**
 * Progressive password-login lockout (spec 8.2, D13) as pure functions of (state, now).
 * Three consecutive failures lock for 1 h; each later round of three escalates to 4 h, 24 h,
 * then 7 d and stays there. Attempts during a lockout are refused and do not extend it.
 */
import { DAY, HOUR } from "../core/clock.js";

export const FAILURES_BEFORE_LOCKOUT = 3;
export const LOCKOUT_DURATIONS_MS = [1 * HOUR, 4 * HOUR, 24 * HOUR, 7 * DAY] as const;

export interface LockoutState {
  failures: number;
  /** How many lockouts have been served; picks the next duration. */
  level: number;
  lockedUntil: number;
}

export const noLockout: LockoutState = { failures: 0, level: 0, lockedUntil: 0 };

/** Milliseconds left in the lockout, or 0 when login may be tried. */
export function lockoutRemainingMs(state: LockoutState | undefined, now: number): number {
  return state && state.lockedUntil > now ? state.lockedUntil - now : 0;
}

export function recordFailedLogin(state: LockoutState | undefined, now: number): LockoutState {
  const current = state ?? noLockout;
  const failures = current.failures + 1;
  if (failures < FAILURES_BEFORE_LOCKOUT) return { ...current, failures };
  const duration = LOCKOUT_DURATIONS_MS[Math.min(current.level, LOCKOUT_DURATIONS_MS.length - 1)]!;
  return { failures: 0, level: current.level + 1, lockedUntil: now + duration };
}
