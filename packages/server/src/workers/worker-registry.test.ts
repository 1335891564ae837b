import { describe, expect, it } from "vitest";
import { recordingWorker } from "./test-workers";
import { hostsFromHello, WorkerRegistry } from "./worker-registry";

describe("WorkerRegistry", () => {
  it("picks the worker with the most free slots, counting reservations", () => {
    const registry = new WorkerRegistry();
    const small = recordingWorker("small", { capacity: 2 });
    const big = recordingWorker("big", { capacity: 4 });
    registry.add(small);
    registry.add(big);
    expect(registry.pickForWork("message")?.id).toBe("big");
    big.reserved.add("a").add("b").add("c");
    expect(registry.pickForWork("message")?.id).toBe("small");
    small.reserved.add("d").add("e");
    big.reserved.add("f");
    expect(registry.pickForWork("message")).toBeUndefined();
  });

  it("breaks ties by who was given work longest ago, and honours exclusions and kinds", () => {
    const registry = new WorkerRegistry();
    const a = recordingWorker("a", { capacity: 1 });
    const b = recordingWorker("b", { capacity: 1, calls: false });
    a.lastGivenAt = 10;
    b.lastGivenAt = 5;
    registry.add(a);
    registry.add(b);
    expect(registry.pickForWork("message")?.id).toBe("b");
    expect(registry.pickForWork("message", new Set(["b"]))?.id).toBe("a");
    expect(registry.pickForWork("call")?.id).toBe("a");
    expect(registry.handles("call")).toBe(true);
    registry.remove(a);
    expect(registry.handles("call")).toBe(false);
  });

  it("replaces a worker that says hello again and ignores the removal of the replaced one", () => {
    const registry = new WorkerRegistry();
    const old = recordingWorker("w");
    const fresh = recordingWorker("w");
    registry.add(old);
    expect(registry.add(fresh)).toBe(old);
    expect(registry.remove(old)).toBe(false);
    expect(registry.get("w")).toBe(fresh);
  });

  it("picks the host with the fewest calls and takes the longest tool timeout", () => {
    const registry = new WorkerRegistry();
    const a = recordingWorker("a", { hosts: { support: { tools: ["lookup_order"], toolTimeoutMs: 1_000 } } });
    const b = recordingWorker("b", {
      hosts: { support: { tools: ["lookup_order", "refund"], toolTimeoutMs: 5_000 } },
    });
    registry.add(a);
    registry.add(b);
    a.calls.add("c1");
    expect(registry.pickForTool("support", "lookup_order")?.id).toBe("b");
    b.calls.add("c2").add("c3");
    expect(registry.pickForTool("support", "lookup_order")?.id).toBe("a");
    expect(registry.pickForTool("support", "refund")?.id).toBe("b");
    expect(registry.pickForTool("other", "lookup_order")).toBeUndefined();
    expect(registry.toolTimeoutMs("support", "lookup_order")).toBe(5_000);
    expect(registry.toolTimeoutMs("support", "refund")).toBe(5_000);
    expect(registry.specs("support").map((s) => s.name)).toEqual(["lookup_order", "refund"]);
  });

  it("makes an agent's tool list again only when a worker comes, goes or hosts something else", () => {
    const spec = (name: string) => ({ name, description: name, parameters: { type: "object" as const } });
    const registry = new WorkerRegistry();
    const a = recordingWorker("a", { hosts: { support: { tools: ["lookup_order"] } } });
    registry.add(a);
    const first = registry.specs("support");
    expect(registry.specs("support")).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    const names = () => registry.specs("support").map((s) => s.name);
    const b = recordingWorker("b", { hosts: { support: { tools: ["refund"] } } });
    registry.add(b);
    expect(names()).toEqual(["lookup_order", "refund"]);
    // A `worker.hosts` frame replaces what the worker hosts.
    a.hosts = hostsFromHello([{ agent: "support", tools: [spec("lookup_order"), spec("track")] }]);
    expect(names()).toEqual(["lookup_order", "track", "refund"]);
    registry.remove(a);
    expect(names()).toEqual(["refund"]);
    // Another worker in its place, hosting the same count of tools: still read anew.
    registry.add(recordingWorker("c", { hosts: { support: { tools: ["cancel"] } } }));
    registry.remove(b);
    expect(names()).toEqual(["cancel"]);
    expect(registry.specs("other")).toEqual([]);
  });

  it("reads hosts from a hello, merging an agent listed twice", () => {
    const spec = (name: string) => ({ name, description: name, parameters: { type: "object" as const } });
    const hosts = hostsFromHello([
      { agent: "support", tools: [spec("a")], toolTimeoutMs: 100 },
      { agent: "support", tools: [spec("b")], toolTimeoutMs: 300 },
    ]);
    expect([...(hosts.get("support")?.tools.keys() ?? [])]).toEqual(["a", "b"]);
    expect(hosts.get("support")?.toolTimeoutMs).toBe(300);
  });
});
