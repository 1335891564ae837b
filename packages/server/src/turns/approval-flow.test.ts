// The approval flow on a MemoryStore, without sockets: what is asked, recorded and broadcast,
// and how each question ends (allowed, declined, expired, cancelled).
import { describe, expect, it } from "vitest";
import { NotFoundError, ServerError } from "../errors";
import { memorySession } from "../testing/memory-session";
import { ApprovalFlow } from "./approval-flow";

const question = (callId: string, expiresInMs?: number) => ({
  callId,
  tool: "book_flight",
  approval: {
    title: "Book {flight_id}?",
    ...(expiresInMs === undefined ? {} : { expiresInMs }),
  },
  arguments: { flight_id: "LH400" },
});

describe("ApprovalFlow", () => {
  it("asks with the arguments filled in, and records and broadcasts the user's answer", async () => {
    const session = await memorySession();
    const flow = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 });
    const asked = flow.ask(question("call_1"));
    await expect.poll(() => session.eventsOf("approval.requested").length).toBe(1);
    const [requested] = session.eventsOf("approval.requested");
    expect(requested?.approval).toMatchObject({ callId: "call_1", title: "Book LH400?" });
    expect(flow.pending().map((request) => request.id)).toEqual([requested!.approval.id]);
    expect(await session.store.approvals("s_1", { open: true })).toHaveLength(1);

    flow.decide(requested!.approval.id, true);
    expect(await asked).toBe("allowed");
    expect(session.eventsOf("approval.resolved")).toEqual([
      expect.objectContaining({ approvalId: requested!.approval.id, callId: "call_1", outcome: "allowed" }),
    ]);
    expect(await session.store.approvals("s_1", { open: true })).toEqual([]);
    expect(await session.store.approvals("s_1")).toEqual([
      expect.objectContaining({ outcome: "allowed", decidedAt: expect.any(Number) }),
    ]);
    expect(flow.pending()).toEqual([]);
  });

  it("refuses a second answer (conflict) and an id it never asked (not_found)", async () => {
    const session = await memorySession();
    const flow = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 });
    const asked = flow.ask(question("call_2"));
    await expect.poll(() => flow.pending().length).toBe(1);
    const id = flow.pending()[0]!.id;
    flow.decide(id, false);
    expect(await asked).toBe("declined");
    let second: unknown;
    try {
      flow.decide(id, true);
    } catch (error) {
      second = error;
    }
    expect(second).toBeInstanceOf(ServerError);
    expect(second).toMatchObject({ code: "conflict", path: "approvalId" });
    expect(() => flow.decide("ap_never", true)).toThrow(NotFoundError);
    // The declined outcome stands.
    expect(session.eventsOf("approval.resolved").map((event) => event.outcome)).toEqual(["declined"]);
  });

  it("expires a question nobody answers, after the tool's own expiresInMs", async () => {
    const session = await memorySession();
    const flow = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 });
    const started = Date.now();
    expect(await flow.ask(question("call_3", 30))).toBe("expired");
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(session.eventsOf("approval.resolved")[0]).toMatchObject({ outcome: "expired" });
  });

  it("cancels a question when its turn is interrupted or the session closes", async () => {
    const session = await memorySession();
    const flow = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 });
    const controller = new AbortController();
    const interrupted = flow.ask({ ...question("call_4"), signal: controller.signal });
    const closing = flow.ask(question("call_5"));
    await expect.poll(() => flow.pending().length).toBe(2);
    controller.abort();
    expect(await interrupted).toBe("cancelled");
    flow.cancelAll();
    expect(await closing).toBe("cancelled");
    expect(session.eventsOf("approval.resolved").map((event) => [event.callId, event.outcome])).toEqual([
      ["call_4", "cancelled"],
      ["call_5", "cancelled"],
    ]);
    // A question asked after its turn was interrupted is never put to the user.
    expect(await flow.ask({ ...question("call_6"), signal: controller.signal })).toBe("cancelled");
    expect(session.eventsOf("approval.requested")).toHaveLength(2);
  });
});
