/**
 * Every number a rule of Latch is made of, in one place, each with the point of the interface spec
 * or of DECISIONS it implements, by its anchor in docs/contract.md (`contract.md#spec-8-2`,
 * `contract.md#d13`). Flows, security and the store import the numbers from here and nowhere else
 * writes them, nor a sentence that quotes one: prose, error messages and schema bounds are built
 * from these (`describeDuration` words a duration). No Node import: the hosted pages' browser
 * script uses this file too. docs/limits.md is generated from RULE_TABLE (`npm run docs`), and
 * test/rules.test.ts fails when the two disagree.
 */
import { DAY, HOUR, MINUTE, SECOND } from "./core/durations.js";

export interface RateRule {
  /** Stable name: part of the stored key and of logs and metrics. */
  name: string;
  limit: number;
  windowMs: number;
}

/** Requests per IP, email or member in a fixed window; past the limit, 429 with Retry-After. */
export const rateRules = {
  registerPerIp: { name: "register_ip", limit: 5, windowMs: HOUR },
  registerPerEmail: { name: "register_email", limit: 3, windowMs: HOUR },
  forgotPasswordPerIp: { name: "forgot_password_ip", limit: 10, windowMs: HOUR },
  magicLinkPerIp: { name: "magic_link_ip", limit: 10, windowMs: HOUR },
  /** One magic link per email per 3 minutes (contract.md#spec-8-2 cooldown). */
  magicLinkCooldown: { name: "magic_link_email", limit: 1, windowMs: 3 * MINUTE },
  resendVerificationPerIp: { name: "resend_verification_ip", limit: 10, windowMs: HOUR },
  resendVerificationPerEmail: { name: "resend_verification_email", limit: 1, windowMs: 5 * MINUTE },
  botChallengePerIp: { name: "bot_challenge_ip", limit: 60, windowMs: MINUTE },
  adminResendPerEmail: { name: "admin_resend_email", limit: 1, windowMs: 5 * MINUTE },
  /** contract.md#d24: email change requests per member (each mails an address the member chose). */
  changeEmailPerMember: { name: "change_email_member", limit: 3, windowMs: HOUR },
  /** contract.md#d26: email code attempts per IP, as many as magic link requests. */
  loginCodePerIp: { name: "login_code_ip", limit: 10, windowMs: HOUR },
  /**
   * contract.md#d26: email code attempts per email, right or wrong, known email or not. With 5 wrong codes per
   * link this caps a guesser at 10 tries in 10^6 a day (under 0.4 % a year, each try a link the
   * owner sees arrive).
   */
  loginCodePerEmail: { name: "login_code_email", limit: 10, windowMs: DAY },
  /**
   * contract.md#d26 "5 wrong codes void it": at most 5 codes are compared per email in a link's lifetime,
   * counted before the comparison (so concurrent guesses can't overrun it) for every email alike.
   * A security budget: RATE_LIMITS=off leaves it on.
   */
  loginCodeComparisons: { name: "login_code_compared", limit: 5, windowMs: 15 * MINUTE },
  /**
   * contract.md#d26: passkey login options per IP (each stores a challenge for 5 minutes). The hosted login
   * page asks for them as it loads (autofill), so as many as bot challenges, which each one needs.
   */
  passkeyLoginPerIp: { name: "passkey_login_ip", limit: 60, windowMs: MINUTE },
  /** decisions.md#federated-sign-in: sign-ins started per IP (each stores a flow row for 10 minutes). */
  federatedStartPerIp: { name: "federated_start_ip", limit: 30, windowMs: MINUTE },
  /** decisions.md#federated-sign-in: second-factor codes tried after a federated sign-in, per IP. */
  federatedSecondFactorPerIp: { name: "federated_2fa_ip", limit: 10, windowMs: MINUTE },
} as const satisfies Record<string, RateRule>;

/** Rows of contract.md#spec-8-2 that count distinct client IPs per email rather than requests (contract.md#d13). */
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

/** contract.md#d13: what 10 IPs in 15 minutes lock password login for. */
export const VELOCITY_LOCKOUT_MS = 30 * MINUTE;

/** contract.md#spec-8-2, contract.md#d13: consecutive failed passwords before a lockout, and the lockouts in turn (the last repeats). */
export const FAILURES_BEFORE_LOCKOUT = 3;
export const LOCKOUT_DURATIONS_MS = [1 * HOUR, 4 * HOUR, 24 * HOUR, 7 * DAY] as const;
/** contract.md#d20: a password check still in flight this long after it started was lost with its process; its place is given back. */
export const CHECK_ABANDONED_AFTER_MS = 60 * SECOND;
/**
 * contract.md#d30: a password check that finds the budget full waits at most this long for its turn, then is
 * 503 `unavailable` with Retry-After, nothing counted. Three argon2 checks at a time get through a
 * queue of 20 of one member in 1-2 s on a busy 2-core host, so 5 s is only reached by an overload.
 */
