/**
 * One piece of work per key at a time in this process: callers that arrive while it runs share its
 * promise (its result or its failure), and the key is free again once it settles. For work that is
 * costly or must not be done twice at once, e.g. a tenant's first signing keys (an RSA key is tens of
 * milliseconds of CPU) or a cache's reload.
 */
export class SingleFlight<V> {
  private readonly running = new Map<string, Promise<V>>();

  run(key: string, work: () => Promise<V>): Promise<V> {
    let pending = this.running.get(key);
    if (pending === undefined) {
      pending = work().finally(() => this.running.delete(key));
      this.running.set(key, pending);
    }
    return pending;
  }
}
