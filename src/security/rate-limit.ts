/**
 * The rate-limit decision (contract.md#spec-8-2, contract.md#d15) as a pure function of (counter, rule, now); the rules are in rules.ts.
 * The counter itself is kept by the store, atomically, per tenant.
 */
import type { RateRule } from "../rules.js";

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until the window ends, at least 1, for Retry-After. */
  retryAfterSeconds: number;
}

export function decideRateLimit(counter: { count: number; windowEndsAt: number }, rule: RateRule, now: number): RateDecision {
  return {
    allowed: counter.count <= rule.limit,
    retryAfterSeconds: Math.max(1, Math.ceil((counter.windowEndsAt - now) / 1000)),
  };
}
