/**
 * Work that must not show in an answer's timing (contract.md#issue-4, no enumeration): what differs between a
 * known and an unknown email runs after the answer is sent. Errors are logged, never sent; the
 * tracker lets shutdown and tests wait for everything started.
 */
import type { Logger } from "pino";
import { outsideTransaction } from "../store/transaction-scope.js";

export class BackgroundTasks {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly log: Logger) {}

  /** Started outside any transaction's scope: the task runs after it, on the outer store (contract.md#issue-28). */
  run(name: string, work: () => Promise<unknown>): void {
    const task: Promise<void> = outsideTransaction(() =>
      Promise.resolve()
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(work)
        .then(() => undefined)
        .catch((err: unknown) => this.log.error({ err, task: name }, "background task failed"))
        .finally(() => this.pending.delete(task)),
    );
    this.pending.add(task);
  }

  /** Resolves when every task started so far, and any they started, has finished. */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
