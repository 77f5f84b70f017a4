/**
 * The Redis twin of the SQL counters (REDIS_URL): rate-limit windows, distinct-IP sets and
 * ALTCHA replay marks. Each operation is one Lua script on one key, so it is atomic on the server
 * and safe on Redis Cluster. Windows are computed from the caller's `now` (the injected clock),
 * exactly as the SQL twin does; Redis' own expiry only reclaims memory after the window.
 *
 * Failure: no offline queue and a command timeout, so with Redis unreachable a request fails at
 * once with 503 unavailable instead of waiting; a timed-out connection is dropped and rebuilt, so
 * service resumes by itself when Redis is back.
 */
import { Redis, type Result } from "ioredis";
import type { CounterHit, Counters } from "./counters.js";

/** KEYS[1] hash {c: count, e: window end}; ARGV now, windowMs. Returns {count, windowEndsAt}. */
const HIT = `
local now = tonumber(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 'c', 'e')
local count, ends = 1, now + tonumber(ARGV[2])
if state[2] and tonumber(state[2]) > now then
  count, ends = tonumber(state[1]) + 1, tonumber(state[2])
end
redis.call('HSET', KEYS[1], 'c', count, 'e', ends)
redis.call('PEXPIRE', KEYS[1], math.max(1, ends - now))
return {count, ends}`;

/** KEYS[1] sorted set member -> expiry; ARGV now, windowMs, member. Returns live members. */
const ADD_TO_SET = `
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return redis.call('ZCARD', KEYS[1])`;

/** KEYS[1] string holding the mark's expiry; ARGV now, expiresAt. 1 when claimed, 0 on a replay. */
const CLAIM_ONCE = `
local now = tonumber(ARGV[1])
local held = redis.call('GET', KEYS[1])
if held and tonumber(held) > now then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', math.max(1, tonumber(ARGV[2]) - now))
return 1`;

declare module "ioredis" {
  interface RedisCommander<Context> {
    latchHit(key: string, now: number, windowMs: number): Result<[number, number], Context>;
    latchAddToSet(key: string, now: number, windowMs: number, member: string): Result<number, Context>;
    latchClaimOnce(key: string, now: number, expiresAt: number): Result<number, Context>;
  }
}

/** Redis failed or is unreachable: the HTTP layer answers 503 unavailable. */
export class RedisUnavailableError extends Error {
  readonly code = "REDIS_UNAVAILABLE";
  constructor(cause: unknown) {
    super("Redis is unavailable", { cause });
    this.name = "RedisUnavailableError";
  }
}

export interface RedisCountersOptions {
  url: string;
  keyPrefix: string;
  commandTimeoutMs: number;
  onConnectionError?: (err: Error) => void;
}

export class RedisCounters implements Counters {
  private readonly client: Redis;

  private constructor(options: RedisCountersOptions) {
    this.client = new Redis(options.url, {
      keyPrefix: options.keyPrefix,
      lazyConnect: true,
      enableOfflineQueue: false,
      commandTimeout: options.commandTimeoutMs,
      connectTimeout: options.commandTimeoutMs,
      maxRetriesPerRequest: 0,
      retryStrategy: (attempt) => Math.min(50 * attempt, 1000),
      scripts: {
        latchHit: { numberOfKeys: 1, lua: HIT },
        latchAddToSet: { numberOfKeys: 1, lua: ADD_TO_SET },
        latchClaimOnce: { numberOfKeys: 1, lua: CLAIM_ONCE },
      },
    });
    // Without a listener an 'error' event would crash the process; reconnecting is automatic.
    this.client.on("error", (err: Error) => options.onConnectionError?.(err));
  }

  /** Connects before the first request, so a wrong REDIS_URL stops the start-up. */
  static async connect(options: RedisCountersOptions): Promise<RedisCounters> {
    const counters = new RedisCounters(options);
    try {
      await counters.client.connect();
    } catch (err) {
      counters.client.disconnect();
      throw new Error(`Redis at REDIS_URL cannot be reached: ${(err as Error).message}`, { cause: err });
    }
    return counters;
  }

  private static key(tenantId: string, key: string): string {
    return `${tenantId}:${key}`;
  }

  async hitCounter(tenantId: string, key: string, windowMs: number, now: number): Promise<CounterHit> {
    const [count, windowEndsAt] = await this.run(() => this.client.latchHit(RedisCounters.key(tenantId, key), now, windowMs));
    return { count: Number(count), windowEndsAt: Number(windowEndsAt) };
  }

  async addToSet(tenantId: string, key: string, member: string, windowMs: number, now: number): Promise<number> {
    return Number(await this.run(() => this.client.latchAddToSet(RedisCounters.key(tenantId, key), now, windowMs, member)));
  }

  async claimOnce(tenantId: string, key: string, member: string, expiresAt: number, now: number): Promise<boolean> {
    const claimed = await this.run(() => this.client.latchClaimOnce(RedisCounters.key(tenantId, `${key}:${member}`), now, expiresAt));
    return Number(claimed) === 1;
  }

  /** Readiness: Redis answers. */
  async isReady(): Promise<boolean> {
    return (await this.run(() => this.client.ping())) === "PONG";
  }

  close(): Promise<void> {
    this.client.disconnect();
    return Promise.resolve();
  }

  private async run<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      if (err instanceof Error && err.name === "ReplyError") throw err; // the server refused a script: a bug, not an outage
      // A command that timed out may sit on a black-holed connection: drop it and reconnect.
      if (err instanceof Error && /timed out/i.test(err.message)) this.client.disconnect(true);
      throw new RedisUnavailableError(err);
    }
  }
}
