/**
 * createDeps: config -> Deps, once per process (and per test harness). It sits above the flows in
 * the layers because it wires one of them, the email worker, into the webhook dispatcher.
 */
import { OpenIdUpstream } from "./providers/upstream.js";
import { createGuardedFetch } from "./security/outbound.js";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { ConfigError, StartError, type Config } from "./config.js";
import { systemClock, type Clock } from "./core/clock.js";
import { cryptoRandom, type Random } from "./core/random.js";
import type { Deps, DevLinks } from "./deps.js";
import { BackgroundTasks } from "./events/background.js";
import { WebhookDispatcher } from "./events/dispatcher.js";
import { ReadinessNotice } from "./store/readiness-notice.js";
import { processEmailRequests } from "./flows/kernel/email-requests.js";
import { createAltchaProvider, DEFAULT_ALTCHA_DIFFICULTY, type AltchaDifficulty } from "./providers/altcha.js";
import { createBotVerifier, type BotVerifier } from "./providers/bot.js";
import { openGeoLocator } from "./providers/geoip.js";
import { createBreachChecker } from "./providers/breach.js";
import { createPasswordHasher, type PasswordHasher } from "./security/password.js";
import { createSecretBox, type SecretBox } from "./security/secret-box.js";
import { keyedSubjectHasher } from "./security/hashing.js";
import { describeDatabase, migrateToLatest, openDatabase, type OpenedDatabase } from "./store/database.js";
import { asStartError } from "./start-up.js";
import { Store } from "./store/index.js";
import { SessionTouches } from "./store/session-touches.js";
import { FEDERATION_REQUEST_TIMEOUT_MS, LAST_SEEN_RESOLUTION_MS, SECRETS_KEY_BYTES } from "./rules.js";
import { RedisCounters } from "./store/redis-counters.js";
import { createLogger } from "./logging.js";
import { Metrics } from "./metrics.js";
import { TenantCache } from "./store/tenant-cache.js";

export interface DepsOverrides {
  /** Dev mode's links (src/dev/main.ts and the test harness pass one when DEV_MODE=true). */
  dev?: DevLinks;
  clock?: Clock;
  random?: Random;
  log?: Logger;
  hasher?: PasswordHasher;
  bot?: BotVerifier;
  /** Tests lower the proof-of-work cost; production keeps altcha-lib's recommended one. */
  altchaDifficulty?: AltchaDifficulty;
  /** Run pending migrations now; defaults to MIGRATE_ON_START (`latch migrate` forces it). */
  migrate?: boolean;
}

/** SECRETS_KEY, or a key generated once into the data directory (contract.md#d14), with a warning. */
function loadSecretsKey(config: Config, dataDir: string, random: Random, log: Logger): Buffer {
  if (config.secretsKey) return config.secretsKey;
  const file = join(dataDir, "secrets.key");
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, random.bytes(SECRETS_KEY_BYTES).toString("hex") + "\n", { mode: 0o600, flag: "wx" });
    log.warn({ file }, "SECRETS_KEY is not set: generated a key into the data directory; back it up with the database");
  }
  return Buffer.from(readFileSync(file, "utf8").trim(), "hex");
}

/** The box seals with the current key and also opens with SECRETS_KEY_PREVIOUS during a rotation. */
function openSecretBox(config: Config, key: Buffer, random: Random, log: Logger): SecretBox {
  // config.ts catches this when SECRETS_KEY is set; the generated key file is only known here.
  if (config.secretsKeyPrevious.some((k) => k.equals(key))) throw new ConfigError(["SECRETS_KEY_PREVIOUS must not contain the current key (secrets.key)"]);
  if (config.secretsKeyPrevious.length > 0) {
    log.info(
      { previousKeys: config.secretsKeyPrevious.length },
      "SECRETS_KEY_PREVIOUS is set: values sealed under it still open; run `latch secrets reseal`, then remove it",
    );
  }
  return createSecretBox(key, random, config.secretsKeyPrevious);
}

