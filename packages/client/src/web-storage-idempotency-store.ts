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
  declare readonly prefix: string;
  declare readonly ttlMs: number;
  readonly #storage: WebStorageLike;
  readonly #now: () => number;

  constructor(
    storage: WebStorageLike,
    { prefix = "patchbay:tool-result:", ttlMs = 600_000, now = Date.now }: WebStorageStoreOptions = {},
  ) {
    if (!Number.isInteger(ttlMs) || ttlMs < 1) {
      throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
    }
    this.#storage = storage;
    this.prefix = prefix;
    this.ttlMs = ttlMs;
    this.#now = now;
    // The sweep: names first, as removing an item may reorder the keys.
    const names: Array<string | null> = [];
    for (let i = 0; i < storage.length; i++) names.push(storage.key(i));
    for (const name of names) if (name?.startsWith(prefix)) this.#read(name);
  }

  get(key: string): ToolExecutionResult | undefined {
    return this.#read(this.prefix + key);
  }

  set(key: string, { value: _value, ...result }: ToolExecutionResult): void {
    // `value` is what `run` returned, for this page only; the stored result is what the model sees.
    const entry: Entry = { expiresAt: this.#now() + this.ttlMs, result };
    this.#storage.setItem(this.prefix + key, JSON.stringify(entry));
  }

  /** The result kept under `name`; an expired or unreadable entry is removed instead. */
  #read(name: string): ToolExecutionResult | undefined {
    let entry: Partial<Entry> | undefined;
    try {
      entry = JSON.parse(this.#storage.getItem(name) ?? "null");
    } catch {}
    if (typeof entry?.result === "object" && (entry.expiresAt as number) > this.#now()) return entry.result;
    this.#storage.removeItem(name);
    return undefined;
  }
}

/** Options of a {@link WebStorageIdempotencyStore}. */
interface WebStorageStoreOptions {
  prefix?: string;
  ttlMs?: number;
  now?: () => number;
}

interface Entry {
  expiresAt: number;
  result: ToolExecutionResult;
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
