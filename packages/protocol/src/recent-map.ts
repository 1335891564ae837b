import { ProtocolError } from "./errors";

/**
 * A map that remembers only its most recent `limit` keys: settled call ids, finished work,
 * answered approvals, per-caller buckets. Keys are ordered by when they were last `set` (or
 * `touch`ed); past `limit`, the oldest tenth is forgotten in one pass.
 *
 * Why a tenth at a time: V8 leaves a deleted slot of a Map in place until the table is rebuilt,
 * so the usual `map.delete(map.keys().next().value)` after every insert walks an ever longer run
 * of deleted slots once the map is full (about 7 µs per insert at 10,000 keys). Evicting in
 * batches walks that run once per batch, which keeps an insert O(1) amortized. The price: between
 * `limit - ceil(limit / 10)` and `limit` keys are remembered, never more than `limit`.
 *
 * @example
 * ```ts
 * const settled = new RecentMap<true>(10_000);
 * settled.set(callId, true);
 * if (settled.has(frame.callId)) dropDuplicate(frame);
 * ```
 */
export class RecentMap<V> {
  /** The most keys remembered at once. */
  declare readonly limit: number;
  readonly #batch: number;
  readonly #entries = new Map<string, V>();

  constructor(limit: number) {
    // One check: `Number.isInteger` is false for anything not a number (undefined included).
    if (!Number.isInteger(limit) || limit < 1) {
      throw new ProtocolError(
        "invalid_option",
        `limit: must be a positive integer, got ${typeof limit === "string" ? JSON.stringify(limit) : String(limit)}`,
      );
    }
    this.limit = limit;
    this.#batch = Math.ceil(limit / 10);
  }

  /** How many keys are remembered now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Whether the key is remembered. */
  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** The key's value, without changing its age (see {@link RecentMap.touch}). */
  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  /** Remembers the key as the most recent one, forgetting the oldest tenth past `limit`. */
  set(key: string, value: V): this {
    const entries = this.#entries;
    const size = entries.size;
    // One lookup for a new key (most sets); a known key, which Map.set leaves in its old place,
    // is moved to the young end.
    if (entries.set(key, value).size === size) {
      entries.delete(key);
      entries.set(key, value);
    }
    if (entries.size > this.limit) this.#evict();
    return this;
  }

  /** Makes a remembered key the most recent one (least recently used order); false if unknown. */
  touch(key: string): boolean {
    // `set` moves a known key to the young end, and forgets nothing when the key was known.
    return this.#entries.has(key) && !!this.set(key, this.#entries.get(key) as V);
  }

  /** Forgets the key; true if it was remembered. */
  delete(key: string): boolean {
    return this.#entries.delete(key);
  }

  /** Forgets every key. */
  clear(): void {
    this.#entries.clear();
  }

  /** The remembered keys, oldest first. */
  keys(): IterableIterator<string> {
    return this.#entries.keys();
  }

  #evict(): void {
    let left = this.#batch;
    for (const key of this.#entries.keys()) {
      this.#entries.delete(key);
      if (--left === 0) return;
    }
  }
}
