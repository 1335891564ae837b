import type { ToolResult } from "@patchbay/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HostedToolHandlers, HostedToolRequest } from "../dispatch-seams";
import { recordingWorker, sentOf } from "./test-workers";
import { WorkerRegistry } from "./worker-registry";
import { WorkerToolRouter } from "./worker-tool-router";

afterEach(() => {
  vi.useRealTimers();
});

function request(callId: string, extra: Partial<HostedToolRequest> = {}): HostedToolRequest {
  return {
    callId,
    agent: "support",
    sessionId: "s_1",
    tool: "lookup_order",
    arguments: { order_id: "A1" },
    user: { id: "u_1" },
    conversation: [],
    defaultTimeoutMs: 120_000,
    interruptible: false,
    ...extra,
  };
}

function handlers() {
  const seen = { progress: [] as string[], say: [] as string[], holds: 0, attempts: [] as number[] };
  const h: HostedToolHandlers = {
    progress: (t) => seen.progress.push(t),
    say: (t) => seen.say.push(t),
    hold: () => {
      seen.holds++;
    },
    attempt: (n) => seen.attempts.push(n),
  };
  return { h, seen };
}

const done = (text: string): ToolResult => ({ outcome: "completed", content: { text, images: [] } });

function setup() {
  const registry = new WorkerRegistry();
  const router = new WorkerToolRouter({ registry });
  const host = (id: string, toolTimeoutMs?: number) => {
    const worker = recordingWorker(id, {
      hosts: { support: { tools: ["lookup_order"], ...(toolTimeoutMs ? { toolTimeoutMs } : {}) } },
    });
    registry.add(worker);
    return worker;
  };
  return { registry, router, host };
}

describe("WorkerToolRouter", () => {
  it("fails at once when no worker hosts the tool", async () => {
    const { router } = setup();
    const result = await router.call(request("c1"), handlers().h);
    expect(result).toMatchObject({ outcome: "failed", error: { code: "no_worker" } });
  });

  it("sends a call to the host with the fewest outstanding calls and relays what it says", async () => {
    const { router, host } = setup();
    const a = host("a");
    const b = host("b");
    a.calls.add("other");
    const { h, seen } = handlers();
    const pending = router.call(request("c1"), h);
    expect(sentOf(b, "hosted.call")).toEqual([expect.objectContaining({ callId: "c1", attempt: 1 })]);
    expect(sentOf(a, "hosted.call")).toEqual([]);
    router.onFrame(b, { type: "hosted.progress", callId: "c1", text: "Looking" });
    router.onFrame(b, { type: "hosted.say", callId: "c1", text: "One moment" });
    router.onFrame(b, { type: "hosted.hold", callId: "c1" });
    router.onFrame(b, { type: "hosted.result", callId: "c1", attempt: 1, result: done("found") });
    expect(await pending).toEqual(done("found"));
    expect(seen).toEqual({ progress: ["Looking"], say: ["One moment"], holds: 1, attempts: [1] });
    expect(b.calls.size).toBe(0);
  });

  it("times out after the longest toolTimeoutMs offered and cancels the call on the worker", async () => {
    vi.useFakeTimers();
    const { router, host } = setup();
    const a = host("a", 1_000);
    host("b", 3_000);
    a.calls.add("x").add("y");
    const pending = router.call(request("c1", { defaultTimeoutMs: 500 }), handlers().h);
    vi.advanceTimersByTime(2_999);
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    vi.advanceTimersByTime(1);
    const result = await pending;
    expect(result).toMatchObject({ outcome: "timed_out", error: { code: "timed_out" } });
    expect(result.content.text).toContain("3000 ms");
  });

  it("falls back to the agent's hosted tool timeout when no worker offered one", async () => {
    vi.useFakeTimers();
    const { router, host } = setup();
    const a = host("a");
    const pending = router.call(request("c1", { defaultTimeoutMs: 700 }), handlers().h);
    expect(sentOf(a, "hosted.call")[0]?.timeoutMs).toBe(700);
    vi.advanceTimersByTime(700);
    expect((await pending).outcome).toBe("timed_out");
    expect(sentOf(a, "hosted.cancel")).toEqual([
      { type: "hosted.cancel", callId: "c1", reason: "timed_out" },
    ]);
  });

  it("delivers a gone worker's call again, same id and a higher attempt, and uses the first result once", async () => {
    const { registry, router, host } = setup();
    const a = host("a");
    const { h, seen } = handlers();
    const pending = router.call(request("c1"), h);
    const b = host("b");
    registry.remove(a);
    router.onWorkerGone(a);
    expect(sentOf(b, "hosted.call")).toEqual([expect.objectContaining({ callId: "c1", attempt: 2 })]);
    router.onFrame(b, { type: "hosted.result", callId: "c1", attempt: 2, result: done("from b") });
    router.onFrame(a, { type: "hosted.result", callId: "c1", attempt: 1, result: done("from a, late") });
    expect(await pending).toEqual(done("from b"));
    expect(seen.attempts).toEqual([1, 2]);
  });

  it("waits for a host to come back when the only one went away", async () => {
    const { registry, router, host } = setup();
    const a = host("a");
    const pending = router.call(request("c1"), handlers().h);
    registry.remove(a);
    router.onWorkerGone(a);
    expect(router.pending).toBe(1);
    const back = host("a");
    router.adopt(back, []);
    expect(sentOf(back, "hosted.call")).toEqual([expect.objectContaining({ callId: "c1", attempt: 2 })]);
    router.onFrame(back, { type: "hosted.result", callId: "c1", attempt: 2, result: done("ok") });
    expect(await pending).toEqual(done("ok"));
  });

  it("does not deliver again a call the returning worker says it still runs", async () => {
    const { registry, router, host } = setup();
    const a = host("a");
    const pending = router.call(request("c1"), handlers().h);
    registry.remove(a);
    router.onWorkerGone(a);
    const back = host("a");
    router.adopt(back, ["c1"]);
    expect(sentOf(back, "hosted.call")).toEqual([]);
    router.onFrame(back, { type: "hosted.result", callId: "c1", attempt: 1, result: done("kept running") });
    expect(await pending).toEqual(done("kept running"));
  });

  it("cancels: tells the worker and resolves cancelled at once", async () => {
    const { router, host } = setup();
    const a = host("a");
    const pending = router.call(request("c1", { interruptible: true }), handlers().h);
    router.cancel("c1", "interrupted");
    expect(await pending).toMatchObject({ outcome: "cancelled" });
    expect(sentOf(a, "hosted.cancel")).toEqual([
      { type: "hosted.cancel", callId: "c1", reason: "interrupted" },
    ]);
  });
});
