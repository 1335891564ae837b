/**
 * How many times each recent call id was delivered to an executor, for its `attempt`, as the
 * Node entry keeps them (`fastPaths.counts`; a page keeps a `RecentMap`). Remembers at least the
 * last `limit` ids and at most twice as many, in two generations: new counts go to the young
 * map, and once it holds `limit` ids it becomes the old one and the oldest generation is dropped
 * whole. Unlike a map trimmed key by key, nothing is ever deleted (V8 keeps a deleted slot in
 * the table, and walking past them cost about a microsecond per call at 64 calls in flight).
 */
export class DeliveryCounts {
  readonly #limit: number;
  #young = new Map<string, number>();
  #old = new Map<string, number>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** The id's count, if it is remembered. */
  get(id: string): number | undefined {
    return this.#young.get(id) ?? this.#old.get(id);
  }

  /** Sets the id's count, making it young again. */
  set(id: string, count: number): void {
    const young = this.#young;
    if (young.size >= this.#limit && !young.has(id)) {
      this.#old = young;
      this.#young = new Map([[id, count]]);
    } else {
      young.set(id, count);
    }
  }
}
