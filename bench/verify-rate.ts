/**
 * The loop the hash floor (hash-floor.ts) and the bindings' comparison (argon2-bindings.ts) both
 * measure with, so their numbers are of one method: `concurrency` verify calls kept in flight until
 * `seconds` have passed, each started before the deadline counted when it answers.
 */

export interface VerifyRate {
  verifiesPerSecond: number;
  /** Verifies that answered. */
  count: number;
  /** How long they took: the deadline plus the calls still in flight at it. */
  seconds: number;
}

/** Verifies per second of `verify` (which must answer true: a false is a broken setup, not a slow one). */
export async function verifiesPerSecond(name: string, verify: () => Promise<boolean>, seconds: number, concurrency: number): Promise<VerifyRate> {
  let count = 0;
  const startedAt = performance.now();
  const deadline = startedAt + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        if (!(await verify())) throw new Error(`${name}: verify returned false`);
        count++;
      }
    }),
  );
  const elapsed = (performance.now() - startedAt) / 1000;
  return { verifiesPerSecond: count / elapsed, count, seconds: elapsed };
}
