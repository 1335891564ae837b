import type { IdempotencyStore, ToolExecutionResult } from "@patchbay/tools";

/** The part of the Web Storage API the store uses (`sessionStorage`, `localStorage`). */
export type WebStorageLike = Pick<Storage, "getItem" | "setItem" | "removeItem" | "key" | "length">;

/**
 * An {@link IdempotencyStore} in Web Storage, so a page's tool results outlive a reload of the
 * page: the browser `Client` keeps page tool results in `sessionStorage` by default (one tab, kept
 * across reloads). Entries are JSON under `prefix` and forgotten after `ttlMs` (10 minutes);
 * expired ones are swept when the store is made. A write over the storage quota throws (the
 * executor then keeps the result in memory only).
 *
 * @example
 * ```ts
 * const client = new Client({ baseUrl, idempotencyStore: new WebStorageIdempotencyStore(localStorage) });
 * ```
 */
export class WebStorageIdempotencyStore implements IdempotencyStore {
  readonly prefix: string;
  readonly ttlMs: number;
  readonly #storage: WebStorageLike;
  readonly #now: () => number;

  constructor(
    storage: WebStorageLike,
    options: { prefix?: string; ttlMs?: number; now?: () => number } = {},
  ) {
    if (options.ttlMs !== undefined && (!Number.isInteger(options.ttlMs) || options.ttlMs < 1)) {
      throw new RangeError(`ttlMs must be a positive integer, got ${String(options.ttlMs)}`);
    }
    this.#storage = storage;
    this.prefix = options.prefix ?? "patchbay:tool-result:";
    this.ttlMs = options.ttlMs ?? 10 * 60_000;
    this.#now = options.now ?? Date.now;
    this.#sweep();
  }

  get(key: string): ToolExecutionResult | undefined {
    const raw = this.#storage.getItem(this.prefix + key);
    if (raw === null) return undefined;
    const entry = parse(raw);
    if (entry === undefined || entry.expiresAt <= this.#now()) {
      this.#storage.removeItem(this.prefix + key);
      return undefined;
    }
    return entry.result;
  }

  set(key: string, result: ToolExecutionResult): void {
    // `value` is what `run` returned, for this page only; the stored result is what the model sees.
    const { value: _value, ...kept } = result;
    const entry: Entry = { expiresAt: this.#now() + this.ttlMs, result: kept };
    this.#storage.setItem(this.prefix + key, JSON.stringify(entry));
  }

  #sweep(): void {
    const now = this.#now();
    const expired: string[] = [];
    for (let i = 0; i < this.#storage.length; i++) {
      const name = this.#storage.key(i);
      if (name === null || !name.startsWith(this.prefix)) continue;
      const entry = parse(this.#storage.getItem(name) ?? "");
      if (entry === undefined || entry.expiresAt <= now) expired.push(name);
    }
    for (const name of expired) this.#storage.removeItem(name);
  }
}

interface Entry {
  expiresAt: number;
  result: ToolExecutionResult;
}

function parse(raw: string): Entry | undefined {
  try {
    const entry = JSON.parse(raw) as Entry;
    return typeof entry?.expiresAt === "number" && typeof entry.result === "object" ? entry : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The page's `sessionStorage` as a store, or undefined where there is none (Node, a worker, a
 * sandboxed frame that refuses access).
 */
export function sessionStorageStore(): WebStorageIdempotencyStore | undefined {
  try {
    const storage = (globalThis as { sessionStorage?: WebStorageLike }).sessionStorage;
    return storage === undefined ? undefined : new WebStorageIdempotencyStore(storage);
  } catch {
    return undefined;
  }
}
