import type { InboundMessage } from "@patchbay/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import { recordingWorker, sentOf } from "./test-workers";
import { type WorkOutcome, type WorkPayload, WorkRouter } from "./work-router";
import { WorkerRegistry } from "./worker-registry";

afterEach(() => {
  vi.useRealTimers();
});

function message(id: string, sessionId: string | null = null): WorkPayload {
  const m: InboundMessage = {
    id,
    agent: "support",
    sessionId,
    channel: { type: "sms", id: "+1" },
    user: { id: "u_1" },
    text: id,
    createdAt: 1,
    metadata: {},
  };
  return { kind: "message", message: m };
}

function setup(
  options: {
    maxQueue?: number;
    queueTimeoutMs?: number;
    acceptTimeoutMs?: number;
    workTimeoutMs?: number;
  } = {},
) {
  const registry = new WorkerRegistry();
  const router = new WorkRouter({ registry, ...options });
  return { registry, router };
}

describe("WorkRouter", () => {
  it("drops work when no worker is connected, and says why", () => {
    const { router } = setup();
    const settled: WorkOutcome[] = [];
    const receipt = router.submit(message("m1"), { onSettled: (o) => settled.push(o) });
    expect(receipt).toMatchObject({ status: "dropped", error: { code: "no_worker" } });
    expect(settled).toEqual([]);
  });

  it("reserves the slot at the offer, so two offers never share a last slot", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    const b = recordingWorker("b", { capacity: 2 });
    registry.add(a);
    registry.add(b);
    const receipts = ["m1", "m2", "m3", "m4"].map((id) => router.submit(message(id)));
    expect(receipts.map((r) => r.status)).toEqual(["offered", "offered", "offered", "queued"]);
    expect(sentOf(b, "work.offered").map((f) => f.work.kind === "message" && f.work.message.id)).toEqual([
      "m1",
      "m3",
    ]);
    expect(sentOf(a, "work.offered")).toHaveLength(1);
    expect(router.queued).toBe(1);
  });

  it("offers queued work as soon as a slot frees, and settles work when it is done", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    registry.add(a);
    const settled: WorkOutcome[] = [];
    const first = router.submit(message("m1"), { onSettled: (o) => settled.push(o) });
    router.submit(message("m2"));
    router.onFrame(a, { type: "work.accepted", workId: first.workId });
    router.onFrame(a, { type: "work.done", workId: first.workId });
    expect(settled).toEqual([{ kind: "done", workerId: "a" }]);
    expect(sentOf(a, "work.offered").map((f) => f.work.kind === "message" && f.work.message.id)).toEqual([
      "m1",
      "m2",
    ]);
    expect(router.queued).toBe(0);
  });

  it("bounds the queue and drops what does not fit with queue_full", () => {
    const { registry, router } = setup({ maxQueue: 1 });
    registry.add(recordingWorker("a", { capacity: 1 }));
    router.submit(message("m1"));
    expect(router.submit(message("m2")).status).toBe("queued");
    expect(router.submit(message("m3"))).toMatchObject({ status: "dropped", error: { code: "queue_full" } });
  });

  it("drops queued work that waited too long, and tells the submitter", () => {
    vi.useFakeTimers();
    const { registry, router } = setup({ queueTimeoutMs: 1_000 });
    registry.add(recordingWorker("a", { capacity: 1 }));
    router.submit(message("m1"));
    const settled: WorkOutcome[] = [];
    router.submit(message("m2"), { onSettled: (o) => settled.push(o) });
    vi.advanceTimersByTime(999);
    expect(settled).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(settled).toEqual([{ kind: "dropped", error: expect.objectContaining({ code: "no_worker" }) }]);
    expect(router.queued).toBe(0);
  });

  it("offers work a worker did not accept in time to another worker, and ignores its late accept", () => {
    vi.useFakeTimers();
    const { registry, router } = setup({ acceptTimeoutMs: 500 });
    const a = recordingWorker("a", { capacity: 1 });
    const b = recordingWorker("b", { capacity: 1 });
    b.lastGivenAt = 1;
    registry.add(a);
    registry.add(b);
    const settled: WorkOutcome[] = [];
    const receipt = router.submit(message("m1"), { onSettled: (o) => settled.push(o) });
    expect(sentOf(a, "work.offered")).toHaveLength(1);
    vi.advanceTimersByTime(499);
    expect(sentOf(b, "work.offered")).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(sentOf(b, "work.offered").map((f) => f.workId)).toEqual([receipt.workId]);
    expect(a.reserved.size).toBe(0);
    router.onFrame(a, { type: "work.accepted", workId: receipt.workId });
    router.onFrame(a, { type: "work.done", workId: receipt.workId });
    expect(settled).toEqual([]);
    router.onFrame(b, { type: "work.accepted", workId: receipt.workId });
    router.onFrame(b, { type: "work.done", workId: receipt.workId });
    expect(settled).toEqual([{ kind: "done", workerId: "b" }]);
  });

  it("ends accepted work that runs past its deadline with work_timeout and frees the slot", () => {
    vi.useFakeTimers();
    const { registry, router } = setup({ workTimeoutMs: 2_000 });
    const a = recordingWorker("a", { capacity: 1 });
    registry.add(a);
    const settled: WorkOutcome[] = [];
    const receipt = router.submit(message("m1"), { onSettled: (o) => settled.push(o) });
    router.submit(message("m2"));
    router.onFrame(a, { type: "work.accepted", workId: receipt.workId });
    vi.advanceTimersByTime(1_999);
    expect(settled).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(settled).toEqual([{ kind: "dropped", error: expect.objectContaining({ code: "work_timeout" }) }]);
    // The freed slot takes the queued message; a late done for the first changes nothing.
    expect(sentOf(a, "work.offered").map((f) => f.work.kind === "message" && f.work.message.id)).toEqual([
      "m1",
      "m2",
    ]);
    router.onFrame(a, { type: "work.done", workId: receipt.workId });
    expect(settled).toHaveLength(1);
  });

  it("offers work handed back by a draining worker to another worker", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    const b = recordingWorker("b", { capacity: 1 });
    b.lastGivenAt = 1;
    registry.add(a);
    registry.add(b);
    const receipt = router.submit(message("m1"));
    expect(sentOf(a, "work.offered")).toHaveLength(1);
    router.onFrame(a, {
      type: "work.done",
      workId: receipt.workId,
      error: { code: "draining", message: "stop" },
    });
    expect(sentOf(b, "work.offered").map((f) => f.workId)).toEqual([receipt.workId]);
    expect(a.reserved.size).toBe(0);
  });

  it("offers a gone worker's unfinished work again with a higher attempt", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    const b = recordingWorker("b", { capacity: 1 });
    registry.add(a);
    const receipt = router.submit(message("m1"));
    router.onFrame(a, { type: "work.accepted", workId: receipt.workId });
    registry.remove(a);
    router.onWorkerGone(a);
    expect(router.queued).toBe(1);
    registry.add(b);
    router.pump();
    expect(sentOf(b, "work.offered")).toEqual([
      expect.objectContaining({ workId: receipt.workId, attempt: 2 }),
    ]);
  });

  it("gives work back to a worker that returns saying it still runs it", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    registry.add(a);
    const settled: WorkOutcome[] = [];
    const receipt = router.submit(message("m1"), { onSettled: (o) => settled.push(o) });
    registry.remove(a);
    router.onWorkerGone(a);
    const again = recordingWorker("a", { capacity: 1 });
    registry.add(again);
    router.adopt(again, [receipt.workId]);
    expect(router.queued).toBe(0);
    expect(sentOf(again, "work.offered")).toEqual([]);
    expect(registry.free(again)).toBe(0);
    router.onFrame(again, { type: "work.done", workId: receipt.workId });
    expect(settled).toEqual([{ kind: "done", workerId: "a" }]);
  });

  it("passes a worker's answer to the submitter once", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    registry.add(a);
    let answers = 0;
    const receipt = router.submit(message("m1", "s_1"), { onAnswer: () => answers++ });
    router.onFrame(a, { type: "answer", workId: receipt.workId, sessionId: "s_1", messageId: "m1" });
    router.onFrame(a, { type: "answer", sessionId: "s_1", messageId: "m1" });
    expect(answers).toBe(1);
    expect(sentOf(a, "error")).toEqual([expect.objectContaining({ code: "conflict", path: "messageId" })]);
  });

  it("tells the worker when its answer has no work to go to or names another session", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    registry.add(a);
    let answers = 0;
    const receipt = router.submit(message("m1", "s_1"), { onAnswer: () => answers++ });
    router.onFrame(a, { type: "answer", workId: receipt.workId, sessionId: "s_2", messageId: "m1" });
    router.onFrame(a, { type: "work.accepted", workId: receipt.workId });
    router.onFrame(a, { type: "work.done", workId: receipt.workId });
    router.onFrame(a, { type: "answer", workId: receipt.workId, sessionId: "s_1", messageId: "m1" });
    router.onFrame(a, { type: "answer", sessionId: "s_9", messageId: "m_unknown" });
    expect(answers).toBe(0);
    expect(sentOf(a, "error").map((e) => [e.code, e.path])).toEqual([
      ["invalid_frame", "sessionId"],
      ["not_found", "workId"],
      ["not_found", "messageId"],
    ]);
  });

  it("withdraws work that still waits", () => {
    const { registry, router } = setup();
    registry.add(recordingWorker("a", { capacity: 1 }));
    router.submit(message("m1"));
    const settled: WorkOutcome[] = [];
    const waiting = router.submit(message("m2"), { onSettled: (o) => settled.push(o) });
    expect(router.withdraw(waiting.workId, { code: "interrupted", message: "x" })).toBe(true);
    expect(router.queued).toBe(0);
    expect(settled).toEqual([{ kind: "dropped", error: { code: "interrupted", message: "x" } }]);
  });

  it("joins work delivered again under its id on the worker that said hello still running it (a cluster's reroute), counting what it said meanwhile", async () => {
    const registry = new WorkerRegistry();
    const orphans: string[][] = [];
    const router = new WorkRouter({ registry });
    router.watchOrphans((ids) => orphans.push(ids));
    const a = recordingWorker("a", { capacity: 2 });
    const b = recordingWorker("b", { capacity: 2 });
    registry.add(a);
    registry.add(b);
    // Another node gave `a` this work before that node died; `a` says hello here still running it.
    router.adopt(a, ["wk_lost"]);
    expect(orphans).toEqual([["wk_lost"]]);
    // It answers and finishes before the owner delivers the work here again.
    router.onFrame(a, { type: "answer", sessionId: "s_1", messageId: "m1", workId: "wk_lost" });
    router.onFrame(a, { type: "work.done", workId: "wk_lost" });
    expect(sentOf(a, "error")).toEqual([]);
    const heard: string[] = [];
    const receipt = router.submit(
      message("m1", "s_1"),
      { onAnswer: () => heard.push("answer"), onSettled: (o) => heard.push(o.kind) },
      { workId: "wk_lost", attempt: 2 },
    );
    expect(receipt).toEqual({ status: "offered", workId: "wk_lost" });
    await new Promise((r) => setTimeout(r, 0));
    expect(heard).toEqual(["answer", "done"]);
    // Nobody was offered it: it ran once, on `a`.
    expect([...sentOf(a, "work.offered"), ...sentOf(b, "work.offered")]).toEqual([]);

    // Work still running is joined too: its later work.done settles it.
    router.adopt(b, ["wk_running"]);
    let outcome: WorkOutcome | undefined;
    router.submit(
      message("m2", "s_1"),
      { onSettled: (o) => (outcome = o) },
      { workId: "wk_running", attempt: 3 },
    );
    expect(sentOf(b, "work.offered")).toEqual([]);
    router.onFrame(b, { type: "work.done", workId: "wk_running" });
    expect(outcome).toEqual({ kind: "done", workerId: "b" });

    // Work that finished while the worker was cut off is not in its hello; the frames it sends
    // again right after the hello make it known all the same.
    const c = recordingWorker("c", { capacity: 1 });
    registry.add(c);
    router.adopt(c, []);
    router.onFrame(c, { type: "answer", sessionId: "s_1", messageId: "m4", workId: "wk_finished" });
    router.onFrame(c, { type: "work.done", workId: "wk_finished" });
    expect(orphans.at(-1)).toEqual(["wk_finished"]);
    expect(sentOf(c, "error")).toEqual([]);
    const late: string[] = [];
    router.submit(
      message("m4", "s_1"),
      { onAnswer: () => late.push("answer"), onSettled: (o) => late.push(o.kind) },
      { workId: "wk_finished", attempt: 2 },
    );
    await new Promise((r) => setTimeout(r, 0));
    expect(late).toEqual(["answer", "done"]);
    expect(sentOf(c, "work.offered")).toEqual([]);

    // Work no worker here runs is offered as usual, under the id and attempt it was given.
    router.submit(message("m3", "s_1"), {}, { workId: "wk_new", attempt: 2 });
    expect([...sentOf(a, "work.offered"), ...sentOf(b, "work.offered")]).toEqual([
      expect.objectContaining({ workId: "wk_new", attempt: 2 }),
    ]);
  });

  it("keeps a single server's answer to an answer for work it never gave out: an error naming it", () => {
    const { registry, router } = setup();
    const a = recordingWorker("a", { capacity: 1 });
    registry.add(a);
    router.adopt(a, ["wk_before_restart"]);
    router.onFrame(a, { type: "answer", sessionId: "s_1", messageId: "m1", workId: "wk_before_restart" });
    expect(sentOf(a, "error")).toEqual([expect.objectContaining({ code: "not_found", path: "workId" })]);
  });
});