export const CHECK_TURN_DEADLINE_MS = 5 * SECOND;
/**
 * contract.md#d30: checks of one email that may wait for a turn at once in one process; more are 503
 * `unavailable`. Each waiter re-reads the lockout row whenever a check of its email finishes, so
 * this bounds that work and the memory of one email's queue; it is no defence (the budget is).
 */
export const MAX_CHECKS_WAITING_PER_EMAIL = 256;
/**
 * contract.md#d30: how often a waiting check re-reads its email's lockout row, for checks held by another
 * instance (one in this process wakes it at once): a plain read, 4 a second per waiter.
 */
export const CHECK_TURN_RECHECK_MS = 250;

/** contract.md#spec-8-2, contract.md#d13: failed second-factor codes before the second factor locks, and for how long. */
export const TWO_FACTOR_FAILURES_BEFORE_LOCKOUT = 3;
export const TWO_FACTOR_LOCKOUT_MS = 15 * MINUTE;
/** contract.md#d14: TOTP per RFC 6238: SHA-1, 6 digits, 30 s steps, a code of the step before or after accepted, 160-bit secrets. */
export const TOTP_PARAMETERS = { algorithm: "SHA1", digits: 6, periodSeconds: 30, window: 1, secretBytes: 20 } as const;
/** contract.md#d26: the digits of the code mailed with every magic link (one in 10^6; rateRules.loginCodeComparisons bounds the guesses). */
export const LOGIN_CODE_DIGITS = 6;

/** contract.md#spec-8-1, contract.md#d7, contract.md#d24: one-time link lifetimes. Password reset: the tenant's resetTokenTtlMinutes within these bounds. */
export const TOKEN_LIFETIMES_MS = { verify_email: 24 * HOUR, magic_login: 15 * MINUTE, email_change: HOUR, secure_account: 7 * DAY } as const;
export const RESET_TOKEN_LIFETIME_MS = { default: HOUR, min: 15 * MINUTE, max: 24 * HOUR } as const;

/** contract.md#spec-8-1, contract.md#d6: session lifetimes by the tenant's sessionTier, in seconds (the cookie's Max-Age). */
export const sessionTiers = { "15m": 15 * 60, "1h": 3600, "8h": 8 * 3600, "1d": 86400, "7d": 7 * 86400, "30d": 30 * 86400 } as const;
/** contract.md#d24: `last_seen_at` moves at most this often per session. */
export const LAST_SEEN_RESOLUTION_MS = MINUTE;
/** contract.md#d24: a member without a password re-authenticates with a session at most this old. */
export const FRESH_SESSION_MS = 10 * MINUTE;
/** contract.md#d24: the User-Agent a session keeps (and shows in the member's list of sessions) is cut to this many characters. */
export const SESSION_USER_AGENT_MAX_LENGTH = 512;

/** contract.md#d8: record ids are drawn at random from [min, max): not sequential, and always 15 or 16 digits. */
export const RECORD_ID_RANGE = { min: 10 ** 14, max: 2 ** 53 } as const;
/** contract.md#spec-8-3, contract.md#d12: the shortest password. */
export const PASSWORD_MIN_LENGTH = 8;
/** contract.md#d12: the longest password, in characters (code points) once NFKC-normalised; the JSON field's bound too. */
export const PASSWORD_MAX_LENGTH = 256;
/** contract.md#d8: the longest email address, once trimmed. */
export const EMAIL_MAX_LENGTH = 254;
/** contract.md#d8: a member's name, 1 to this many characters once trimmed. */
export const NAME_MAX_LENGTH = 100;
/** contract.md#d14: recovery codes in a set. */
export const RECOVERY_CODE_COUNT = 10;
/** contract.md#d14: a recovery code's characters, of a 32-symbol alphabet (80 bits). */
export const RECOVERY_CODE_LENGTH = 16;

/**
 * decisions.md#federated-sign-in: a sign-in started and not yet called back (the `latch_fed` cookie and its
 * row), and what waits for one more step after the callback (the proof before a link, the second factor).
 */
export const FEDERATION_FLOW_LIFETIME_MS = 10 * MINUTE;
/** decisions.md#federated-connections: a bound on the providers one tenant's admin can make Latch call and cache. */
export const MAX_CONNECTIONS_PER_TENANT = 20;
export const FEDERATION_PENDING_LIFETIME_MS = 10 * MINUTE;
/** decisions.md#openid-provider-clients: a bound on the applications one tenant's admin can register. */
export const MAX_OAUTH_CLIENTS_PER_TENANT = 50;
/** decisions.md#federated-sign-in: every call to a provider (discovery, JWKS, token, GitHub's API). */
export const FEDERATION_REQUEST_TIMEOUT_MS = 10_000;

