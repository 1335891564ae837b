import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { CallNotHeld } from "./errors";
import { bookFlight, call, loadJsonSchemaValidator, never, setup, sleep } from "./test-support/executor";

beforeAll(loadJsonSchemaValidator);

describe("ToolExecutor: interruption", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("cancels interruptible calls that are not held and leaves the others running", async () => {
    const signals: Record<string, AbortSignal> = {};
    const body = (id: string) => (_args: unknown, signal: AbortSignal) => {
      signals[id] = signal;
      return sleep(1_000).then(() => id);
    };
    const { executor } = setup([
      { name: "search", description: "d", interruptible: true, run: body("search") },
      { name: "save", description: "d", run: body("save") },
    ]);
    const search = executor.execute(call("1", "search"));
    const save = executor.execute(call("2", "save"));
    await vi.advanceTimersByTimeAsync(10);
    expect(executor.interrupt()).toEqual(["1"]);
    const cancelled = await search;
    expect(cancelled).toMatchObject({
      outcome: "cancelled",
      held: false,
      error: { code: "interrupted" },
      content: { text: 'The call of "search" was cancelled: the user interrupted.' },
    });
    expect(signals.search?.aborted).toBe(true);
    expect((signals.search!.reason as DOMException).name).toBe("AbortError");
    expect(signals.save?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await save).outcome).toBe("completed");
  });

  it("keeps a held call through an interrupt; only the timeout aborts its held signal", async () => {
    let held: AbortSignal | undefined;
    const { executor, events } = setup([
      bookFlight(
        async (_args, signal, ctx) => {
          await sleep(100);
          held = await ctx.disallowInterruptions();
          expect(await ctx.disallowInterruptions()).toBe(held);
          await sleep(500);
          return `booked (signal aborted: ${signal.aborted})`;
        },
        { interruptible: true },
      ),
    ]);
    const pending = executor.execute(call("c", "book_flight", { flight_id: "LH400", seats: 1 }));
    await vi.advanceTimersByTimeAsync(200);
    expect(events.map((e) => e.type)).toEqual(["started", "held"]);
    expect(events[1]?.payload).toEqual({ callId: "c", name: "book_flight" });
    expect(executor.interrupt()).toEqual([]);
    await vi.advanceTimersByTimeAsync(500);
    expect(await pending).toMatchObject({
      outcome: "completed",
      held: true,
      content: { text: "booked (signal aborted: false)" },
    });
    expect(held?.aborted).toBe(false);
  });

  it("aborts a held call's signal on timeout and reports it held", async () => {
    let held: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        interruptible: true,
        timeoutMs: 1_000,
        run: async (_args, _signal, ctx) => {
          held = await ctx.disallowInterruptions();
          return never();
        },
      },
    ]);
    const pending = executor.execute(call("c", "t"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await pending).toMatchObject({ outcome: "timed_out", held: true });
    expect(held?.aborted).toBe(true);
  });

  it("rejects disallowInterruptions with CallNotHeld after an interrupt, so the change never starts", async () => {
    const change = vi.fn();
    let rejection: unknown;
    const { executor, events } = setup([
      {
        name: "t",
        description: "d",
        interruptible: true,
        run: async (_args, _signal, ctx) => {
          await sleep(100); // ignores the signal
          try {
            await ctx.disallowInterruptions();
            change();
          } catch (error) {
            rejection = error;
          }
        },
      },
    ]);
    const pending = executor.execute(call("c", "t"));
    await vi.advanceTimersByTimeAsync(50);
    executor.interrupt();
    expect((await pending).outcome).toBe("cancelled");
    await vi.advanceTimersByTimeAsync(100);
    expect(change).not.toHaveBeenCalled();
    expect(rejection).toBeInstanceOf(CallNotHeld);
    expect(rejection).toMatchObject({ code: "call_not_held", callId: "c" });
    expect((rejection as Error).message).toContain("interrupted");
    expect(events.map((e) => e.type)).not.toContain("held");
  });

  it("cancels a held call on cancel(), reporting held so the caller knows a change may have happened", async () => {
    let held: AbortSignal | undefined;
    let signal: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        run: async (_args, s, ctx) => {
          signal = s;
          held = await ctx.disallowInterruptions();
          return never();
        },
      },
    ]);
    const pending = executor.execute(call("c", "t"));
    await vi.advanceTimersByTimeAsync(0);
    expect(executor.cancel("c")).toBe(true);
    expect(executor.cancel("c")).toBe(false);
    const result = await pending;
    expect(result).toMatchObject({ outcome: "cancelled", held: true, error: { code: "cancelled" } });
    expect(result.content.text).toBe(
      'The call of "t" was cancelled after it had started a change, which may have completed.',
    );
    expect(signal?.aborted).toBe(true);
    expect(held?.aborted).toBe(false);
  });

  it("cancels a call when the execute signal aborts", async () => {
    const { executor } = setup([{ name: "t", description: "d", run: () => never() }]);
    const controller = new AbortController();
    const pending = executor.execute(call("c", "t"), { signal: controller.signal });
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    expect((await pending).outcome).toBe("cancelled");
    const already = await executor.execute(call("d", "t"), { signal: AbortSignal.abort() });
    expect(already.outcome).toBe("cancelled");
  });

  it("cancels an interruptible call that waits for approval", async () => {
    const seen: AbortSignal[] = [];
    const { executor } = setup(
      [{ name: "t", description: "d", interruptible: true, approval: { title: "Go?" }, run: () => "ran" }],
      {
        approvalGate: (_request, signal) => {
          seen.push(signal);
          return never();
        },
      },
    );
    const pending = executor.execute(call("c", "t"));
    await vi.advanceTimersByTimeAsync(0);
    expect(executor.interrupt()).toEqual(["c"]);
    expect((await pending).outcome).toBe("cancelled");
    expect(seen[0]?.aborted).toBe(true);
  });
});

describe("ToolExecutor: what should not throw", () => {
  it("ends a call as failed (internal) when a step throws where nothing should, leaving no rejection behind", async () => {
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    try {
      const { z } = await import("zod");
      const { executor } = setup([
        {
          name: "sync_throw",
          description: "d",
          parameters: z.object({ a: z.string() }).transform(() => {
            throw new Error("transform broke");
          }),
          run: () => "ran",
        },
        {
          name: "async_throw",
          description: "d",
          parameters: z.object({ a: z.string() }).transform(async () => {
            throw new Error("async transform broke");
          }),
          run: () => "ran",
        },
        { name: "fine", description: "d", run: () => "ran" },
      ]);
      for (const [name, message] of [
        ["sync_throw", "transform broke"],
        ["async_throw", "async transform broke"],
      ] as const) {
        expect(await executor.execute(call(name, name, { a: "x" }))).toMatchObject({
          outcome: "failed",
          error: { code: "internal", message },
        });
      }
      executor.once("started", () => {
        throw new Error("listener broke");
      });
      expect(await executor.execute(call("f1", "fine"))).toMatchObject({
        outcome: "failed",
        error: { code: "internal", message: "listener broke" },
      });
      expect((await executor.execute(call("f2", "fine"))).outcome).toBe("completed");
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off("unhandledRejection", unhandled);
    }
  });
});
