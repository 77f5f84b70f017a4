/** Environment -> typed, validated, frozen Config (contract.md#d17). Every bad variable gets its own message. */
import { DEFAULT_BREACH_CHECK_URL, type BreachCheckMode } from "./providers/breach.js";
import {
  DEFAULT_AUDIT_RETENTION_DAYS,
  DEFAULT_PENDING_RETENTION_DAYS,
  MAX_AUDIT_RETENTION_DAYS,
  MAX_PENDING_RETENTION_DAYS,
  OPERATOR_SECRET_MIN_LENGTH,
  SECRETS_KEY_BYTES,
} from "./rules.js";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** Rate-limit counters, cooldowns and ALTCHA replay marks go to Redis when set (else the database). */
  redisUrl: string | undefined;
  /** Prefix of every Redis key, so environments can share one Redis. */
  redisKeyPrefix: string;
  /** A Redis command not answered in this time fails the request with 503 unavailable. */
  redisCommandTimeoutMs: number;
  /** Apply pending migrations at start (default), or leave that to `latch migrate`. */
  migrateOnStart: boolean;
  /** RATE_LIMITS=off lifts the request-rate rows of contract.md#spec-8-2 (for benchmarks); lockouts stay. */
  rateLimits: boolean;
  /** PostgreSQL only: connections per instance, and the cap on any one statement. */
  databasePoolSize: number;
  /** Audit events older than this are deleted by the sweeper. */
  auditRetentionDays: number;
  /** contract.md#d25: a pending account is erased this long after its last verification link expired. */
  pendingRetentionDays: number;
  databaseStatementTimeoutMs: number;
  operatorApiKey: string | undefined;
  /** Bearer token of GET /metrics; without it /metrics answers 404. */
  metricsToken: string | undefined;
  /** Fastify trustProxy value: false, or the proxies (IPs/CIDRs) whose X-Forwarded-For we believe. */
  trustProxy: false | string[];
  breachCheckUrl: string;
  breachCheckMode: BreachCheckMode;
  geoipDb: string | undefined;
  logLevel: string;
  webhookAllowPrivateNetworks: boolean;
  /** 32 bytes, or undefined: then a key is generated into the data directory (contract.md#d14). */
  secretsKey: Buffer | undefined;
  /** SECRETS_KEY_PREVIOUS: old keys, used only to open what they sealed until `latch secrets reseal` ran. */
  secretsKeyPrevious: Buffer[];
  /** DEV_MODE=true (`npm run dev`): a `localhost` tenant and the dev inbox (src/dev/); SQLite only. */
  devMode: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join("\n  - ")}`);
    this.name = "ConfigError";
  }
}

/** Something outside Latch stops the start (a busy port, a database out of reach): one line, exit 1, no stack. */
export class StartError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "StartError";
  }
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

const SECRETS_KEY_HEX = new RegExp(`^[0-9a-fA-F]{${2 * SECRETS_KEY_BYTES}}$`);

/** SECRETS_KEY_BYTES, as hex or base64; a problem is recorded otherwise (the value never appears in it). */
function parseSecretsKey(name: string, value: string, problems: string[]): Buffer {
  const key = SECRETS_KEY_HEX.test(value) ? Buffer.from(value, "hex") : Buffer.from(value, "base64");
  if (key.length !== SECRETS_KEY_BYTES) problems.push(`${name} must be ${SECRETS_KEY_BYTES} bytes, as ${2 * SECRETS_KEY_BYTES} hex characters or base64`);
  return key;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === "" ? undefined : value;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const value = text(name) ?? fallback;
    if (!allowed.includes(value as T)) problems.push(`${name} must be one of ${allowed.join(", ")} (got "${value}")`);
    return value as T;
  };

  const portText = text("PORT") ?? "8080";
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) problems.push(`PORT must be an integer 0-65535 (got "${portText}")`);

  // Dev mode keeps its own SQLite file and stays on loopback unless told otherwise (src/dev/).
  const devMode = oneOf("DEV_MODE", ["true", "false"], "false") === "true";
  const databaseUrl = text("DATABASE_URL") ?? (devMode ? "sqlite:./data/dev.db" : "sqlite:./data/latch.db");
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) problems.push("DATABASE_URL must start with sqlite: or postgres://");

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = text(name);
    const value = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) problems.push(`${name} must be an integer ${min}-${max} (got "${raw}")`);
    return value;
  };
  const databasePoolSize = integer("DATABASE_POOL_SIZE", 10, 1, 500);
  const databaseStatementTimeoutMs = integer("DATABASE_STATEMENT_TIMEOUT_MS", 5000, 100, 600_000);
  const auditRetentionDays = integer("AUDIT_RETENTION_DAYS", DEFAULT_AUDIT_RETENTION_DAYS, 1, MAX_AUDIT_RETENTION_DAYS);
  const pendingRetentionDays = integer("PENDING_RETENTION_DAYS", DEFAULT_PENDING_RETENTION_DAYS, 1, MAX_PENDING_RETENTION_DAYS);

  const breachCheckUrl = text("BREACH_CHECK_URL") ?? DEFAULT_BREACH_CHECK_URL;
  if (!URL.canParse(breachCheckUrl)) problems.push("BREACH_CHECK_URL must be a URL");

  const operatorApiKey = text("OPERATOR_API_KEY");
  const tooShort = (secret: string | undefined) => secret !== undefined && secret.length < OPERATOR_SECRET_MIN_LENGTH;
  if (tooShort(operatorApiKey)) problems.push(`OPERATOR_API_KEY must be at least ${OPERATOR_SECRET_MIN_LENGTH} characters`);
  const metricsToken = text("METRICS_TOKEN");
  if (tooShort(metricsToken)) problems.push(`METRICS_TOKEN must be at least ${OPERATOR_SECRET_MIN_LENGTH} characters`);

  const allowPrivate = oneOf("WEBHOOK_ALLOW_PRIVATE_NETWORKS", ["true", "false"], devMode ? "true" : "false");
  if (devMode && /^postgres/.test(databaseUrl))
    problems.push("DEV_MODE=true is refused with a PostgreSQL DATABASE_URL: dev mode is for a local SQLite file, never production");

  const secretsKeyText = text("SECRETS_KEY");
  const secretsKey = secretsKeyText === undefined ? undefined : parseSecretsKey("SECRETS_KEY", secretsKeyText, problems);
  const secretsKeyPrevious = (text("SECRETS_KEY_PREVIOUS") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((value, i) => parseSecretsKey(`SECRETS_KEY_PREVIOUS (key ${i + 1})`, value, problems));
  // The usual slip is setting the old key in both: nothing would be rotated, so refuse it.
  if (secretsKey && secretsKeyPrevious.some((k) => k.equals(secretsKey)))
    problems.push("SECRETS_KEY_PREVIOUS must not contain SECRETS_KEY itself: set SECRETS_KEY to the new key and the old one here");

  const redisUrl = text("REDIS_URL");
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) problems.push("REDIS_URL must start with redis:// or rediss://");
  const redisCommandTimeoutMs = integer("REDIS_COMMAND_TIMEOUT_MS", 1000, 50, 60_000);
  const migrateOnStart = oneOf("MIGRATE_ON_START", ["true", "false"], "true");
  // Instances of one PostgreSQL must seal and open with the same key; a key generated per host
  // would make each instance unable to read what another sealed (decisions.md#known-gaps--next-issues, row 11).
  if (/^postgres/.test(databaseUrl) && secretsKey === undefined)
    problems.push("SECRETS_KEY is required when DATABASE_URL is PostgreSQL: every instance and the CLI must share one key");

  const trustProxyText = text("TRUST_PROXY");
  const trustProxy =
    trustProxyText === undefined
      ? false
      : trustProxyText
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);

  const config: Config = {
    port,
    host: text("HOST") ?? (devMode ? "127.0.0.1" : "0.0.0.0"),
    databaseUrl,
    redisUrl,
    redisKeyPrefix: text("REDIS_KEY_PREFIX") ?? "latch:",
    redisCommandTimeoutMs,
    migrateOnStart: migrateOnStart === "true",
    rateLimits: oneOf("RATE_LIMITS", ["on", "off"], "on") === "on",
    databasePoolSize,
    databaseStatementTimeoutMs,
    auditRetentionDays,
    pendingRetentionDays,
    operatorApiKey,
    metricsToken,
    trustProxy,
    breachCheckUrl,
    breachCheckMode: oneOf("BREACH_CHECK_MODE", ["remote", "offline", "off"] as const, "remote"),
    geoipDb: text("GEOIP_DB"),
    logLevel: oneOf("LOG_LEVEL", LOG_LEVELS, "info"),
    webhookAllowPrivateNetworks: allowPrivate === "true",
    secretsKey,
    secretsKeyPrevious,
    devMode,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}