/** contract.md#d26: how long a passkey ceremony's challenge lives, and how many passkeys a member keeps. */
export const PASSKEY_CHALLENGE_LIFETIME_MS = 5 * MINUTE;
export const MAX_PASSKEYS_PER_MEMBER = 20;
/** contract.md#d26, WebAuthn Level 3: the longest credential id, in bytes; a longer one is refused at registration. */
export const MAX_CREDENTIAL_ID_BYTES = 1023;
/** contract.md#d26: a passkey's name, 1 to this many characters once its spaces are folded (the rule of member names otherwise). */
export const PASSKEY_NAME_MAX_LENGTH = 64;
/**
 * contract.md#d10: ALTCHA's proof of work. The widget tries counters from 0 up, one PBKDF2 of `cost`
 * iterations each, until it finds the one the server drew: 1,500 tries on average, about a second
 * in a browser on 2 cores (bench/altcha-solve.ts). altcha-lib's README suggests a counter of
 * 5,000-10,000, which measured 4.7 s here (contract.md#issue-16); a bot pays what a member pays either way,
 * answers are single use, and the rate limits are the throttle, so the member's wait decides.
 */
export const ALTCHA_PROOF_OF_WORK = { algorithm: "PBKDF2/SHA-256", cost: 5_000, counterMin: 1_000, counterMax: 2_000 } as const;
/** contract.md#d10: how long an ALTCHA challenge may be solved and sent. */
export const ALTCHA_CHALLENGE_TTL_MS = 10 * MINUTE;

/** contract.md#d9: webhook deliveries are retried for a day, 10 s, 30 s, 90 s, ... at most an hour apart. */
export const WEBHOOK_RETRY_FOR_MS = 24 * HOUR;
export const WEBHOOK_FIRST_RETRY_MS = 10 * SECOND;
export const WEBHOOK_MAX_RETRY_DELAY_MS = 1 * HOUR;
/** contract.md#d9: an attempt that has no answer this long after it started has failed (and is retried). */
export const WEBHOOK_ATTEMPT_TIMEOUT_MS = 10 * SECOND;
/**
 * decisions.md#webhook-secret-rotation: after a webhook secret is rotated, every attempt is signed with the old
 * secret too for this long, so a receiver that still holds it loses nothing while it installs the
 * new one. As long as WEBHOOK_RETRY_FOR_MS: an event queued just before the rotation carries the old
 * signature for about as long as it is retried.
 */
export const WEBHOOK_SECRET_ROTATION_WINDOW_MS = WEBHOOK_RETRY_FOR_MS;

/**
 * contract.md#d28: the longest lifetime of a token a tenant's signing key signs. Access tokens and ID
 * tokens live 10 minutes, the session token 5 (refresh tokens are opaque, not signed): a key a
 * rotation retired stays in the JWKS this long, so every token it signed still verifies until it expires.
 */
export const MAX_TOKEN_LIFETIME_MS = 10 * MINUTE;
/** decisions.md#openid-provider: how often a cached provider asks the store whether its tenant's signing keys changed (a rotation). */
export const SIGNING_KEY_RECHECK_MS = 5 * SECOND;
/**
 * decisions.md#openid-provider-signing-keys: how long a retired signing key stays published. A cached
 * provider may sign with it for up to SIGNING_KEY_RECHECK_MS after the rotation, and each token it
 * signs then lives MAX_TOKEN_LIFETIME_MS.
 */
export const RETIRED_SIGNING_KEY_KEPT_MS = MAX_TOKEN_LIFETIME_MS + SIGNING_KEY_RECHECK_MS;
/** contract.md#d28: a session token (`POST /auth/session/token`) lives this long, and never past its session. */
export const SESSION_TOKEN_LIFETIME_MS = 5 * MINUTE;

/** contract.md#d25: how long what is kept is kept. */
export const RETENTION_MS = 30 * DAY;
/** contract.md#d25: audit events, AUDIT_RETENTION_DAYS, 365 by default (they hold IPs, user agents and places). */
export const DEFAULT_AUDIT_RETENTION_DAYS = 365;
/** contract.md#d25: the most AUDIT_RETENTION_DAYS may be (about a century; the least is 1). */
export const MAX_AUDIT_RETENTION_DAYS = 36_500;
/** contract.md#d25: a pending account is erased this long after its last verification link expired (PENDING_RETENTION_DAYS). */
export const DEFAULT_PENDING_RETENTION_DAYS = 7;
/** contract.md#d25: the most PENDING_RETENTION_DAYS may be (about ten years; the least is 1). */
export const MAX_PENDING_RETENTION_DAYS = 3650;
/** contract.md#d25: how often the sweeper erases what is kept no longer. */
export const RETENTION_SWEEP_INTERVAL_MS = 5 * MINUTE;
/** contract.md#d16: a country or network unused this long is forgotten: a login from it is new again. */
export const ORIGIN_MEMORY_MS = 180 * DAY;
/** contract.md#d18: a pending account's registration outlives its link this long, so a late login still hears email_not_verified. */
export const REGISTRATION_MEMORY_MS = 7 * DAY;

