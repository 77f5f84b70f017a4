/**
 * Races tested, not argued: a test holds one request at a store call (`pause`), runs another to
 * the end, then lets the first go on; or makes a call fail as a lost connection would (`fail`). The seam wraps the harness's store (and every transaction's)
 * in proxies; production code has no hooks. On SQLite a request held inside a transaction holds
 * the one write connection: anything else that touches the database waits until it is released.
 */
import type { Store } from "../../src/store/index.js";
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
]);

export class StoreSeam {
  private readonly pending: PendingPause[] = [];
  private readonly failing: { call: StoreCall; times: number; code: string }[] = [];

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
