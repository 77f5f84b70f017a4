/** The only place that reads the wall clock or sets a timer (STYLE habit 3). Times are Unix milliseconds. */
import { setTimeout as realSleep } from "node:timers/promises";

export interface Clock {
  now(): number;
  /**
   * Resolves once `ms` have passed on this clock, or at once when `signal` aborts; never rejects.
   * A flow that waits (a password check waiting for its turn, contract.md#d30) waits on this, so tests move
   * its time with the ManualClock instead of sleeping.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  // Unref'd: a request waiting for its turn must not keep a process that is shutting down alive.
  sleep: (ms, signal) => realSleep(Math.max(0, ms), undefined, { ref: false, signal }).catch(() => undefined),
};

interface ManualTimer {
  due: number;
  fire(): void;
}

/** A clock tests move by hand, so expiry, backoff and waits are tested without sleeping. */
export class ManualClock implements Clock {
  private timers: ManualTimer[] = [];

  constructor(private current: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
    this.fireDueTimers();
  }
  set(ms: number): void {
    this.current = ms;
    this.fireDueTimers();
  }

  /** Resolves when `advance` or `set` reaches now + ms (at once for ms <= 0), or when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (ms <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer: ManualTimer = {
        due: this.current + ms,
        fire: () => {
          signal?.removeEventListener("abort", cancel);
          resolve();
        },
      };
      const cancel = () => {
        this.timers = this.timers.filter((t) => t !== timer);
        resolve();
      };
      signal?.addEventListener("abort", cancel, { once: true });
      this.timers.push(timer);
    });
  }

  /** Sleeps not yet over: lets a test see that something is waiting on this clock. */
  get pendingSleeps(): number {
    return this.timers.length;
  }

  private fireDueTimers(): void {
    const due = this.timers.filter((t) => t.due <= this.current);
    this.timers = this.timers.filter((t) => t.due > this.current);
    for (const timer of due) timer.fire();
  }
}

export { DAY, HOUR, MINUTE, SECOND } from "./durations.js";
