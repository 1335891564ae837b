import type { ApprovalRequest } from "@patchbay/protocol";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { allowAll } from "./approval-gate";
import { hashArguments } from "./hash-arguments";
import { bookFlight, call, loadJsonSchemaValidator, never, setup } from "./test-support/executor";

beforeAll(loadJsonSchemaValidator);

describe("ToolExecutor: approval", () => {
  const approvalTool = (run = vi.fn(() => "booked")) => ({
    run,
    definition: bookFlight(run, {
      parameters: z.object({ flight_id: z.string(), seats: z.number(), reason: z.string().optional() }),
      approval: {
        title: "Book flight {flight_id} for {seats}?",
        reasonArgument: "reason",
        allowTitle: "Book",
      },
    }),
  });

  it("declines when there is no gate, and the function never runs", async () => {
    const { run, definition } = approvalTool();
    const { executor } = setup([definition]);
    const result = await executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }));
    expect(result).toMatchObject({ outcome: "declined", error: { code: "approval_unavailable" } });
    expect(run).not.toHaveBeenCalled();
  });

  it("asks the gate with the filled title, the reason, the titles and a binding, then runs", async () => {
    const { run, definition } = approvalTool();
    const requests: ApprovalRequest[] = [];
    const args = { flight_id: "LH400", seats: 2, reason: "the user asked" };
    const { executor } = setup([definition], {
      now: () => 1_000,
      approvalGate: async (request) => {
        requests.push(request);
        return { outcome: "allowed", callId: request.callId, argumentsHash: request.argumentsHash };
      },
    });
    const result = await executor.execute(call("call_9", "book_flight", args));
    expect(result.outcome).toBe("completed");
    expect(run).toHaveBeenCalledTimes(1);
    expect(requests).toEqual([
      {
        id: "approval_call_9",
        callId: "call_9",
        tool: "book_flight",
        title: "Book flight LH400 for 2?",
        reason: "the user asked",
        allowTitle: "Book",
        declineTitle: "Decline",
        argumentsHash: hashArguments(args),
        expiresAt: 1_000 + 5 * 60_000,
      },
    ]);
  });

  it("tells the model the user declined", async () => {
    const { run, definition } = approvalTool();
    const { executor } = setup([definition], { approvalGate: async () => "declined" });
    const result = await executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }));
    expect(result).toMatchObject({
      outcome: "declined",
      content: { text: 'The user declined the call of "book_flight"; it did not run.' },
    });
    expect(run).not.toHaveBeenCalled();
  });

  it("refuses an approval bound to other arguments or another call", async () => {
    const { run, definition } = approvalTool();
    const { executor } = setup([definition], {
      approvalGate: async (request) => ({
        outcome: "allowed",
        callId: request.callId,
        argumentsHash: hashArguments({ flight_id: "XX1", seats: 9 }),
      }),
    });
    const result = await executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }));
    expect(result).toMatchObject({ outcome: "declined", error: { code: "approval_mismatch" } });
    const other = setup([approvalTool(run).definition], {
      approvalGate: async () => ({ outcome: "allowed", callId: "someone_else" }),
    });
    expect(
      (await other.executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }))).outcome,
    ).toBe("declined");
    expect(run).not.toHaveBeenCalled();
  });

  it("reports a gate that answers expired", async () => {
    const { definition } = approvalTool();
    const { executor } = setup([definition], { approvalGate: async () => "expired" });
    const result = await executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }));
    expect(result.outcome).toBe("approval_expired");
  });

  it("reports a gate that throws as a failure without running", async () => {
    const { run, definition } = approvalTool();
    const { executor } = setup([definition], {
      approvalGate: async () => {
        throw new Error("socket closed");
      },
    });
    const result = await executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }));
    expect(result).toMatchObject({
      outcome: "failed",
      error: { code: "approval_failed", message: "socket closed" },
    });
    expect(run).not.toHaveBeenCalled();
  });

  it("runs everything with allowAll", async () => {
    const { run, definition } = approvalTool();
    const { executor } = setup([definition], { approvalGate: allowAll });
    expect((await executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 }))).outcome).toBe(
      "completed",
    );
    expect(run).toHaveBeenCalledTimes(1);
  });

  describe("expiry", () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it("expires after 5 minutes by default and withdraws the question", async () => {
      const { run, definition } = approvalTool();
      let signal: AbortSignal | undefined;
      const { executor } = setup([definition], {
        approvalGate: (_request, s) => {
          signal = s;
          return never();
        },
      });
      const done = vi.fn();
      const pending = executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 2 })).then(done);
      await vi.advanceTimersByTimeAsync(5 * 60_000 - 1);
      expect(done).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      await pending;
      expect(done.mock.calls[0]?.[0]).toMatchObject({
        outcome: "approval_expired",
        error: { code: "approval_expired" },
      });
      expect(signal?.aborted).toBe(true);
      expect(run).not.toHaveBeenCalled();
    });

    it("honours the tool's expiresInMs and refuses an answer that arrives after expiry", async () => {
      const run = vi.fn();
      let clock = 0;
      const { executor } = setup(
        [{ name: "t", description: "d", approval: { title: "Go?", expiresInMs: 1_000 }, run }],
        {
          now: () => clock,
          approvalGate: async () => {
            clock = 2_000; // the answer is stamped after the deadline
            return "allowed";
          },
        },
      );
      expect((await executor.execute(call("c", "t"))).outcome).toBe("approval_expired");
      expect(run).not.toHaveBeenCalled();
    });
  });
});
