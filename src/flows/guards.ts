/** Checks that open most public flows: the bot challenge and the rate limits. */
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { RequestContext, Tenant } from "../model.js";
import { sha256Hex } from "../security/hashing.js";
import { decideRateLimit, type RateRule } from "../security/rate-limit.js";

export async function verifyBotChallenge(deps: Deps, tenant: Tenant, botToken: string | undefined, context: RequestContext): Promise<void> {
  await deps.bot.verify(tenant.settings.botProtection, botToken, context.ip);
}

/**
 * Counts one request against `rule` for `subject` (an IP or an email) and refuses past the limit.
 * The subject is hashed into the key: counters hold no addresses in the clear.
 */
export async function enforceRateLimit(deps: Deps, tenant: Tenant, rule: RateRule, subject: string, now: number): Promise<void> {
  const key = `${rule.name}:${sha256Hex(subject).slice(0, 32)}`;
  const counter = await deps.store.limits.hitCounter(tenant.id, key, rule.windowMs, now);
  const decision = decideRateLimit(counter, rule, now);
  if (!decision.allowed) {
    deps.log.info({ rule: rule.name, tenantId: tenant.id }, "rate limit refused a request");
    throw new AuthError("rate_limited", { retryAfterSeconds: decision.retryAfterSeconds });
  }
}
