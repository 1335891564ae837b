import type { ToolExecutionResult } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { WebStorageIdempotencyStore, type WebStorageLike } from "./web-storage-idempotency-store";

/** Web Storage's behaviour over a Map (Node has no sessionStorage); quota in characters. */
function memoryStorage(quota = Number.POSITIVE_INFINITY): WebStorageLike & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    get length() {
      return items.size;
    },
    key: (i) => [...items.keys()][i] ?? null,
    getItem: (k) => items.get(k) ?? null,
    setItem: (k, v) => {
      if (v.length > quota) throw new DOMException("quota", "QuotaExceededError");
      items.set(k, v);
    },
    removeItem: (k) => void items.delete(k),
  };
}

const result = (text: string): ToolExecutionResult => ({
  callId: "c_1",
  name: "save",
  outcome: "completed",
  content: { text, images: [] },
  held: false,
  attempt: 1,
  durationMs: 5,
  value: { not: "kept" },
});

describe("WebStorageIdempotencyStore", () => {
  it("keeps a result across instances on the same storage (a reload), without `value`", () => {
    const storage = memoryStorage();
    new WebStorageIdempotencyStore(storage).set("s_1:c_1", result("saved"));
    const after = new WebStorageIdempotencyStore(storage).get("s_1:c_1");
    const { value: _value, ...kept } = result("saved");
    expect(after).toEqual(kept);
    expect([...storage.items.keys()]).toEqual(["patchbay:tool-result:s_1:c_1"]);
  });

  it("forgets entries after ttlMs, and sweeps expired and unreadable ones on construction", () => {
    const storage = memoryStorage();
    let now = 1_000;
    const store = new WebStorageIdempotencyStore(storage, { ttlMs: 100, now: () => now });
    store.set("s_1:c_1", result("a"));
    storage.setItem("patchbay:tool-result:broken", "{not json");
    storage.setItem("other-app", "left alone");
    now += 100;
    expect(store.get("s_1:c_1")).toBeUndefined();
    store.set("s_1:c_2", result("b"));
    now += 100;
    new WebStorageIdempotencyStore(storage, { ttlMs: 100, now: () => now });
    expect([...storage.items.keys()]).toEqual(["other-app"]);
  });

  it("throws on a write over the quota and refuses a bad ttl by name", () => {
    const store = new WebStorageIdempotencyStore(memoryStorage(10));
    expect(() => store.set("k", result("x"))).toThrow(/quota/);
    expect(() => new WebStorageIdempotencyStore(memoryStorage(), { ttlMs: 0 })).toThrow(/ttlMs/);
  });
});
