/**
 * What the log says while the database (or Redis) is not ready (docs/operations.md#readiness): one warning
 * when it stops being ready, one info line when it is ready again, and nothing in between. Before,
 * every /readyz probe (every few seconds from an orchestrator) and every dispatcher pass (every
 * second) wrote an error-level line while the schema was not migrated: a stream of errors for one
 * known state, which buried everything else and paged people for a deployment step (contract.md#issue-29).
 */
import type { Logger } from "pino";

export type ReadinessSubject = "database" | "redis";

const NOT_READY: Record<ReadinessSubject, string> = {
  database:
    "the database is not migrated or not reachable: /readyz answers 503 and webhooks wait until it is (with MIGRATE_ON_START=false, run `latch migrate`); this is said once, until it changes",
  redis: "Redis is not reachable: /readyz answers 503 until it is; this is said once, until it changes",
};

export class ReadinessNotice {
  /** Last known state per subject; unknown until first reported, so the first "ready" says nothing. */
  private readonly ready = new Map<ReadinessSubject, boolean>();

  constructor(private readonly log: Logger) {}

  /** Reports the state seen now; logs only when it differs from the last one reported. */
  report(subject: ReadinessSubject, ready: boolean, err?: unknown): void {
    const before = this.ready.get(subject);
    if (before === ready) return;
    this.ready.set(subject, ready);
    if (!ready) this.log.warn({ subject, ...(err !== undefined && { err }) }, NOT_READY[subject]);
    else if (before === false) this.log.info({ subject }, `${subject === "database" ? "the database" : "Redis"} is ready again`);
  }

  /**
   * After a background pass failed (the dispatcher, the retention sweep): checks the database as /readyz
   * does and reports it. True when it is not ready, which explains the failure (said once here); false
   * when it is ready, so the failure is a real error for the caller to log.
   */
  async explainedByDatabase(isReady: () => Promise<boolean>, err: unknown): Promise<boolean> {
    const ready = await isReady().catch(() => false);
    this.report("database", ready, ready ? undefined : err);
    return !ready;
  }
}
