/**
 * `last_seen_at` written behind (contract.md#issue-17). Writing it from the session check cost one commit per
 * session per minute, and on SQLite a commit is a synchronous fsync on the event loop (0.3 ms
 * median, 3 ms at p99 on the bench machine): sessions that came due together (a deploy, a busy
 * minute) stalled every request behind them. Touches are now kept here and written together, in
 * one transaction, at most every FLUSH_INTERVAL_MS and when the store closes. The process's own
 * reads see the kept value; another instance sees it up to FLUSH_INTERVAL_MS later, and a crash
 * loses at most that much of "last active", which is shown to people and decides nothing. A flush
 * writes FLUSH_CHUNK touches per transaction and lets requests run between chunks.
 */
import { setImmediate as yieldToRequests } from "node:timers/promises";
import type { Kysely } from "kysely";
import type { Database } from "./schema.js";

export const FLUSH_INTERVAL_MS = 5_000;
/** Past this many kept touches a flush starts at once, so memory stays bounded under any load. */
export const MAX_KEPT_TOUCHES = 10_000;
/**
 * Touches written per transaction. SQLite's driver is synchronous, so a transaction runs start to
 * end without letting a request in: 1,000 sessions that came due together stalled the event loop
 * for tens of ms (the bench's half-rate tail). Between chunks the flush yields to waiting requests.
 */
export const FLUSH_CHUNK = 100;

interface Touch {
  tenantId: string;
  idHash: string;
  at: number;
}

function keyOf(tenantId: string, idHash: string): string {
  return `${tenantId}\u0000${idHash}`;
}

export class SessionTouches {
  private kept = new Map<string, Touch>();
  /** The touches the running flush took out of `kept`: read like kept ones until the flush ends, as their rows may not be written yet. */
  private writing = new Map<string, Touch>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<Database>,
    /** A failed flush is reported here; its touches are kept for the next one. */
    private readonly onError: (err: unknown) => void,
    private readonly resolutionMs: number,
  ) {}

  /** The session was seen at `at`; written with the next flush. */
  touch(tenantId: string, idHash: string, at: number): void {
    const key = keyOf(tenantId, idHash);
    if (this.kept.size >= MAX_KEPT_TOUCHES) {
      void this.flush();
      // Full (the database is failing, or slower than the touches): a new session's touch is dropped; it comes again.
      if (!this.kept.has(key)) return;
    }
    this.kept.set(key, { tenantId, idHash, at });
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /**
   * The session's last-seen time given what the database holds: the kept one when the flush will
   * write it (a minute or more after the stored one, the same condition as the UPDATE's).
   */
  seenAt(tenantId: string, idHash: string, stored: number): number {
    const key = keyOf(tenantId, idHash);
    const kept = (this.kept.get(key) ?? this.writing.get(key))?.at;
    return kept !== undefined && kept - stored >= this.resolutionMs ? kept : stored;
  }

  /** Writes every kept touch, FLUSH_CHUNK per transaction; concurrent calls run one after the other. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writeKept());
    return this.flushing;
  }

  private async writeKept(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.writing = this.kept;
    this.kept = new Map();
    try {
      await this.writeInChunks([...this.writing.entries()]);
    } finally {
      this.writing = new Map();
    }
  }

  private async writeInChunks(batch: Array<[string, Touch]>): Promise<void> {
    for (let from = 0; from < batch.length; from += FLUSH_CHUNK) {
      if (from > 0) await yieldToRequests();
      const chunk = batch.slice(from, from + FLUSH_CHUNK);
      try {
        await this.writeChunk(chunk.map(([, touch]) => touch));
      } catch (err) {
        // Kept for the next flush (this chunk and the ones not yet written), unless a newer touch of the same session came in meanwhile.
        for (const [key, touch] of batch.slice(from)) if (!this.kept.has(key)) this.kept.set(key, touch);
        this.timer ??= setTimeout(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
        this.onError(err);
        return;
      }
    }
  }

  private async writeChunk(touches: Touch[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (const { tenantId, idHash, at } of touches) {
        // Conditional, as before: never moves it back, and a session ended meanwhile is simply not found.
        await trx
          .updateTable("sessions")
          .set({ last_seen_at: at })
          .where("tenant_id", "=", tenantId)
          .where("id_hash", "=", idHash)
          .where("last_seen_at", "<=", at - this.resolutionMs)
          .execute();
      }
    });
  }
}