/** contract.md#d4: the largest request body; a larger one is 413 `payload_too_large`. */
export const BODY_LIMIT_BYTES = 16 * 1024;
/** contract.md#d21: longer URLs answer 414; Node's own limit (NODE_HEADER_LIMIT_BYTES of request line and headers) answers 431. */
export const MAX_URL_LENGTH = 2048;
/** contract.md#d21: Node's default `maxHeaderSize`, which Latch keeps: a longer request line and headers answer 431. */
export const NODE_HEADER_LIMIT_BYTES = 16 * 1024;
/** contract.md#d1: the longest tenant domain (a hostname, RFC 1035). */
export const TENANT_DOMAIN_MAX_LENGTH = 253;
/**
 * contract.md#d21: the longest value any path parameter's schema allows, a tenant domain: the router's
 * maxParamLength, so only a longer one is 414 and the schema speaks for the rest.
 */
export const MAX_PATH_PARAM_LENGTH = TENANT_DOMAIN_MAX_LENGTH;
/**
 * contract.md#d30: how deep a JSON body may nest, the body itself being level 1; deeper is 400
 * `validation_failed`. The deepest valid body is a passkey answer's extension results
 * (`response.clientExtensionResults.prf.results.first`: 5 levels), so 32 refuses nothing real,
 * while 16 KiB of `[` nests 16,384 deep.
 */
export const MAX_BODY_DEPTH = 32;

/**
 * contract.md#d29, decisions.md#importing-members: the costliest foreign hash an import accepts, so one row
 * can't stall logins. bcrypt, scrypt's N and PBKDF2 are the contract's; Argon2's and scrypt's memory are Latch's.
 */
export const FOREIGN_HASH_LIMITS = {
  bcryptCost: 16,
  scryptLogN: 20,
  scryptParallelism: 16,
  /** 128·N·r bytes: N = 2^20 with r = 8 (1 GiB) is the most. */
  scryptMemoryBytes: 1024 * 1024 * 1024,
  pbkdf2Iterations: 2_000_000,
  argon2MemoryKiB: 262_144,
  argon2Time: 16,
  argon2Parallelism: 16,
} as const;
/** contract.md#d29: members per call of the admin import, and the CLI's batch (one transaction each). */
export const IMPORT_MAX_MEMBERS = 1000;
/** contract.md#d29: the import call's own body limit: 1,000 members of about 2 KiB each. */
export const IMPORT_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

/** contract.md#d22: members per page of the admin's member list, by default and at most. */
export const MEMBER_PAGE_DEFAULT = 50;
export const MEMBER_PAGE_MAX = 100;
/** contract.md#d23: tenants per page of the operator's tenant list, by default and at most. */
export const TENANT_PAGE_DEFAULT = 50;
export const TENANT_PAGE_MAX = 200;
/** contract.md#d3: a tenant's recent webhook deliveries per page of the operator's list, by default and at most. */
export const DELIVERY_PAGE_DEFAULT = 50;
export const DELIVERY_PAGE_MAX = 200;
/** contract.md#d1: origins a tenant may list in `allowedOrigins`. */
export const MAX_ALLOWED_ORIGINS = 20;
/** contract.md#d23: a change to a tenant made by another instance or the CLI is seen within this long (the tenant cache). */
export const TENANT_CACHE_TTL_MS = 5 * SECOND;
/** contract.md#d14: SECRETS_KEY, the AES-256-GCM key that seals TOTP secrets and bot keys at rest, in bytes. */
export const SECRETS_KEY_BYTES = 32;
/** contract.md#d3, contract.md#d17: the shortest OPERATOR_API_KEY and METRICS_TOKEN. */
export const OPERATOR_SECRET_MIN_LENGTH = 32;

export interface RuleRow {
  rule: string;
  value: string;
  source: string;
}

/** "1 hour", "15 minutes", "7 days": for the table. */
export function describeDuration(ms: number): string {
  const units: [number, string][] = [
    [DAY, "day"],
    [HOUR, "hour"],
    [MINUTE, "minute"],
    [SECOND, "second"],
  ];
  for (const [size, name] of units) {
    if (ms % size === 0) return `${ms / size} ${name}${ms / size === 1 ? "" : "s"}`;
  }
  return `${ms} ms`;
}

