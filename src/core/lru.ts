/**
 * A Map used as a least-recently-used cache: its insertion order is the order of use, so the first
 * key is the one used longest ago.
 */

/** Puts `key` last (most recently used) with `value`, then drops the oldest entries beyond `max`. */
export function setMostRecent<K, V>(entries: Map<K, V>, key: K, value: V, max: number): void {
  entries.delete(key);
  entries.set(key, value);
  for (const oldest of entries.keys()) {
    if (entries.size <= max) break;
    entries.delete(oldest);
  }
}