export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const clock = overrides.clock ?? systemClock;
  const random = overrides.random ?? cryptoRandom;
  const log = overrides.log ?? createLogger(config.logLevel);
  const database = describeDatabase(config.databaseUrl);
  let opened: OpenedDatabase;
  try {
    opened = openDatabase(config.databaseUrl, {
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeoutMs,
      onConnectionError: (err) => log.warn({ err }, "database connection lost; the pool will reconnect"),
    });
  } catch (err) {
    throw asStartError(err, `the database (${database})`);
  }
  const { db, dialect, reader, dataDir } = opened;
  let redis: RedisCounters | undefined;
  let secrets: SecretBox;
  try {
    secrets = openSecretBox(config, loadSecretsKey(config, dataDir, random, log), random, log);
    if (overrides.migrate ?? config.migrateOnStart)
      await migrateToLatest(db).catch((err: unknown) => Promise.reject(asStartError(err, `the database (${database})`)));
    if (config.redisUrl) {
      redis = await RedisCounters.connect({
        url: config.redisUrl,
        keyPrefix: config.redisKeyPrefix,
        commandTimeoutMs: config.redisCommandTimeoutMs,
        onConnectionError: (err) => log.warn({ err }, "Redis connection lost; reconnecting"),
      }).catch((err: unknown) =>
        Promise.reject(
          new StartError(`cannot reach Redis (REDIS_URL): ${((err as Error).cause as Error | undefined)?.message ?? (err as Error).message}`, { cause: err }),
        ),
      );
    }
  } catch (err) {
    await db.destroy(); // an open pool would keep the process alive after the failure
    reader?.close();
    throw err;
  }
  const subjects = keyedSubjectHasher(secrets.deriveSecret("lockout-and-limit-subjects"));
  const touches = new SessionTouches(
    db,
    (err) => log.warn({ err }, "writing sessions' last-seen times failed; kept for the next try"),
    LAST_SEEN_RESOLUTION_MS,
  );
  const store = new Store(db, dialect, reader, subjects, touches);
  const counters = redis ?? store.limits;
  const readiness = new ReadinessNotice(log);
  const metrics = new Metrics({ countOutboxBacklog: () => store.outbox.countPendingDeliveries(), log });
  const altcha = createAltchaProvider({
    signatureSecret: secrets.deriveSecret("altcha-challenge"),
    keySignatureSecret: secrets.deriveSecret("altcha-key"),
    difficulty: overrides.altchaDifficulty ?? DEFAULT_ALTCHA_DIFFICULTY,
    random,
    claimOnce: (tenantId, challengeId, expiresAt, now) => counters.claimOnce(tenantId, "altcha_solved", challengeId, expiresAt, now),
  });
  const deps: Deps = {
    config,
    clock,
    random,
    log,
    store,
    counters,
    redis,
    readiness,
    tenantCache: new TenantCache(store.tenants, clock),
    hasher: overrides.hasher ?? createPasswordHasher(),
    breach: createBreachChecker({ mode: config.breachCheckMode, url: config.breachCheckUrl, log }),
    bot: overrides.bot ?? createBotVerifier({ log, altcha, secrets, allowPrivateNetworks: config.webhookAllowPrivateNetworks }),
    secrets,
    subjects,
    altcha,
    background: new BackgroundTasks(log),
    geo: await openGeoLocator(config.geoipDb),
    metrics,
    webhooks: new WebhookDispatcher({
      store,
      clock,
      random,
      secrets,
      log,
      readiness,
      metrics,
      allowPrivateNetworks: config.webhookAllowPrivateNetworks,
      beforePass: () => processEmailRequests(deps),
    }),
    upstream: new OpenIdUpstream(createGuardedFetch({ allowPrivateNetworks: config.webhookAllowPrivateNetworks, timeoutMs: FEDERATION_REQUEST_TIMEOUT_MS }), {
      // Plain-http providers only where private networks are open: dev mode's own /dev/idp and tests.
      allowInsecureRequests: config.webhookAllowPrivateNetworks,
      timeoutSeconds: FEDERATION_REQUEST_TIMEOUT_MS / 1000,
      now: () => clock.now(),
    }),
    dev: overrides.dev,
  };
  return deps;
}
