/** Checks that open most public flows: the bot challenge and the rate limits. */
import type { Deps } from "../../deps.js";
import { AuthError, isAuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import type { SubjectHasher } from "../../security/hashing.js";
import { decideRateLimit } from "../../security/rate-limit.js";
import { type RateRule } from "../../rules.js";
import type { Counters } from "../../store/counters.js";

/** The counter's key: the rule and the keyed hash of its subject (contract.md#d25: no address, not even an unkeyed hash of one). */
function limitKey(subjects: SubjectHasher, ruleName: string, subject: string): string {
  return `${ruleName}:${subjects(subject)}`;
}

export async function verifyBotChallenge(deps: Deps, tenant: Tenant, botToken: string | undefined, context: RequestContext): Promise<void> {
  const provider = tenant.settings.botProtection.provider;
  try {
    await deps.bot.verify(tenant.settings.botProtection, botToken, { tenantId: tenant.id, remoteIp: context.ip, now: deps.clock.now() });
  } catch (err) {
    // Only the two answers of contract.md#d4 count: a store error (the ALTCHA claim on a Redis that is down) is
    // not the provider's fault, and shows as a 503 in the request metrics instead.
    if (isAuthError(err) && (err.code === "bot_check_failed" || err.code === "bot_check_unavailable")) {
      deps.metrics.botCheck(provider, err.code === "bot_check_failed" ? "failed" : "unavailable");
    }
    throw err;
  }
  if (provider !== "none") deps.metrics.botCheck(provider, "passed");
}

export interface LimitOptions {
  /** A security budget, not a rate limit: counted even with RATE_LIMITS=off. */
  budget?: boolean;
  /** What the refusal tells the member instead of the code's default message. */
  message?: string;
}

/**
 * Counts one request against `rule` for `subject` (an IP or an email) and refuses past the limit.
 * RATE_LIMITS=off (benchmarks only) skips this and the distinct-IP refusals, but not a budget;
 * lockouts still apply. The subject is hashed into the key with a key of ours: counters hold no
 * addresses (contract.md#d25).
 */
export async function enforceRateLimit(deps: Deps, tenant: Tenant, rule: RateRule, subject: string, now: number, options: LimitOptions = {}): Promise<void> {
  if (!deps.config.rateLimits && !options.budget) return;
  const counter = await deps.counters.hitCounter(tenant.id, limitKey(deps.subjects, rule.name, subject), rule.windowMs, now);
  const decision = decideRateLimit(counter, rule, now);
  if (!decision.allowed) {
    deps.metrics.rateLimitRefused(rule.name);
    throw new AuthError("rate_limited", { message: options.message, retryAfterSeconds: decision.retryAfterSeconds, logFields: { rule: rule.name } });
  }
}

/** Records the client IP against an email and returns how many distinct IPs it has in the window. */
export async function countDistinctIps(
  subjects: SubjectHasher,
  counters: Counters,
  tenant: Tenant,
  rule: { name: string; windowMs: number },
  email: string,
  ip: string,
  now: number,
): Promise<number> {
  return counters.addToSet(tenant.id, limitKey(subjects, rule.name, email), subjects(ip), rule.windowMs, now);
}

/** contract.md#spec-8-2: 5 or more IPs asking for one email within the window are refused, known email or not. */
export async function refuseManyIpsForOneEmail(
  deps: Deps,
  tenant: Tenant,
  rule: { name: string; windowMs: number; threshold: number },
  email: string,
  context: RequestContext,
  now: number,
): Promise<void> {
  if (!deps.config.rateLimits) return;
  const distinctIps = await countDistinctIps(deps.subjects, deps.counters, tenant, rule, email, context.ip, now);
  if (distinctIps >= rule.threshold) {
    // Also at warn, apart from the request's line: many IPs on one email is a campaign to look at.
    deps.log.warn({ tenant: tenant.domain, rule: rule.name, distinctIps }, "many IPs asking for one email");
    deps.metrics.rateLimitRefused(rule.name);
    throw new AuthError("rate_limited", { retryAfterSeconds: rule.windowMs / 1000, logFields: { rule: rule.name, distinctIps } });
  }
}
