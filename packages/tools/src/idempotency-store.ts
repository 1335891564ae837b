import { RecentMap } from "@patchbay/protocol/runtime";
import { assertPositiveInteger } from "./errors";
import type { ToolExecutionResult } from "./tool-execution-result";

/**
 * Where a `ToolExecutor` keeps finished results by call, so that a call delivered again after it
 * finished gets the same result without running again. Methods may be synchronous or return
 * promises, so a durable store (Redis, a database) can back it.
 *
 * @example
 * ```ts
 * const redisStore: IdempotencyStore = {
 *   async get(key) { const v = await redis.get(key); return v ? JSON.parse(v) : undefined; },
 *   async set(key, result) { await redis.set(key, JSON.stringify(result), { PX: 600_000 }); },
 * };
 * ```
 */
export interface IdempotencyStore {
  get(key: string): ToolExecutionResult | undefined | Promise<ToolExecutionResult | undefined>;
  set(key: string, result: ToolExecutionResult): void | Promise<void>;
}

/**
 * The default {@link IdempotencyStore}: in memory, least recently used entries evicted beyond
 * `maxEntries` (1000; a tenth of them at a time), entries forgotten after `ttlMs` (10 minutes).
 *
 * @example
 * ```ts
 * const store = new InMemoryIdempotencyStore({ maxEntries: 500, ttlMs: 60_000 });
 * const executor = new ToolExecutor({ tools, sessionId, idempotencyStore: store });
 * ```
 */
export class InMemoryIdempotencyStore implements IdempotencyStore {
  declare readonly maxEntries: number;
  declare readonly ttlMs: number;
  readonly #now: () => number;
  readonly #entries: RecentMap<{ result: ToolExecutionResult; expiresAt: number }>;

  constructor(options: { maxEntries?: number; ttlMs?: number; now?: () => number } = {}) {
    assertPositiveInteger("maxEntries", options.maxEntries);
    assertPositiveInteger("ttlMs", options.ttlMs);
    this.maxEntries = options.maxEntries ?? 1000;
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.#now = options.now ?? Date.now;
    this.#entries = new RecentMap(this.maxEntries);
  }

  get(key: string): ToolExecutionResult | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#entries.delete(key);
      return undefined;
    }
    this.#entries.touch(key);
    return entry.result;
  }

  set(key: string, result: ToolExecutionResult): void {
    // What `run` returned (`value`) is left out: it is for the first delivery only (a durable
    // store that serializes results cannot keep it either), and it can be any object graph, so a
    // thousand kept results would hold a thousand of them.
    const { value: _value, ...kept } = result;
    this.#entries.set(key, { result: kept, expiresAt: this.#now() + this.ttlMs });
  }

  /** How many results are kept (expired ones included until they are read or evicted). */
  get size(): number {
    return this.#entries.size;
  }
}
