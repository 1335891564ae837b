import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { buildApprovalRequest } from "./approval-request";
import { CallNotHeld } from "./errors";
import { interruptCancels } from "./interrupt-rule";
import type { ToolDefinition } from "./tool-definition";
import { ToolExecutor } from "./tool-executor";
import type { HoldDecision, HoldRequest, ToolExecutorOptions } from "./tool-executor-options";
import { Tools } from "./tools";

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function setup(definitions: ToolDefinition<any>[], options: Partial<ToolExecutorOptions> = {}) {
  return new ToolExecutor({
    tools: new Tools(definitions),
    sessionId: "s_1",
    user: { id: "u_1" },
    ...options,
  });
}

/** A tool that holds, records what happened, and books unless the hold failed. */
function booking(steps: string[], after = () => Promise.resolve()): ToolDefinition<any> {
  return {
    name: "book",
    description: "Books",
    interruptible: true,
    run: async (_args, _signal, ctx) => {
      try {
        await ctx.disallowInterruptions();
      } catch (error) {
        steps.push((error as Error).name);
        throw error;
      }
      steps.push("booked");
      await after();
      return "Booked.";
    },
  };
}

describe("ToolExecutor: holds the host confirms", () => {
  it("holds only once confirmHold accepts, with the call's attempt", async () => {
    const asked: HoldRequest[] = [];
    const answer = deferred<HoldDecision>();
    const steps: string[] = [];
    const executor = setup([booking(steps)], {
      confirmHold: (request) => {
        asked.push(request);
        return answer.promise;
      },
    });
    const held: string[] = [];
    executor.on("held", ({ callId }) => held.push(callId));
    const running = executor.execute({ id: "c1", name: "book", arguments: {} }, { attempt: 3 });
    // The first call of a JSON Schema tool loads the validator first (a dynamic import).
    await vi.waitFor(() => expect(asked).toHaveLength(1));
    expect(asked).toMatchObject([{ callId: "c1", name: "book", attempt: 3 }]);
    expect(steps).toEqual([]);
    expect(held).toEqual([]);
    answer.resolve({ accepted: true });
    expect(await running).toMatchObject({ outcome: "completed", held: true });
    expect(steps).toEqual(["booked"]);
    expect(held).toEqual(["c1"]);
  });

  it("a refusal because a cancel is under way cancels the call; the tool never books", async () => {
    const steps: string[] = [];
    const executor = setup([booking(steps)], {
      confirmHold: () => ({ accepted: false, reason: "cancelling" }),
    });
    const result = await executor.execute({ id: "c1", name: "book", arguments: {} });
    expect(result).toMatchObject({ outcome: "cancelled", held: false, error: { code: "interrupted" } });
    expect(result.content.text).toBe('The call of "book" was cancelled: the user interrupted.');
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(steps).toEqual(["CallNotHeld"]);
  });

  it("another refusal fails the hold with CallNotHeld naming the reason", async () => {
    let error: unknown;
    const executor = setup(
      [
        {
          name: "book",
          description: "Books",
          run: async (_args, _signal, ctx) => {
            try {
              await ctx.disallowInterruptions();
            } catch (e) {
              error = e;
            }
            return "did not book";
          },
        },
      ],
      { confirmHold: () => ({ accepted: false, reason: "stale_attempt" }) },
    );
    await executor.execute({ id: "c1", name: "book", arguments: {} });
    expect(error).toBeInstanceOf(CallNotHeld);
    expect((error as CallNotHeld).message).toBe(
      "tool call c1 cannot be held: the hold was refused by the server (stale_attempt)",
    );
  });

  it("a cancel while the hold waits for its answer stops the call (it is not held yet)", async () => {
    const steps: string[] = [];
    const executor = setup([booking(steps)], { confirmHold: () => new Promise<HoldDecision>(() => {}) });
    const running = executor.execute({ id: "c1", name: "book", arguments: {} });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(executor.cancel("c1", "interrupted")).toBe(true);
    expect(await running).toMatchObject({ outcome: "cancelled", held: false });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(steps).toEqual(["CallNotHeld"]);
  });
});

