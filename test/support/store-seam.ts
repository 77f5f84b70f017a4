/**
 * Races tested, not argued: a test holds one request at a store call (`pause`, `holdEach`), runs
 * another to the end, then lets the first go on; or makes a call fail as a lost connection would
 * (`fail`); or counts the calls a request makes while it waits (`count`). The seam wraps the
 * harness's store (and every transaction's) in proxies; production code has no hooks. On SQLite a
 * request held inside a transaction holds the one write connection: anything else that touches
 * the database waits until it is released.
 *
 * Beside the seam: `letItQueue` and `until` for waiting on what other requests do, and
 * `yieldingTransactions` for races that need no pause at all.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Store } from "../../src/store/index.js";
import type { Harness } from "./harness.js";

/** `part.method` of the store, e.g. "members.findMemberByEmail". */
export type StoreCall = string;

export interface Pause {
  /** Resolves with the call's arguments when a request reached it and is held there. */
  reached: Promise<unknown[]>;
  release(): void;
}

interface PendingPause {
  call: StoreCall;
  when: "before" | "after";
  /** Calls to let through before holding one. */
  skip: number;
  reach(args: unknown[]): void;
  released: Promise<void>;
}

const STORE_PARTS = new Set([
  "tenants",
  "members",
  "sessions",
  "tokens",
  "limits",
  "outbox",
  "audit",
  "twoFactor",
  "loginOrigins",
  "registrations",
  "emailRequests",
  "passkeys",
  "oauth",
  "signingKeys",
]);

/** How many calls went through the seam since `count` was asked. */
export interface CallCount {
  calls: number;
}

export class StoreSeam {
  private readonly pending: PendingPause[] = [];
  private readonly failing: { call: StoreCall; times: number; code: string }[] = [];
  private readonly counting: { calls: ReadonlySet<StoreCall>; count: CallCount }[] = [];

  /**
   * The next `times` calls throw before they run, as a lost database connection does (503
   * `unavailable`), or with another driver error `code` (`23505`: a unique index refused the write).
   */
  fail(call: StoreCall, times = 1, code = "ECONNRESET"): void {
    this.failing.push({ call, times, code });
  }

  /** Holds the next call (after `skip` others) before it runs, or after it returned with `when: "after"`. */
  pause(call: StoreCall, options: { when?: "before" | "after"; skip?: number } = {}): Pause {
    let reach!: (args: unknown[]) => void;
    let release!: () => void;
    const reached = new Promise<unknown[]>((resolve) => (reach = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    this.pending.push({ call, when: options.when ?? "before", skip: options.skip ?? 0, reach, released });
    return { reached, release };
  }

  /** Tells when a request reaches the call, without holding it. */
  watch(call: StoreCall, options: { when?: "before" | "after"; skip?: number } = {}): Promise<unknown[]> {
    const pause = this.pause(call, options);
    pause.release();
    return pause.reached;
  }

  /**
   * Starts `count` requests with `start` and holds each at its first `call` (before it runs);
   * resolves once all of them are held. `answers` settles after every one is released.
   */
  async holdEach<T>(call: StoreCall, count: number, start: () => Promise<T>): Promise<{ held: Pause[]; answers: Promise<T[]> }> {
    const held = Array.from({ length: count }, () => this.pause(call));
    const answers = Promise.all(held.map(() => start()));
    await Promise.all(held.map((p) => p.reached));
    return { held, answers };
  }

  /** Counts the calls to any of `calls` (in or out of a transaction) from now on, as they are made. */
  count(...calls: StoreCall[]): CallCount {
    const count = { calls: 0 };
    this.counting.push({ calls: new Set(calls), count });
    return count;
  }

  wrap(store: Store): Store {
    return new Proxy(store, {
      get: (target, prop, receiver) => {
        if (prop === "transaction") {
          return <T>(work: (tx: Store) => Promise<T>) => target.transaction((tx) => work(this.wrap(tx)));
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof prop === "string" && STORE_PARTS.has(prop)) return this.wrapPart(prop, value as object);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  private wrapPart(name: string, part: object): object {
    return new Proxy(part, {
      get: (target, prop) => {
        const value: unknown = Reflect.get(target, prop);
        if (typeof value !== "function" || typeof prop !== "string") return value;
        const call = `${name}.${prop}`;
        return async (...args: unknown[]) => {
          for (const counter of this.counting) if (counter.calls.has(call)) counter.count.calls++;
          this.throwIfFailing(call);
          await this.hold(call, "before", args);
          const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          await this.hold(call, "after", args);
          return result;
        };
      },
    });
  }

  private throwIfFailing(call: StoreCall): void {
    const failure = this.failing.find((f) => f.call === call && f.times > 0);
    if (!failure) return;
    failure.times--;
    throw Object.assign(new Error(`injected failure of ${call}`), { code: failure.code });
  }

  private async hold(call: StoreCall, when: "before" | "after", args: unknown[]): Promise<void> {
    const index = this.pending.findIndex((p) => p.call === call && p.when === when);
    if (index < 0) return;
    const pause = this.pending[index]!;
    if (pause.skip > 0) {
      pause.skip--;
      return;
    }
    this.pending.splice(index, 1);
    pause.reach(args);
    await pause.released;
  }
}

/** Puts the seam between the harness's app and its store (until the next restart). */
export function installStoreSeam(h: Harness): StoreSeam {
  const seam = new StoreSeam();
  (h.deps as { store: Store }).store = seam.wrap(h.deps.store);
  return seam;
}

/**
 * Gives a request held up behind another time to reach the row lock it waits for (PostgreSQL):
 * until it reaches the watched call or 1 s has passed, then 100 ms more. On SQLite it waits for
 * the one write connection instead and never reaches the watched call before the release.
 */
export async function letItQueue(reached: Promise<unknown>): Promise<void> {
  await Promise.race([reached, sleep(1000)]);
  await sleep(100);
}

/** Waits (in real time, at most 20 s) until `ready` holds: what a test waits for happens in other requests. */
export async function until(ready: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !ready(); waited += 10) {
    assert.ok(waited < 20_000, `never happened: ${what}`);
    await sleep(10);
  }
}

/**
 * better-sqlite3 answers synchronously, so without help concurrent requests can run one after the
 * other inside microtasks and a check-then-act race would never show. Yielding to the event loop
 * before each transaction lets every request do its pre-transaction work (such as a token peek)
 * first, so a flow that checked a token outside its transaction would be caught. No timers: only
 * a setImmediate yield. It patches Store itself, so every store and every request is covered
 * without a seam; the patch is undone when the test ends.
 */
export function yieldingTransactions(t: { after(fn: () => void): void }): void {
  const original = Store.prototype.transaction;
  Store.prototype.transaction = async function <T>(this: Store, work: (store: Store) => Promise<T>): Promise<T> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return original.call(this, work) as Promise<T>;
  };
  t.after(() => {
    Store.prototype.transaction = original;
  });
}
