/**
 * Rate-limit rules (spec 8.2, D15) and the decision as a pure function of (counter, rule, now).
 * The counter itself is kept by the store, atomically, per tenant.
 */
import { DAY, HOUR, MINUTE } from "../core/clock.js";

export interface RateRule {
  /** Stable name: part of the stored key and of logs and metrics. */
  name: string;
  limit: number;
  windowMs: number;
}

export const rateRules = {
  registerPerIp: { name: "register_ip", limit: 5, windowMs: HOUR },
  registerPerEmail: { name: "register_email", limit: 3, windowMs: HOUR },
  forgotPasswordPerIp: { name: "forgot_password_ip", limit: 10, windowMs: HOUR },
  magicLinkPerIp: { name: "magic_link_ip", limit: 10, windowMs: HOUR },
  /** One magic link per email per 3 minutes (spec 8.2 cooldown). */
  magicLinkCooldown: { name: "magic_link_email", limit: 1, windowMs: 3 * MINUTE },
  resendVerificationPerIp: { name: "resend_verification_ip", limit: 10, windowMs: HOUR },
  resendVerificationPerEmail: { name: "resend_verification_email", limit: 1, windowMs: 5 * MINUTE },
  botChallengePerIp: { name: "bot_challenge_ip", limit: 60, windowMs: MINUTE },
  adminResendPerEmail: { name: "admin_resend_email", limit: 1, windowMs: 5 * MINUTE },
  /** D24: email change requests per member (each mails an address the member chose). */
  changeEmailPerMember: { name: "change_email_member", limit: 3, windowMs: HOUR },
  /** D26: email code attempts per IP, as many as magic link requests. */
  loginCodePerIp: { name: "login_code_ip", limit: 10, windowMs: HOUR },
  /**
   * D26: email code attempts per email, right or wrong, known email or not. With 5 wrong codes per
   * link this caps a guesser at 10 tries in 10^6 a day (under 0.4 % a year, each try a link the
   * owner sees arrive).
   */
  loginCodePerEmail: { name: "login_code_email", limit: 10, windowMs: DAY },
  /**
   * D26 "5 wrong codes void it": at most 5 codes are compared per email in a link's lifetime,
   * counted before the comparison (so concurrent guesses can't overrun it) for every email alike.
   * A security budget: RATE_LIMITS=off leaves it on.
   */
  loginCodeComparisons: { name: "login_code_compared", limit: 5, windowMs: 15 * MINUTE },
  /**
   * D26: passkey login options per IP (each stores a challenge for 5 minutes). The hosted login
   * page asks for them as it loads (autofill), so as many as bot challenges, which each one needs.
   */
  passkeyLoginPerIp: { name: "passkey_login_ip", limit: 60, windowMs: MINUTE },
} as const satisfies Record<string, RateRule>;

/** Rows of spec 8.2 that count distinct client IPs per email rather than requests (D13). */
export const distinctIpRules = {
  /** 5 or more IPs registering one email in an hour: logged, allowed. */
  registrationIpsPerEmail: { name: "register_email_ips", windowMs: HOUR, threshold: 5 },
  /** 5 or more IPs asking to reset one email's password in an hour: refused. */
  forgotPasswordIpsPerEmail: { name: "forgot_password_email_ips", windowMs: HOUR, threshold: 5 },
  /** The same for request-magic-link. */
  magicLinkIpsPerEmail: { name: "magic_link_email_ips", windowMs: HOUR, threshold: 5 },
  /** 5 IPs logging in to one account in 15 minutes: logged as suspicious. */
  suspiciousLoginIps: { name: "login_email_ips", windowMs: 15 * MINUTE, threshold: 5 },
  /** 10 IPs in the same 15 minutes: password login locked for 30 minutes. */
  lockingLoginIps: { name: "login_email_ips", windowMs: 15 * MINUTE, threshold: 10 },
} as const;

export const VELOCITY_LOCKOUT_MS = 30 * MINUTE;

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