/** "a minute", "an hour", "5 minutes": for "once a minute", "one request per 5 minutes". */
export function describeDurationAfterA(ms: number): string {
  const words = describeDuration(ms);
  if (!words.startsWith("1 ")) return words;
  const unit = words.slice(2);
  return `${unit.startsWith("hour") ? "an" : "a"} ${unit}`;
}

/** A rate rule's window after "per": "hour", "15 minutes". */
export function describeWindow(ms: number): string {
  return describeDuration(ms).replace(/^1 /, "");
}

const per = (rule: RateRule) => `${rule.limit} per ${describeWindow(rule.windowMs)}`;
const ips = (rule: { threshold: number; windowMs: number }) => `${rule.threshold} or more IPs in ${describeDuration(rule.windowMs)}`;

/**
 * The table of docs/limits.md, from the numbers above. Built in a function marked pure, so the
 * browser bundle, which imports a few numbers from this file, leaves the table out.
 */
export const RULE_TABLE: readonly RuleRow[] = /* @__PURE__ */ (() => [
  { rule: "Registrations per IP", value: per(rateRules.registerPerIp), source: "contract.md#spec-8-2" },
  { rule: "Registrations per email", value: per(rateRules.registerPerEmail), source: "contract.md#spec-8-2" },
  { rule: "IPs registering one email: logged, allowed", value: ips(distinctIpRules.registrationIpsPerEmail), source: "contract.md#spec-8-2" },
  { rule: "forgot-password requests per IP", value: per(rateRules.forgotPasswordPerIp), source: "contract.md#spec-8-2" },
  { rule: "request-magic-link requests per IP", value: per(rateRules.magicLinkPerIp), source: "contract.md#spec-8-2" },
  { rule: "IPs asking forgot-password for one email: refused", value: ips(distinctIpRules.forgotPasswordIpsPerEmail), source: "contract.md#spec-8-2" },
  { rule: "IPs asking request-magic-link for one email: refused", value: ips(distinctIpRules.magicLinkIpsPerEmail), source: "contract.md#spec-8-2" },
  { rule: "Magic links per email (cooldown)", value: per(rateRules.magicLinkCooldown), source: "contract.md#spec-8-2" },
  { rule: "Resend verification per IP", value: per(rateRules.resendVerificationPerIp), source: "contract.md#d15" },
  { rule: "Resend verification per email", value: per(rateRules.resendVerificationPerEmail), source: "contract.md#d15" },
  { rule: "Admin resend of verification per email", value: per(rateRules.adminResendPerEmail), source: "contract.md#spec-8-2" },
  { rule: "Bot challenges per IP", value: per(rateRules.botChallengePerIp), source: "contract.md#d10; the number is Latch's" },
  { rule: "Email change requests per member", value: per(rateRules.changeEmailPerMember), source: "contract.md#d24; the number is Latch's" },
  { rule: "Email code attempts per IP", value: per(rateRules.loginCodePerIp), source: "contract.md#d26; the number is Latch's" },
  { rule: "Email code attempts per email", value: per(rateRules.loginCodePerEmail), source: "contract.md#d26; the number is Latch's" },
  { rule: "Email codes compared per email (kept with RATE_LIMITS=off)", value: per(rateRules.loginCodeComparisons), source: "contract.md#d26" },
  { rule: "Passkey login options per IP", value: per(rateRules.passkeyLoginPerIp), source: "contract.md#d26; the number is Latch's" },
  { rule: "Federated sign-ins started per IP", value: per(rateRules.federatedStartPerIp), source: "contract.md#d27; the number is Latch's" },
  {
    rule: "Second-factor codes after a federated sign-in, per IP",
    value: per(rateRules.federatedSecondFactorPerIp),
    source: "contract.md#d27; the number is Latch's",
  },
  {
    rule: "IPs logging in to one account: logged as suspicious",
    value: ips(distinctIpRules.suspiciousLoginIps),
    source: "contract.md#spec-8-2, contract.md#d13",
  },
  {
    rule: "IPs logging in to one account: password login locked",
    value: `${ips(distinctIpRules.lockingLoginIps)}, locked ${describeDuration(VELOCITY_LOCKOUT_MS)}`,
    source: "contract.md#spec-8-2, contract.md#d13",
  },
  { rule: "Failed passwords before a lockout", value: String(FAILURES_BEFORE_LOCKOUT), source: "contract.md#spec-8-2, contract.md#d13" },
  {
    rule: "Password lockouts in turn (the last repeats)",
    value: LOCKOUT_DURATIONS_MS.map(describeDuration).join(", "),
    source: "contract.md#spec-8-2, contract.md#d13",
  },
  {
    rule: "A password check in flight counts as lost after",
    value: describeDuration(CHECK_ABANDONED_AFTER_MS),
    source: "contract.md#d20; the number is Latch's",
  },
  {
    rule: "A password check waits for its turn at most (then 503 unavailable)",
    value: describeDuration(CHECK_TURN_DEADLINE_MS),
    source: "contract.md#d30; the number is Latch's",
  },
  {
    rule: "Password checks of one email waiting at once per process (more: 503 unavailable)",
    value: String(MAX_CHECKS_WAITING_PER_EMAIL),
    source: "contract.md#d30; the number is Latch's",
  },
  {
    rule: "A waiting password check re-reads its email's lockout row every",
    value: describeDuration(CHECK_TURN_RECHECK_MS),
    source: "contract.md#d30; the number is Latch's",
  },
  {
    rule: "Failed second-factor codes before it locks",
    value: `${TWO_FACTOR_FAILURES_BEFORE_LOCKOUT}, locked ${describeDuration(TWO_FACTOR_LOCKOUT_MS)}`,
    source: "contract.md#spec-8-2, contract.md#d13",
  },
  {
    rule: "TOTP codes (RFC 6238)",
    value: `${TOTP_PARAMETERS.algorithm.replace("SHA", "SHA-")}, ${TOTP_PARAMETERS.digits} digits, ${TOTP_PARAMETERS.periodSeconds}-second steps, ±${TOTP_PARAMETERS.window} step, ${TOTP_PARAMETERS.secretBytes * 8}-bit secrets`,
    source: "contract.md#d14",
  },
  { rule: "Email verification link", value: describeDuration(TOKEN_LIFETIMES_MS.verify_email), source: "contract.md#spec-8-1, contract.md#d7" },
  {
    rule: "Magic login link (and its email code)",
    value: describeDuration(TOKEN_LIFETIMES_MS.magic_login),
    source: "contract.md#spec-8-1, contract.md#d7, contract.md#d26",
  },
  { rule: "Digits of the email code", value: String(LOGIN_CODE_DIGITS), source: "contract.md#d26" },
  {
    rule: "Password reset link",
    value: `${describeDuration(RESET_TOKEN_LIFETIME_MS.default)} by default; resetTokenTtlMinutes within ${describeDuration(RESET_TOKEN_LIFETIME_MS.min)}–${describeDuration(RESET_TOKEN_LIFETIME_MS.max)}`,
    source: "contract.md#spec-8-1, contract.md#d7",
  },
  { rule: "Email change link", value: describeDuration(TOKEN_LIFETIMES_MS.email_change), source: "contract.md#d24; the number is Latch's" },
  { rule: '"This wasn\'t me" link', value: describeDuration(TOKEN_LIFETIMES_MS.secure_account), source: "contract.md#d24; the number is Latch's" },
  {
    rule: "Session lifetime by sessionTier",
    value: Object.entries(sessionTiers)
      .map(([tier, seconds]) => `${tier} = ${describeDuration(seconds * SECOND)}`)
      .join(", "),
    source: "contract.md#spec-8-1, contract.md#d6",
  },
  {
    rule: "A session's last-seen time moves at most every",
    value: describeDuration(LAST_SEEN_RESOLUTION_MS),
    source: "contract.md#d24; the number is Latch's (contract.md#issue-14)",
  },
  {
    rule: "Re-authentication by a young session (member without a password)",
    value: `session at most ${describeDuration(FRESH_SESSION_MS)} old`,
    source: "contract.md#d24; the number is Latch's",
  },
  { rule: "A session's User-Agent is kept up to", value: `${SESSION_USER_AGENT_MAX_LENGTH} characters`, source: "contract.md#d24; the number is Latch's" },
  { rule: "Shortest password", value: `${PASSWORD_MIN_LENGTH} characters`, source: "contract.md#spec-8-3, contract.md#d12" },
  {
    rule: "Record ids (random, not sequential)",
    value: `10^${Math.log10(RECORD_ID_RANGE.min)} up to 2^${Math.log2(RECORD_ID_RANGE.max)}`,
    source: "contract.md#d8",
  },
  { rule: "Longest password", value: `${PASSWORD_MAX_LENGTH} characters`, source: "contract.md#d12" },
  { rule: "Longest email address", value: `${EMAIL_MAX_LENGTH} characters`, source: "contract.md#d8" },
  { rule: "A member's name", value: `1 to ${NAME_MAX_LENGTH} characters`, source: "contract.md#d8" },
  { rule: "Recovery codes in a set", value: String(RECOVERY_CODE_COUNT), source: "contract.md#d14" },
  { rule: "Characters of a recovery code", value: String(RECOVERY_CODE_LENGTH), source: "contract.md#d14; the number is Latch's" },
  { rule: "Passkey challenge", value: describeDuration(PASSKEY_CHALLENGE_LIFETIME_MS), source: "contract.md#d26; the number is Latch's" },
  { rule: "Federated sign-in in flight (the `latch_fed` cookie)", value: describeDuration(FEDERATION_FLOW_LIFETIME_MS), source: "contract.md#d27" },
  { rule: "Proof or second factor awaited after a federated callback", value: describeDuration(FEDERATION_PENDING_LIFETIME_MS), source: "contract.md#d27" },
  { rule: "Connections per tenant", value: String(MAX_CONNECTIONS_PER_TENANT), source: "contract.md#d27; the number is Latch's" },
  { rule: "OAuth clients per tenant", value: String(MAX_OAUTH_CLIENTS_PER_TENANT), source: "contract.md#d28; the number is Latch's" },
  { rule: "Timeout of each call to an identity provider", value: describeDuration(FEDERATION_REQUEST_TIMEOUT_MS), source: "contract.md#d27" },
  {
    rule: "A rotated-out token signing key stays in the JWKS (the longest token lifetime, plus the providers' key recheck)",
    value: describeDuration(RETIRED_SIGNING_KEY_KEPT_MS),
    source: "contract.md#d28",
  },
  {
    rule: "Session token (`POST /auth/session/token`), at most until its session ends",
    value: describeDuration(SESSION_TOKEN_LIFETIME_MS),
    source: "contract.md#d28",
  },
  { rule: "Passkeys per member", value: String(MAX_PASSKEYS_PER_MEMBER), source: "contract.md#d26; the number is Latch's" },
  { rule: "Longest passkey credential id", value: `${MAX_CREDENTIAL_ID_BYTES} bytes`, source: "contract.md#d26; WebAuthn Level 3" },
  { rule: "A passkey's name", value: `1 to ${PASSKEY_NAME_MAX_LENGTH} characters`, source: "contract.md#d26; the number is Latch's" },
  { rule: "ALTCHA challenge", value: describeDuration(ALTCHA_CHALLENGE_TTL_MS), source: "contract.md#d10; the number is Latch's" },
  {
    rule: "ALTCHA proof of work",
    value: `${ALTCHA_PROOF_OF_WORK.algorithm}, cost ${ALTCHA_PROOF_OF_WORK.cost}, counter ${ALTCHA_PROOF_OF_WORK.counterMin}–${ALTCHA_PROOF_OF_WORK.counterMax}`,
    source: "contract.md#d10; the numbers are Latch's",
  },
  {
    rule: "Webhook retries",
    value: `for ${describeDuration(WEBHOOK_RETRY_FOR_MS)}, from ${describeDuration(WEBHOOK_FIRST_RETRY_MS)} apart, tripling, at most ${describeDuration(WEBHOOK_MAX_RETRY_DELAY_MS)} apart`,
    source: "contract.md#d9 (at least 24 hours, 10 s per attempt); the steps are Latch's",
  },
  { rule: "A webhook attempt without an answer fails after", value: describeDuration(WEBHOOK_ATTEMPT_TIMEOUT_MS), source: "contract.md#d9" },
  {
    rule: "After a webhook secret rotation, deliveries are signed with the old secret too for",
    value: describeDuration(WEBHOOK_SECRET_ROTATION_WINDOW_MS),
    source: "contract.md#d9; the number is Latch's (as long as the retries)",
  },
  { rule: "Finished webhook deliveries and idle lockout rows kept", value: describeDuration(RETENTION_MS), source: "contract.md#d25; the number is Latch's" },
  {
    rule: "Audit events kept (AUDIT_RETENTION_DAYS)",
    value: `${DEFAULT_AUDIT_RETENTION_DAYS} days by default; 1–${MAX_AUDIT_RETENTION_DAYS}`,
    source: "contract.md#d25; the bounds are Latch's",
  },
  {
    rule: "Pending accounts erased after their last link expired (PENDING_RETENTION_DAYS)",
    value: `${DEFAULT_PENDING_RETENTION_DAYS} days by default; 1–${MAX_PENDING_RETENTION_DAYS}`,
    source: "contract.md#d25; the bounds are Latch's",
  },
  {
    rule: "The sweeper erases what is kept no longer every",
    value: describeDuration(RETENTION_SWEEP_INTERVAL_MS),
    source: "contract.md#d25; the number is Latch's",
  },
  { rule: "A login origin (network, country) is forgotten after", value: describeDuration(ORIGIN_MEMORY_MS), source: "contract.md#d16; the number is Latch's" },
  {
    rule: "A pending registration is remembered after its link expired",
    value: describeDuration(REGISTRATION_MEMORY_MS),
    source: "contract.md#d18; the number is Latch's",
  },
  { rule: "Largest request body (more: 413 payload_too_large)", value: `${BODY_LIMIT_BYTES / 1024} KiB`, source: "contract.md#d4" },
  {
    rule: "Members imported per call (more: 400 validation_failed); the import's body limit",
    value: `${IMPORT_MAX_MEMBERS}; ${IMPORT_BODY_LIMIT_BYTES / 1024 / 1024} MiB`,
    source: "contract.md#d29; the body limit is Latch's",
  },
  {
    rule: "Costliest foreign hash imported (more: refused hash_cost_too_high)",
    value: `bcrypt cost ${FOREIGN_HASH_LIMITS.bcryptCost}; scrypt N 2^${FOREIGN_HASH_LIMITS.scryptLogN}, 128·N·r ≤ 1 GiB; PBKDF2 ${FOREIGN_HASH_LIMITS.pbkdf2Iterations.toLocaleString("en")} iterations; Argon2 m ${FOREIGN_HASH_LIMITS.argon2MemoryKiB} KiB, t ${FOREIGN_HASH_LIMITS.argon2Time}, p ${FOREIGN_HASH_LIMITS.argon2Parallelism}`,
    source: "contract.md#d29; Argon2's and scrypt's memory are Latch's (decisions.md#importing-members)",
  },
  { rule: "Longest URL (more: 414)", value: `${MAX_URL_LENGTH} characters`, source: "contract.md#d21; the number is Latch's" },
  {
    rule: "Longest tenant domain, and so the longest path parameter (more: 414)",
    value: `${MAX_PATH_PARAM_LENGTH} characters`,
    source: "contract.md#d1, contract.md#d21; RFC 1035",
  },
  { rule: "Deepest JSON body (more: 400 validation_failed)", value: `${MAX_BODY_DEPTH} levels`, source: "contract.md#d30; the number is Latch's" },
  { rule: "Members per page of the admin's list", value: `${MEMBER_PAGE_DEFAULT} by default, at most ${MEMBER_PAGE_MAX}`, source: "contract.md#d22" },
  {
    rule: "Tenants per page of the operator's list",
    value: `${TENANT_PAGE_DEFAULT} by default, at most ${TENANT_PAGE_MAX}`,
    source: "contract.md#d23; the numbers are Latch's",
  },
  {
    rule: "Recent webhook deliveries per page of the operator's list",
    value: `${DELIVERY_PAGE_DEFAULT} by default, at most ${DELIVERY_PAGE_MAX}`,
    source: "contract.md#d3; the numbers are Latch's",
  },
  { rule: "Origins a tenant may list in allowedOrigins", value: String(MAX_ALLOWED_ORIGINS), source: "contract.md#d1; the number is Latch's" },
  {
    rule: "A tenant changed elsewhere (another instance, the CLI) is seen within",
    value: describeDuration(TENANT_CACHE_TTL_MS),
    source: "contract.md#d23; the number is Latch's",
  },
  { rule: "SECRETS_KEY (AES-256-GCM)", value: `${SECRETS_KEY_BYTES} bytes`, source: "contract.md#d14" },
  {
    rule: "Shortest OPERATOR_API_KEY and METRICS_TOKEN",
    value: `${OPERATOR_SECRET_MIN_LENGTH} characters`,
    source: "contract.md#d3, contract.md#d17; the number is Latch's",
  },
])();

