import type { ToolResult } from "@patchbay/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { HostedToolRequest, ToolCallHandlers } from "../extensions/dispatch-seams";
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
    timeoutMs: 30_000,
    ...extra,
  };
}

function handlers() {
  const seen = { progress: [] as string[], say: [] as string[], holds: 0, attempts: [] as number[] };
  const h: ToolCallHandlers = {
    progress: (t) => seen.progress.push(t),
    say: (t) => seen.say.push(t),
    hold: () => {
      seen.holds++;
      return { accepted: true };
    },
    attempt: (n) => seen.attempts.push(n),
    approval: async () => ({ outcome: "allowed" as const }),
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
    router.onFrame(b, { type: "hosted.hold", callId: "c1", attempt: 1 });
    expect(sentOf(b, "hosted.hold.ack")).toEqual([
      { type: "hosted.hold.ack", callId: "c1", attempt: 1, accepted: true },
    ]);
    router.onFrame(b, { type: "hosted.result", callId: "c1", attempt: 1, result: done("found") });
    expect(await pending).toEqual(done("found"));
    expect(seen).toEqual({ progress: ["Looking"], say: ["One moment"], holds: 1, attempts: [1] });
    expect(b.calls.size).toBe(0);
  });

  it("tells the runner the longest toolTimeoutMs a hosting worker offered, and sends the call's time left", async () => {
    const { router, host } = setup();
    const a = host("a", 1_000);
    const b = host("b", 3_000);
    expect(router.timeoutCeilingMs("support", "lookup_order")).toBe(3_000);
    expect(router.timeoutCeilingMs("support", "other_tool")).toBeUndefined();
    a.calls.add("x");
    const late = host("c");
    late.calls.add("y").add("z");
    void router.call(request("c1", { timeoutMs: 700 }), handlers().h);
    expect(sentOf(a, "hosted.call")).toEqual([]);
    expect(sentOf(late, "hosted.call")).toEqual([]);
    expect(router.pending).toBe(1);
    expect(sentOf(b, "hosted.call")[0]?.timeoutMs).toBeLessThanOrEqual(700);
    expect(sentOf(b, "hosted.call")[0]?.timeoutMs).toBeGreaterThan(600);
  });

  it("sends a hold's answer for the attempt named, and refuses one for an older delivery or another worker", async () => {
    const { registry, router, host } = setup();
    const a = host("a");
    const { h, seen } = handlers();
    void router.call(request("c1"), h);
    const b = host("b");
    registry.remove(a);
    router.onWorkerGone(a);
    router.onFrame(a, { type: "hosted.hold", callId: "c1", attempt: 1 });
    expect(sentOf(a, "hosted.hold.ack")).toEqual([
      { type: "hosted.hold.ack", callId: "c1", attempt: 1, accepted: false, reason: "stale_attempt" },
    ]);
    router.onFrame(b, { type: "hosted.hold", callId: "c1" });
    expect(sentOf(b, "hosted.hold.ack")).toEqual([
      { type: "hosted.hold.ack", callId: "c1", attempt: 2, accepted: true },
    ]);
    router.onFrame(b, { type: "hosted.hold", callId: "nope", attempt: 1 });
    expect(sentOf(b, "hosted.hold.ack")[1]).toMatchObject({ accepted: false, reason: "unknown_call" });
    expect(seen.holds).toBe(1);
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
    // Finding 5: the older attempt's result is refused even though it arrives first.
    router.onFrame(a, { type: "hosted.result", callId: "c1", attempt: 1, result: done("from a, late") });
    expect(router.pending).toBe(1);
    router.onFrame(b, { type: "hosted.result", callId: "c1", attempt: 2, result: done("from b") });
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

  it("asks the worker to cancel and settles only with the worker's answer, which may be the real result", async () => {
    const { router, host } = setup();
    const a = host("a");
    const pending = router.call(request("c1"), handlers().h);
    let settled = false;
    void pending.then(() => {
      settled = true;
    });
    router.cancel("c1", "interrupted");
    expect(sentOf(a, "hosted.cancel")).toEqual([
      { type: "hosted.cancel", callId: "c1", reason: "interrupted", attempt: 1 },
    ]);
    await Promise.resolve();
    expect(settled).toBe(false);
    router.onFrame(a, { type: "hosted.result", callId: "c1", attempt: 1, result: done("booked anyway") });
    expect(await pending).toEqual(done("booked anyway"));
  });

  it("never delivers a call being cancelled again, and asks the returning worker again", async () => {
    const { registry, router, host } = setup();
    const a = host("a");
    const pending = router.call(request("c1"), handlers().h);
    router.cancel("c1", "timed_out");
    const b = host("b");
    registry.remove(a);
    router.onWorkerGone(a);
    expect(sentOf(b, "hosted.call")).toEqual([]);
    const back = host("a");
    router.adopt(back, ["c1"]);
    expect(sentOf(back, "hosted.cancel")).toEqual([
      { type: "hosted.cancel", callId: "c1", reason: "timed_out", attempt: 1 },
    ]);
    const cancelled: ToolResult = { outcome: "timed_out", content: { text: "stopped", images: [] } };
    router.onFrame(back, { type: "hosted.result", callId: "c1", attempt: 1, result: cancelled });
    expect(await pending).toEqual(cancelled);
  });

  it("gives a cancelled call up when its worker never answers", async () => {
    vi.useFakeTimers();
    const { router, host } = setup();
    host("a");
    const pending = router.call(request("c1"), handlers().h);
    router.cancel("c1", "interrupted");
    vi.advanceTimersByTime(120_000);
    expect(await pending).toMatchObject({ error: { code: "unanswered" } });
  });
});
