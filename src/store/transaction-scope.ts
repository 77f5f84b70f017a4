/**
 * contract.md#issue-28, the transaction trap: code running inside `store.transaction(work)` that reaches for
 * the outer store (`deps.store` captured by the callback) never returned on SQLite (the one
 * connection waited on itself) and silently ran outside the transaction on PostgreSQL. The work of
 * a transaction runs in a scope of its own; while it is open, the outer store refuses: every
 * connection the root Kysely handle would take, and the hot reader, throw at once.
 *
 * Work a transaction merely starts (a background task, the dispatcher's wake-up) must not inherit
 * the scope: it runs after or beside the transaction, on the outer store by right. Those starts go
 * through `outsideTransaction`.
 *
 * The guard is on in tests and dev mode (`guardTransactions()`), off in production: on Node 20 an
 * AsyncLocalStorage in use makes every promise pay for its context (measured: a loop of 2 million
 * awaits took 2 to 2.5 times as long). Production code is kept out of the trap statically: helpers
 * called with a `tx` take `TransactionDeps`, which has no store, and lint refuses `deps.store`
 * inside a transaction's callback (eslint.config.js); the guard proves it on every test path.
 */
import { AsyncLocalStorage } from "node:async_hooks";

interface Scope {
  /** True while the transaction's work runs: a task it started that outlives it finds it false. */
  open: boolean;
}

const scopes = new AsyncLocalStorage<Scope>();
let guarding = false;

/** Turns the guard on for this process (the test harness and dev mode do). */
export function guardTransactions(): void {
  guarding = true;
}

/** Runs a transaction's work, once it holds its connection, in a scope of its own until it settles. */
export function inTransactionScope<T>(work: () => Promise<T>): Promise<T> {
  if (!guarding) return work();
  const scope: Scope = { open: true };
  return scopes.run(scope, async () => {
    try {
      return await work();
    } finally {
      scope.open = false;
    }
  });
}

export class OuterStoreInTransactionError extends Error {
  constructor() {
    super("The outer store was used inside store.transaction(): use the transaction's own store (tx) there, or run it before or after the transaction.");
    this.name = "OuterStoreInTransactionError";
  }
}

/** Throws when called from within an open transaction's work (contract.md#issue-28): the outer store is not for it. */
export function assertOutsideTransaction(): void {
  if (guarding && scopes.getStore()?.open) throw new OuterStoreInTransactionError();
}

/** Starts detached work (a background task, a wake-up) outside any transaction's scope. */
export function outsideTransaction<T>(start: () => T): T {
  return guarding ? scopes.exit(start) : start();
}
