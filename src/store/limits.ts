import type { Kysely } from "kysely";
import type { Database, LoginLockoutsTable } from "./schema.js";
import type { LockoutState } from "../security/lockout.js";
import type { SubjectHasher } from "../security/hashing.js";
import type { CounterHit, Counters } from "./counters.js";

const lockoutColumns = ["failures", "level", "locked_until", "in_flight", "in_flight_until"] as const;

function toLockoutState(row: Pick<LoginLockoutsTable, (typeof lockoutColumns)[number]>): LockoutState {
  return {
    failures: Number(row.failures),
    level: Number(row.level),
    lockedUntil: Number(row.locked_until),
    inFlight: Number(row.in_flight),
    inFlightUntil: Number(row.in_flight_until),
  };
}

/** Counters for rate limits (the SQL twin of RedisCounters) and the per-email login lockout state. */
export class LimitStore implements Counters {
  constructor(
    private readonly db: Kysely<Database>,
    /** contract.md#d25: lockout rows are keyed by this hash of the email, never the email. */
    private readonly subjects: SubjectHasher,
  ) {}

  /**
   * Counts one hit in a fixed window, atomically: the upsert restarts an expired window and
   * increments a live one in a single statement, so concurrent requests never lose a count. The
   * times go in as parameters (`eb.val`): Kysely writes a bare `then(value)` into the SQL text, which
   * made every call a new statement to compile (test/statement-texts.test.ts).
   */
  async hitCounter(tenantId: string, key: string, windowMs: number, now: number): Promise<CounterHit> {
    const row = await this.db
      .insertInto("rate_limit_counters")
      .values({ tenant_id: tenantId, key, window_start: now, count: 1, expires_at: now + windowMs })
      .onConflict((oc) =>
        oc.columns(["tenant_id", "key"]).doUpdateSet((eb) => {
          const expired = eb("rate_limit_counters.expires_at", "<=", now);
          return {
            count: eb
              .case()
              .when(expired)
              .then(eb.val(1))
              .else(eb("rate_limit_counters.count", "+", 1))
              .end(),
            window_start: eb.case().when(expired).then(eb.val(now)).else(eb.ref("rate_limit_counters.window_start")).end(),
            expires_at: eb
              .case()
              .when(expired)
              .then(eb.val(now + windowMs))
              .else(eb.ref("rate_limit_counters.expires_at"))
              .end(),
          };
        }),
      )
      .returning(["count", "expires_at"])
      .executeTakeFirstOrThrow();
    return { count: Number(row.count), windowEndsAt: Number(row.expires_at) };
  }

  async deleteExpiredCounters(now: number): Promise<void> {
    await this.db.deleteFrom("rate_limit_counters").where("expires_at", "<=", now).execute();
    await this.db.deleteFrom("rate_limit_sets").where("expires_at", "<=", now).execute();
  }

