import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { ApprovalGate } from "./approval-gate";
import { call, deferred, loadJsonSchemaValidator, setup } from "./test-support/executor";

beforeAll(loadJsonSchemaValidator);

describe("the call pipeline", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("parses before asking for approval: a call with bad arguments never reaches the user", async () => {
    const gate = vi.fn<ApprovalGate>(async () => "allowed");
    const { executor } = setup(
      [
        {
          name: "pay",
          description: "Pays",
          parameters: z.object({ amount: z.number().positive() }),
          approval: { title: "Pay {{amount}}" },
          run: () => "paid",
        },
      ],
      { approvalGate: gate },
    );
    const result = await executor.execute(call("c1", "pay", { amount: -1 }));
    expect(result.outcome).toBe("invalid_arguments");
    expect(gate).not.toHaveBeenCalled();
  });

  it("starts the timeout after the approval: the user's time to answer does not count", async () => {
    const answer = deferred<"allowed">();
    const { executor } = setup(
      [{ name: "pay", description: "Pays", approval: { title: "Pay" }, timeoutMs: 1_000, run: () => "paid" }],
      { approvalGate: () => answer.promise },
    );
    const pending = executor.execute(call("c1", "pay"));
    await vi.advanceTimersByTimeAsync(5_000);
    answer.resolve("allowed");
    await vi.advanceTimersByTimeAsync(0);
    expect((await pending).outcome).toBe("completed");
  });

  it("counts the wait for a slot toward the timeout", async () => {
    const { executor } = setup([
      {
        name: "slow",
        description: "Slow",
        timeoutMs: 1_000,
        concurrency: 1,
        run: () => new Promise(() => {}),
      },
    ]);
    const first = executor.execute(call("c1", "slow"));
    const second = executor.execute(call("c2", "slow"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await first).outcome).toBe("timed_out");
    expect((await second).outcome).toBe("timed_out");
  });
});
