/**
 * Shared counters for the abuse limits: fixed-window hit counters, distinct-member sets and
 * claim-once marks. Two twins keep them: the SQL store (LimitStore, the default) and Redis
 * (RedisCounters, when REDIS_URL is set). Both take `now` from the caller, so windows follow the
 * injected clock, and both are atomic across instances.
 */
export interface CounterHit {
  count: number;
  windowEndsAt: number;
}

export interface Counters {
  /** Counts one hit in a fixed window that starts at the first hit; an expired window restarts. */
  hitCounter(tenantId: string, key: string, windowMs: number, now: number): Promise<CounterHit>;
  /**
   * Adds `member` to the set under `key` for `windowMs` from now (a member seen again is kept
   * longer) and returns how many distinct live members the set holds.
   */
  addToSet(tenantId: string, key: string, member: string, windowMs: number, now: number): Promise<number>;
  /** Records `member` under `key` until `expiresAt`; false when it is already there (a replay). */
  claimOnce(tenantId: string, key: string, member: string, expiresAt: number, now: number): Promise<boolean>;
}
