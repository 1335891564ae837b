/**
 * How many times each recent call id was delivered to an executor, for its `attempt`. Remembers
 * at least the last `limit` ids and at most twice as many, in two generations: new counts go to
 * the young map, and once it holds `limit` ids it becomes the old one and the oldest generation
 * is dropped whole. Unlike a map trimmed key by key, nothing is ever deleted (V8 keeps a
 * deleted slot in the table, and walking past them cost about a microsecond per call), so a
 * count is one lookup and one insert.
 */
export class DeliveryCounts {
  readonly #limit: number;
  #young = new Map<string, number>();
  #old = new Map<string, number>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Counts one more delivery of `id` and returns how many there have been. */
  count(id: string): number {
    const young = this.#young;
    const count = (young.get(id) ?? this.#old.get(id) ?? 0) + 1;
    if (young.size >= this.#limit && !young.has(id)) {
      this.#old = young;
      this.#young = new Map([[id, count]]);
    } else {
      young.set(id, count);
    }
    return count;
  }

  /** Raises the count `count` just returned for `id` (an explicit attempt higher than counted). */
  raise(id: string, count: number): void {
    this.#young.set(id, count);
  }
}
