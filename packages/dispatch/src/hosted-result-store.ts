import { RecentMap } from "@patchbay/protocol/runtime";
import type { IdempotencyStore, ToolExecutionResult } from "@patchbay/tools";

/**
 * The idempotency store a worker's hosted calls share when `host()` is given none: the last
 * `limit` results by call, kept as the executor made them. At tens of thousands of calls per
 * second whatever a finished call leaves behind outlives the young generation's collections and
 * is copied, then promoted, so this keeps one object per call: the result itself (the store of
 * `@patchbay/tools` keeps a copy without `value` and a record with its expiry), and `HostedTools`
 * remembers the same object for a cancel that comes after the end. `value` is left out on the way
 * out, as every store does; a result whose `value` is an object is kept as a copy without it, so
 * a tool's object graph is never held here. No expiry by time: the bound is the count (a call is
 * delivered again within its timeout, minutes at most).
 */
export class HostedResultStore implements IdempotencyStore {
  readonly #results: RecentMap<ToolExecutionResult>;

  constructor(limit: number) {
    this.#results = new RecentMap(limit);
  }

  get(key: string): ToolExecutionResult | undefined {
    const result = this.#results.get(key);
    if (result === undefined || result.value === undefined) return result;
    const { value: _value, ...kept } = result;
    return kept;
  }

  set(key: string, result: ToolExecutionResult): void {
    const value = result.value;
    if (typeof value === "object" && value !== null) {
      const { value: _value, ...kept } = result;
      this.#results.set(key, kept);
    } else {
      this.#results.set(key, result);
    }
  }

  /** How many results are kept. */
  get size(): number {
    return this.#results.size;
  }
}
