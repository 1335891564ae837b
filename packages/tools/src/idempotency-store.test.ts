import { describe, expect, it } from "vitest";
import { InMemoryIdempotencyStore } from "./idempotency-store";
import type { ToolExecutionResult } from "./tool-execution-result";

const result = (callId: string): ToolExecutionResult => ({
  callId,
  name: "t",
  outcome: "completed",
  content: { text: callId, images: [] },
  held: false,
  attempt: 1,
  durationMs: 0,
});

describe("InMemoryIdempotencyStore", () => {
  it("evicts the least recently used entry beyond maxEntries", () => {
    const store = new InMemoryIdempotencyStore({ maxEntries: 2 });
    store.set("a", result("a"));
    store.set("b", result("b"));
    expect(store.get("a")?.callId).toBe("a"); // a is now the most recent
    store.set("c", result("c"));
    expect(store.get("b")).toBeUndefined();
    expect(store.get("a")?.callId).toBe("a");
    expect(store.get("c")?.callId).toBe("c");
    expect(store.size).toBe(2);
  });

  it("keeps a result without what run returned (value)", () => {
    const store = new InMemoryIdempotencyStore();
    const big = { rows: Array.from({ length: 100 }, (_, i) => i) };
    store.set("a", { ...result("a"), value: big });
    expect(store.get("a")).toEqual(result("a"));
    expect(store.get("a")).not.toHaveProperty("value");
  });

  it("forgets entries after ttlMs", () => {
    let now = 0;
    const store = new InMemoryIdempotencyStore({ ttlMs: 1_000, now: () => now });
    store.set("a", result("a"));
    now = 999;
    expect(store.get("a")?.callId).toBe("a");
    now = 1_000;
    expect(store.get("a")).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it("refuses bad limits", () => {
    expect(() => new InMemoryIdempotencyStore({ maxEntries: 0 })).toThrow(
      "maxEntries: must be a positive integer, got 0",
    );
    expect(() => new InMemoryIdempotencyStore({ ttlMs: 1.5 })).toThrow(/ttlMs/);
  });
});