/**
 * `contract.md#d13` and the like (how code cites docs/contract.md) as Markdown links for a page of
 * docs/, named as a reader knows them: `[contract.md#d13](contract.md#d13)`, `[contract.md#spec-8-2](contract.md#spec-8-2)`.
 */
export function linkCitations(text: string): string {
  return text.replace(/\bcontract\.md#(?:d(\d+)|spec-(\d+(?:-\d+)?)|issue-(\d+))\b/g, (citation, decision?: string, section?: string, issue?: string) => {
    const label = decision ? `D${decision}` : section ? `spec ${section.replace("-", ".")}` : `issue ${issue}`;
    return `[${label}](${citation})`;
  });
}

/** docs/limits.md, whole. */
export function renderLimitsDocument(): string {
  const rows = RULE_TABLE.map((r) => `| ${r.rule} | ${r.value} | ${linkCitations(r.source)} |`);
  return [
    "# Limits",
    "",
    "Every number a rule of Latch is made of, with the point of the interface spec or of DECISIONS it implements ([contract](contract.md)).",
    "Generated from `src/rules.ts` by `npm run docs`; `test/rules.test.ts` fails when this file and the code disagree.",
    "Change a number there, never here.",
    "",
    "| Rule | Value | Source |",
    "|---|---|---|",
    ...rows,
    "",
  ].join("\n");
}