  async addToSet(tenantId: string, key: string, member: string, windowMs: number, now: number): Promise<number> {
    await this.db
      .insertInto("rate_limit_sets")
      .values({ tenant_id: tenantId, key, member, expires_at: now + windowMs })
      .onConflict((oc) => oc.columns(["tenant_id", "key", "member"]).doUpdateSet({ expires_at: now + windowMs }))
      .execute();
    const row = await this.db
      .selectFrom("rate_limit_sets")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("tenant_id", "=", tenantId)
      .where("key", "=", key)
      .where("expires_at", ">", now)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** An expired mark is taken over in the same statement, as the Redis twin does. */
  async claimOnce(tenantId: string, key: string, member: string, expiresAt: number, now: number): Promise<boolean> {
    const row = await this.db
      .insertInto("rate_limit_sets")
      .values({ tenant_id: tenantId, key, member, expires_at: expiresAt })
      .onConflict((oc) => oc.columns(["tenant_id", "key", "member"]).doUpdateSet({ expires_at: expiresAt }).where("rate_limit_sets.expires_at", "<=", now))
      .returning("member")
      .executeTakeFirst();
    return row !== undefined;
  }

  /** A lockout record with no failure for the retention period is forgotten, escalation included. */
  async deleteIdleLockouts(idleSince: number, now: number): Promise<void> {
    await this.db.deleteFrom("login_lockouts").where("updated_at", "<", idleSince).where("locked_until", "<=", now).execute();
  }

  /**
   * Reads the lockout state and locks its row for the rest of the transaction (creating it when
   * absent): on PostgreSQL the upsert holds a row lock, so concurrent attempts on one email queue
   * instead of losing each other's failure counts; SQLite serialises writers anyway.
   */
  async lockLockout(tenantId: string, email: string, now: number): Promise<LockoutState> {
    const row = await this.db
      .insertInto("login_lockouts")
      .values({ tenant_id: tenantId, subject: this.subjects(email), failures: 0, level: 0, locked_until: 0, in_flight: 0, in_flight_until: 0, updated_at: now })
      .onConflict((oc) => oc.columns(["tenant_id", "subject"]).doUpdateSet((eb) => ({ updated_at: eb.ref("login_lockouts.updated_at") })))
      .returning(lockoutColumns)
      .executeTakeFirstOrThrow();
    return toLockoutState(row);
  }

  /** A password check ended without a verdict: its place is given back, no failure counted (one statement, atomic). */
  async releaseCheckInFlight(tenantId: string, email: string, now: number): Promise<void> {
    await this.db
      .updateTable("login_lockouts")
      .set((eb) => ({ in_flight: eb("in_flight", "-", 1), updated_at: now }))
      .where("tenant_id", "=", tenantId)
      .where("subject", "=", this.subjects(email))
      .where("in_flight", ">", 0)
      .execute();
  }

  async findLockout(tenantId: string, email: string): Promise<LockoutState | undefined> {
    const row = await this.db
      .selectFrom("login_lockouts")
      .select(lockoutColumns)
      .where("tenant_id", "=", tenantId)
      .where("subject", "=", this.subjects(email))
      .executeTakeFirst();
    return row && toLockoutState(row);
  }

  async saveLockout(tenantId: string, email: string, state: LockoutState, now: number): Promise<void> {
    const values = {
      failures: state.failures,
      level: state.level,
      locked_until: state.lockedUntil,
      in_flight: state.inFlight,
      in_flight_until: state.inFlightUntil,
      updated_at: now,
    };
    await this.db
      .insertInto("login_lockouts")
      .values({ tenant_id: tenantId, subject: this.subjects(email), ...values })
      .onConflict((oc) => oc.columns(["tenant_id", "subject"]).doUpdateSet(values))
      .execute();
  }

  /** Success or a password reset clears count and escalation (contract.md#d13). */
  async clearLockout(tenantId: string, email: string): Promise<void> {
    await this.db.deleteFrom("login_lockouts").where("tenant_id", "=", tenantId).where("subject", "=", this.subjects(email)).execute();
  }

  /**
   * contract.md#d25: lockout rows written before migration 0011 hold the email itself; each is re-keyed to its
   * hash (or dropped when a hashed row for the email exists already). Returns how many were re-keyed.
   */
  async rekeyClearLockouts(): Promise<number> {
    const rows = await this.db.selectFrom("login_lockouts").select(["tenant_id", "subject"]).where("subject", "like", "%@%").execute();
    for (const row of rows) {
      const hashed = this.subjects(row.subject);
      const taken = await this.db
        .selectFrom("login_lockouts")
        .select("subject")
        .where("tenant_id", "=", row.tenant_id)
        .where("subject", "=", hashed)
        .executeTakeFirst();
      if (taken) await this.db.deleteFrom("login_lockouts").where("tenant_id", "=", row.tenant_id).where("subject", "=", row.subject).execute();
      else
        await this.db
          .updateTable("login_lockouts")
          .set({ subject: hashed })
          .where("tenant_id", "=", row.tenant_id)
          .where("subject", "=", row.subject)
          .execute();
    }
    return rows.length;
  }
}
