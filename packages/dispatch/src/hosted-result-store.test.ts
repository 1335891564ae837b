import type { ToolExecutionResult } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { HostedResultStore } from "./hosted-result-store";

function result(callId: string, value?: unknown): ToolExecutionResult {
  return {
    callId,
    name: "lookup_order",
    outcome: "completed",
    content: { text: `text of ${callId}`, images: [] },
    held: false,
    attempt: 1,
    durationMs: 3,
    ...(value === undefined ? {} : { value }),
  };
}

describe("HostedResultStore", () => {
  it("keeps a result without a copy and answers it without its value", () => {
    const store = new HostedResultStore(10);
    const kept = result("call_1", "a string the tool returned");
    store.set("s_1:call_1", kept);
    const read = store.get("s_1:call_1")!;
    expect(read).toEqual({ ...kept, value: undefined });
    expect("value" in read).toBe(false);
    // The object the executor made is kept as it is, so nothing else holds a second copy.
    const plain = result("call_2");
    store.set("s_1:call_2", plain);
    expect(store.get("s_1:call_2")).toBe(plain);
    expect(store.get("s_1:call_3")).toBeUndefined();
  });

  it("never holds a tool's object graph: a result whose value is an object is kept without it", () => {
    const store = new HostedResultStore(10);
    const graph = { rows: [{ id: 1 }] };
    const kept = result("call_1", graph);
    store.set("s_1:call_1", kept);
    const read = store.get("s_1:call_1")!;
    expect(read).not.toBe(kept);
    expect("value" in read).toBe(false);
    expect(read.content.text).toBe("text of call_1");
  });

  it("remembers at most its limit of results, forgetting the oldest", () => {
    const store = new HostedResultStore(10);
    for (let i = 0; i < 25; i++) store.set(`s_1:call_${i}`, result(`call_${i}`));
    expect(store.size).toBeLessThanOrEqual(10);
    expect(store.get("s_1:call_24")?.callId).toBe("call_24");
    expect(store.get("s_1:call_0")).toBeUndefined();
  });
});