describe("ToolExecutor: cancel by reason", () => {
  it("an interrupt's or a session's cancel leaves a held call running; timed_out aborts its held signal", async () => {
    const release = deferred();
    let heldSignal: AbortSignal | undefined;
    const executor = setup([
      {
        name: "book",
        description: "Books",
        interruptible: true,
        run: async (_args, _signal, ctx) => {
          heldSignal = await ctx.disallowInterruptions();
          await Promise.race([release.promise, new Promise((r) => heldSignal!.addEventListener("abort", r))]);
          return "Booked.";
        },
      },
    ]);
    const running = executor.execute({ id: "c1", name: "book", arguments: {} });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(executor.isHeld("c1")).toBe(true);
    expect(executor.cancel("c1", "interrupted")).toBe(false);
    expect(executor.cancel("c1", "session_closed")).toBe(false);
    expect(heldSignal?.aborted).toBe(false);
    expect(executor.cancel("c1", "timed_out")).toBe(true);
    expect(heldSignal?.aborted).toBe(true);
    const result = await running;
    expect(result).toMatchObject({ outcome: "timed_out", held: true });
    expect(result.content.text).toBe('The call of "book" timed out after 30000 ms.');
  });

  it("runs a call under the timeout it is given instead of the tool's", async () => {
    const executor = setup([
      {
        name: "slow",
        description: "Slow",
        timeoutMs: 60_000,
        run: (_args, signal) =>
          new Promise((_r, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
      },
    ]);
    const started = Date.now();
    const result = await executor.execute({ id: "c1", name: "slow", arguments: {} }, { timeoutMs: 50 });
    expect(result.outcome).toBe("timed_out");
    expect(result.content.text).toBe('The call of "slow" timed out after 50 ms.');
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe("ToolExecutor: arguments and concurrency decided by the caller", () => {
  it("parses arguments once when the caller checked them", async () => {
    let parses = 0;
    const seen: unknown[] = [];
    const executor = setup([
      {
        name: "t",
        description: "T",
        parameters: z.object({ n: z.number() }).transform((value) => {
          parses++;
          return { n: value.n * 2 };
        }),
        run: async (args) => {
          seen.push(args);
          return "ok";
        },
      },
    ]);
    const checked = await executor.checkArguments("t", { n: 2 });
    expect(checked).toEqual({ ok: true, value: { n: 4 } });
    await executor.execute(
      { id: "c1", name: "t", arguments: { n: 2 } },
      { checkedArguments: { value: { n: 4 } } },
    );
    expect(parses).toBe(1);
    expect(seen).toEqual([{ n: 4 }]);
    expect(await executor.checkArguments("nope", {})).toBeUndefined();
  });

  it("with maxConcurrentCalls null, caps nothing per session itself", async () => {
    const gate = deferred();
    let running = 0;
    let most = 0;
    const executor = setup(
      [
        {
          name: "t",
          description: "T",
          run: async () => {
            running++;
            most = Math.max(most, running);
            await gate.promise;
            running--;
            return "ok";
          },
        },
      ],
      { maxConcurrentCalls: null },
    );
    const calls = Array.from({ length: 20 }, (_, i) =>
      executor.execute({ id: `c${i}`, name: "t", arguments: {} }),
    );
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(most).toBe(20);
    gate.resolve();
    await Promise.all(calls);
  });
});

describe("the interrupt rule and the approval request", () => {
  it("an interrupt cancels only an interruptible call that is not held", () => {
    expect(interruptCancels({ interruptible: true, held: false })).toBe(true);
    expect(interruptCancels({ interruptible: true, held: true })).toBe(false);
    expect(interruptCancels({ interruptible: false, held: false })).toBe(false);
  });

  it("builds one approval request: id from the call, title filled, reason left out when null", () => {
    const approval = { title: "Book {flight_id}?", reasonArgument: "why", expiresInMs: 1_000 };
    const request = buildApprovalRequest({
      callId: "call_1",
      tool: "book",
      approval,
      arguments: { flight_id: "LH400", why: null },
      now: 5,
      defaultExpiresInMs: 300_000,
    });
    expect(request).toEqual({
      id: "approval_call_1",
      callId: "call_1",
      tool: "book",
      title: "Book LH400?",
      allowTitle: "Allow",
      declineTitle: "Decline",
      argumentsHash: request.argumentsHash,
      expiresAt: 1_005,
    });
    expect(
      buildApprovalRequest({
        callId: "c",
        tool: "b",
        approval,
        arguments: { why: { seat: 2 } },
        now: 0,
        defaultExpiresInMs: 1,
      }).reason,
    ).toBe('{"seat":2}');
  });
});
