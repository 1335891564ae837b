import { type ApprovalRequest, ToolResultSchema } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { allowAll } from "./approval-gate";
import { CallNotHeld, ToolError } from "./errors";
import { hashArguments } from "./hash-arguments";
import type { IdempotencyStore } from "./idempotency-store";
import type { ToolCallContext, ToolDefinition } from "./tool-definition";
import type { ToolExecutionResult } from "./tool-execution-result";
import { toToolResult } from "./tool-execution-result";
import { ToolExecutor, type ToolExecutorOptions } from "./tool-executor";
import { ToolLimiter } from "./tool-limiter";
import { ToolOutput } from "./tool-output";
import { Tools } from "./tools";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const never = () => new Promise<never>(() => {});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function setup(definitions: ToolDefinition<any>[], options: Partial<ToolExecutorOptions> = {}) {
  const tools = new Tools(definitions);
  const executor = new ToolExecutor({ tools, sessionId: "s_1", user: { id: "u_1" }, ...options });
  const events: { type: string; payload: unknown }[] = [];
  for (const type of ["started", "progress", "say", "held", "finished"] as const) {
    executor.on(type, (payload: unknown) => events.push({ type, payload }));
  }
  return { tools, executor, events };
}

const bookFlight = (run: ToolDefinition<any>["run"], extra: Partial<ToolDefinition<any>> = {}) => ({
  name: "book_flight",
  description: "Book a flight for the caller",
  parameters: z.object({
    flight_id: z.string().regex(/^[A-Z]{2}\d{1,4}$/),
    seats: z.number().int().min(1).max(9),
    cabin: z.enum(["economy", "business", "first"]).default("economy"),
  }),
  run,
  ...extra,
});

const call = (id: string, name: string, args: Record<string, unknown> = {}) => ({
  id,
  name,
  arguments: args,
});

describe("ToolExecutor: results", () => {
  it("runs a tool with parsed arguments (defaults applied) and the call context", async () => {
    const conversation = [
      {
        type: "message" as const,
        id: "m_1",
        role: "user" as const,
        text: "hi",
        status: "completed" as const,
        createdAt: 0,
      },
    ];
    let seen: { args: unknown; ctx: ToolCallContext } | undefined;
    const { executor, events } = setup(
      [
        bookFlight((args, _signal, ctx) => {
          seen = { args, ctx };
          return `Booked ${args.flight_id}`;
        }),
      ],
      { conversation: () => conversation },
    );
    const result = await executor.execute(call("call_1", "book_flight", { flight_id: "LH400", seats: 2 }));
    expect(result).toMatchObject({
      callId: "call_1",
      name: "book_flight",
      outcome: "completed",
      content: { text: "Booked LH400", images: [] },
      held: false,
      attempt: 1,
    });
    expect(result.error).toBeUndefined();
    expect(seen?.args).toEqual({ flight_id: "LH400", seats: 2, cabin: "economy" });
    expect(seen?.ctx).toMatchObject({
      id: "call_1",
      name: "book_flight",
      sessionId: "s_1",
      user: { id: "u_1" },
      attempt: 1,
    });
    expect(seen?.ctx.conversation).toBe(conversation);
    expect(events.map((e) => e.type)).toEqual(["started", "finished"]);
    expect(events[0]?.payload).toEqual({
      callId: "call_1",
      name: "book_flight",
      attempt: 1,
      arguments: { flight_id: "LH400", seats: 2 },
    });
    expect(events[1]?.payload).toBe(result);
  });

  it("gives ctx.signal as the signal run receives, and ctx's methods work taken off ctx", async () => {
    let same: boolean | undefined;
    const { executor, events } = setup([
      {
        name: "t",
        description: "d",
        run: async (_args, signal, ctx) => {
          const first = ctx.signal;
          same = first === signal && ctx.signal === first;
          const { update, say, disallowInterruptions } = ctx;
          update("working");
          say("One moment.");
          const held = await disallowInterruptions();
          return `held: ${!held.aborted}`;
        },
      },
    ]);
    const result = await executor.execute(call("c", "t"));
    expect(same).toBe(true);
    expect(result).toMatchObject({ outcome: "completed", held: true, content: { text: "held: true" } });
    expect(events.map((e) => e.type)).toEqual(["started", "say", "held", "finished"]);
  });

  it("gives the signal to a run that reaches it through rest parameters, and aborts it on cancel", async () => {
    let signal: AbortSignal | undefined;
    const running = deferred();
    const inner = (_args: unknown, s: AbortSignal) => {
      signal = s;
      running.resolve();
      return never();
    };
    const { executor } = setup([
      // One declared parameter (length 1), the rest forwarded: it still reads the signal.
      { name: "t", description: "d", run: (args: unknown, ...rest: [AbortSignal]) => inner(args, ...rest) },
    ]);
    const pending = executor.execute(call("c", "t"));
    await running.promise;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal!.aborted).toBe(false);
    expect(executor.cancel("c")).toBe(true);
    expect((await pending).outcome).toBe("cancelled");
    expect(signal!.aborted).toBe(true);
    expect((signal!.reason as DOMException).name).toBe("AbortError");
  });

  it("gives the signal to a run whose signal parameter has a default (function length 1)", async () => {
    const fallback = new AbortController().signal;
    let seen: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        run: (_args: unknown, signal: AbortSignal = fallback) => {
          seen = signal;
          return "ok";
        },
      },
    ]);
    expect((await executor.execute(call("c", "t"))).outcome).toBe("completed");
    expect(seen).toBeInstanceOf(AbortSignal);
    expect(seen).not.toBe(fallback);
  });

  it.each([
    ["a string as is", "Booked.", "Booked."],
    ["undefined as empty", undefined, ""],
    ["an object as JSON", { seats: [1, 2], ok: true }, '{"seats":[1,2],"ok":true}'],
    ["a number as JSON", 42, "42"],
    ["null as JSON", null, "null"],
  ])("returns %s", async (_label, value, text) => {
    const { executor } = setup([{ name: "t", description: "d", run: () => value }]);
    const result = await executor.execute(call("c", "t"));
    expect(result.outcome).toBe("completed");
    expect(result.content).toEqual({ text, images: [] });
    expect(result.value).toEqual(value);
  });

  it("returns text and checked images from a ToolOutput", async () => {
    const { executor } = setup([
      {
        name: "seat_map",
        description: "d",
        run: () => new ToolOutput({ text: "Seat map", images: [{ url: "https://example.com/m.png" }, PNG] }),
      },
    ]);
    const result = await executor.execute(call("c", "seat_map"));
    expect(result.content).toEqual({
      text: "Seat map",
      images: [
        { type: "image", url: "https://example.com/m.png" },
        { type: "image", mimeType: "image/png", data: "iVBORw0KGgoAAAAN" },
      ],
    });
  });

  it("fails the call with a clear error for a bad image", async () => {
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        run: () => new ToolOutput({ text: "x", images: [{ url: "http://example.com/a.png" }] }),
      },
    ]);
    const result = await executor.execute(call("c", "t"));
    expect(result.outcome).toBe("failed");
    expect(result.error).toEqual({
      code: "invalid_tool_output",
      message: "images.0: an image URL must use https, got http",
    });
    expect(result.content.text).toBe(
      '"t" returned a result that cannot be shown: images.0: an image URL must use https, got http',
    );
  });

  it("never shows invalid arguments to the function and says what was wrong, one line each", async () => {
    const run = vi.fn();
    const { executor, events } = setup([bookFlight(run)]);
    const result = await executor.execute(call("c", "book_flight", { flight_id: "lh400", seats: 12 }));
    expect(run).not.toHaveBeenCalled();
    expect(result.outcome).toBe("invalid_arguments");
    expect(result.error).toEqual({
      code: "invalid_arguments",
      message:
        "flight_id: String should match pattern '^[A-Z]{2}\\d{1,4}$'\nseats: Input should be less than or equal to 9",
    });
    expect(result.content.text).toBe(
      `The arguments for "book_flight" do not fit its schema:\nflight_id: String should match pattern '^[A-Z]{2}\\d{1,4}$'\nseats: Input should be less than or equal to 9`,
    );
    expect(events.map((e) => e.type)).toEqual(["finished"]);
  });

  it("reports arguments that were not JSON", async () => {
    const run = vi.fn();
    const { executor } = setup([bookFlight(run)]);
    const result = await executor.execute({ id: "c", name: "book_flight", arguments: "{oops" });
    expect(run).not.toHaveBeenCalled();
    expect(result.outcome).toBe("invalid_arguments");
    expect(result.error?.message).toMatch(/^arguments are not valid JSON/);
  });

  it("checks a plain JSON Schema before running", async () => {
    const run = vi.fn();
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        parameters: {
          type: "object",
          properties: { seats: { type: "integer", maximum: 9 } },
          required: ["seats"],
        },
        run,
      },
    ]);
    const result = await executor.execute(call("c", "t", { seats: 10 }));
    expect(result.error?.message).toBe("seats: Input should be less than or equal to 9");
    expect(run).not.toHaveBeenCalled();
  });

  it("reports an unknown tool with the tools there are", async () => {
    const { executor } = setup([{ name: "ping", description: "d", run: () => "pong" }]);
    const result = await executor.execute(call("c", "pong"));
    expect(result.outcome).toBe("unknown_tool");
    expect(result.content.text).toBe('There is no tool named "pong". Available tools: ping.');
    expect(result.error?.code).toBe("unknown_tool");
  });

  it("sends a ToolError's message to the model as is, and other errors with the tool's name", async () => {
    const { executor } = setup([
      {
        name: "a",
        description: "d",
        run: () => Promise.reject(new ToolError("No such order. Ask again.", { code: "not_found" })),
      },
      {
        name: "b",
        description: "d",
        run: () => {
          throw new Error("connection refused");
        },
      },
      {
        name: "c",
        description: "d",
        run: () => {
          throw "plain string";
        },
      },
    ]);
    const a = await executor.execute(call("1", "a"));
    expect(a).toMatchObject({
      outcome: "failed",
      content: { text: "No such order. Ask again." },
      error: { code: "not_found" },
    });
    const b = await executor.execute(call("2", "b"));
    expect(b).toMatchObject({
      outcome: "failed",
      content: { text: 'The call of "b" failed: connection refused' },
      error: { code: "tool_error", message: "connection refused" },
    });
    const c = await executor.execute(call("3", "c"));
    expect(c.content.text).toBe('The call of "c" failed: plain string');
  });

  it("converts to the wire ToolResult", async () => {
    const { executor } = setup([
      { name: "a", description: "d", run: () => Promise.reject(new ToolError("nope")) },
    ]);
    const wire = toToolResult(await executor.execute(call("1", "a")));
    expect(ToolResultSchema.parse(wire)).toEqual(wire);
    expect(wire).toEqual({
      outcome: "failed",
      content: { text: "nope", images: [] },
      error: { code: "tool_error", message: "nope" },
      held: false,
    });
  });

  it("rejects a call without an id or a name", async () => {
    const { executor } = setup([]);
    await expect(executor.execute({ id: "", name: "x" })).rejects.toMatchObject({
      code: "invalid_tool_call",
    });
    await expect(executor.execute({ id: "c", name: "" })).rejects.toThrow(/name/);
  });

  it("refuses out-of-range options", () => {
    expect(() => new ToolExecutor({ tools: new Tools(), maxConcurrentCalls: 0 })).toThrow(
      "maxConcurrentCalls: must be a positive integer, got 0",
    );
    expect(() => new ToolExecutor({ tools: new Tools(), defaultTimeoutMs: -5 })).toThrow(/defaultTimeoutMs/);
  });
});

describe("ToolExecutor: timeouts", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("times a call out after 30 s by default, even when run ignores the signal", async () => {
    let signal: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "slow",
        description: "d",
        run: (_args, s) => {
          signal = s;
          return never();
        },
      },
    ]);
    const done = vi.fn();
    const pending = executor.execute(call("c", "slow")).then(done);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(done).not.toHaveBeenCalled();
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await pending;
    const result = done.mock.calls[0]?.[0] as ToolExecutionResult;
    expect(result).toMatchObject({ outcome: "timed_out", error: { code: "timed_out" }, durationMs: 30_000 });
    expect(result.content.text).toBe('The call of "slow" timed out after 30000 ms.');
    expect(signal?.aborted).toBe(true);
    expect((signal!.reason as DOMException).name).toBe("TimeoutError");
  });

  it("uses the tool's timeoutMs and the executor's default", async () => {
    const { executor } = setup(
      [
        { name: "long", description: "d", timeoutMs: 60_000, run: () => sleep(45_000).then(() => "done") },
        { name: "short", description: "d", run: () => sleep(6_000).then(() => "done") },
      ],
      { defaultTimeoutMs: 5_000 },
    );
    const long = executor.execute(call("1", "long"));
    const short = executor.execute(call("2", "short"));
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await long).outcome).toBe("completed");
    expect((await short).outcome).toBe("timed_out");
  });

  it("counts the wait for a concurrency slot toward the timeout", async () => {
    const { executor } = setup([
      {
        name: "one",
        description: "d",
        concurrency: 1,
        timeoutMs: 1_000,
        run: () => sleep(800).then(() => "done"),
      },
    ]);
    const first = executor.execute(call("1", "one"));
    const second = executor.execute(call("2", "one"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await first).outcome).toBe("completed");
    const late = await second;
    expect(late.outcome).toBe("timed_out");
    expect(late.durationMs).toBe(1_000);
  });

  it("times out a call that goes idle, each update resetting the idle clock", async () => {
    const { executor } = setup([
      {
        name: "chatty",
        description: "d",
        idleTimeoutMs: 1_000,
        run: async (_args, _signal, ctx) => {
          for (let i = 0; i < 3; i++) {
            await sleep(900);
            ctx.update(`step ${i}`);
          }
          await sleep(5_000);
          return "done";
        },
      },
    ]);
    const pending = executor.execute(call("c", "chatty"));
    await vi.advanceTimersByTimeAsync(10_000);
    const result = await pending;
    expect(result.outcome).toBe("timed_out");
    expect(result.error?.code).toBe("idle_timeout");
    expect(result.durationMs).toBe(2_700 + 1_000);
    expect(result.content.text).toBe('The call of "chatty" made no progress for 1000 ms and was stopped.');
  });

  it("keeps the hard timeout over an idle timeout that keeps being reset", async () => {
    const { executor } = setup([
      {
        name: "busy",
        description: "d",
        timeoutMs: 2_000,
        idleTimeoutMs: 500,
        run: async (_args, signal, ctx) => {
          while (!signal.aborted) {
            await sleep(100);
            ctx.say("still here");
          }
        },
      },
    ]);
    const pending = executor.execute(call("c", "busy"));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await pending).toMatchObject({
      outcome: "timed_out",
      durationMs: 2_000,
      error: { code: "timed_out" },
    });
  });

  it("does not count the approval wait toward the timeout", async () => {
    const { executor } = setup(
      [
        {
          name: "t",
          description: "d",
          approval: { title: "Go?" },
          timeoutMs: 1_000,
          run: () => sleep(500).then(() => "ok"),
        },
      ],
      { approvalGate: () => sleep(40_000).then(() => "allowed" as const) },
    );
    const pending = executor.execute(call("c", "t"));
    await vi.advanceTimersByTimeAsync(41_000);
    expect(await pending).toMatchObject({ outcome: "completed", durationMs: 40_500 });
  });
});

describe("ToolExecutor: concurrency", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function tracked(name: string, extra: Partial<ToolDefinition<any>> = {}) {
    const log: string[] = [];
    let running = 0;
    let peak = 0;
    const definition: ToolDefinition<any> = {
      name,
      description: "d",
      run: async (_args, _signal, ctx) => {
        running++;
        peak = Math.max(peak, running);
        log.push(ctx.id);
        await sleep(100);
        running--;
        return ctx.id;
      },
      ...extra,
    };
    return { definition, log, peak: () => peak };
  }

  it("runs at most maxConcurrentCalls at once, the rest in arrival order", async () => {
    const t = tracked("t");
    const { executor } = setup([t.definition], { maxConcurrentCalls: 2 });
    const all = ["a", "b", "c", "d", "e"].map((id) => executor.execute(call(id, "t")));
    await vi.advanceTimersByTimeAsync(100);
    expect(t.log).toEqual(["a", "b", "c", "d"]);
    await vi.advanceTimersByTimeAsync(200);
    expect((await Promise.all(all)).every((r) => r.outcome === "completed")).toBe(true);
    expect(t.peak()).toBe(2);
    expect(t.log).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("caps one tool lower with concurrency, without holding other tools back", async () => {
    const capped = tracked("capped", { concurrency: 1 });
    const free = tracked("free");
    const { executor } = setup([capped.definition, free.definition], { maxConcurrentCalls: 3 });
    const calls = [
      executor.execute(call("c1", "capped")),
      executor.execute(call("c2", "capped")),
      executor.execute(call("f1", "free")),
      executor.execute(call("f2", "free")),
    ];
    await vi.advanceTimersByTimeAsync(0);
    expect(capped.log).toEqual(["c1"]);
    expect(free.log).toEqual(["f1", "f2"]);
    await vi.advanceTimersByTimeAsync(100);
    expect(capped.log).toEqual(["c1", "c2"]);
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all(calls);
    expect(capped.peak()).toBe(1);
  });

  it("shares a ToolLimiter's cap across executors (sessions)", async () => {
    const t = tracked("search");
    const tools = new Tools([t.definition]);
    const limiter = new ToolLimiter({ search: 2 });
    const a = new ToolExecutor({ tools, sessionId: "s_a", limiter });
    const b = new ToolExecutor({ tools, sessionId: "s_b", limiter });
    const all = [
      a.execute(call("1", "search")),
      b.execute(call("2", "search")),
      b.execute(call("3", "search")),
    ];
    await vi.advanceTimersByTimeAsync(0);
    expect(t.log).toEqual(["1", "2"]);
    expect(limiter.waiting("search")).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    await Promise.all(all);
    expect(t.peak()).toBe(2);
    expect(t.log).toEqual(["1", "2", "3"]);
  });

  it("shares a tool's sharedConcurrency across executors of one registry", async () => {
    const t = tracked("search", { sharedConcurrency: 1 });
    const tools = new Tools([t.definition]);
    const a = new ToolExecutor({ tools, sessionId: "s_a" });
    const b = new ToolExecutor({ tools, sessionId: "s_b" });
    const all = [a.execute(call("1", "search")), b.execute(call("2", "search"))];
    await vi.advanceTimersByTimeAsync(0);
    expect(t.log).toEqual(["1"]);
    await vi.advanceTimersByTimeAsync(200);
    await Promise.all(all);
    expect(t.log).toEqual(["1", "2"]);
    expect(t.peak()).toBe(1);
  });

  it("frees a slot when a call waiting for it is cancelled", async () => {
    const t = tracked("t");
    const { executor } = setup([t.definition], { maxConcurrentCalls: 1 });
    const first = executor.execute(call("1", "t"));
    const second = executor.execute(call("2", "t"));
    const third = executor.execute(call("3", "t"));
    await vi.advanceTimersByTimeAsync(0);
    expect(executor.cancel("2")).toBe(true);
    expect((await second).outcome).toBe("cancelled");
    await vi.advanceTimersByTimeAsync(200);
    expect((await first).outcome).toBe("completed");
    expect((await third).outcome).toBe("completed");
    expect(t.log).toEqual(["1", "3"]);
  });
});

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

describe("ToolExecutor: progress", () => {
  it("coalesces updates not yet delivered, and the result replaces a pending one", async () => {
    const gate = deferred();
    const { executor, events } = setup([
      {
        name: "t",
        description: "d",
        run: async (_args, _signal, ctx) => {
          ctx.update("one");
          ctx.update("two");
          ctx.update("three");
          await gate.promise;
          ctx.update("four");
          return "done";
        },
      },
    ]);
    const progress = () =>
      events.filter((e) => e.type === "progress").map((e) => (e.payload as { text: string }).text);
    const pending = executor.execute(call("c", "t"));
    await sleep(5);
    expect(progress()).toEqual(["three"]);
    expect(events.find((e) => e.type === "progress")?.payload).toEqual({
      callId: "c",
      name: "t",
      text: "three",
    });
    gate.resolve();
    await pending;
    await sleep(5);
    expect(progress()).toEqual(["three"]);
    expect(events.at(-1)?.type).toBe("finished");
  });

  it("never coalesces say", async () => {
    const { executor, events } = setup([
      {
        name: "t",
        description: "d",
        run: (_args, _signal, ctx) => {
          ctx.say("One moment.");
          ctx.say("Still checking.");
          return "done";
        },
      },
    ]);
    await executor.execute(call("c", "t"));
    expect(events.filter((e) => e.type === "say").map((e) => e.payload)).toEqual([
      { callId: "c", name: "t", text: "One moment." },
      { callId: "c", name: "t", text: "Still checking." },
    ]);
  });

  it("lets the host drive delivery, emitting only the newest pending update", async () => {
    const flushes: (() => void)[] = [];
    const step = deferred();
    const { executor, events } = setup(
      [
        {
          name: "t",
          description: "d",
          run: async (_args, _signal, ctx) => {
            ctx.update("a");
            ctx.update("b");
            await step.promise;
            return "done";
          },
        },
      ],
      { scheduleProgress: (flush) => flushes.push(flush) },
    );
    const pending = executor.execute(call("c", "t"));
    await new Promise((r) => setTimeout(r, 0));
    expect(flushes).toHaveLength(1);
    expect(events.filter((e) => e.type === "progress")).toEqual([]);
    flushes[0]?.();
    expect(events.filter((e) => e.type === "progress").map((e) => e.payload)).toEqual([
      { callId: "c", name: "t", text: "b" },
    ]);
    step.resolve();
    await pending;
  });
});

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

describe("ToolExecutor: idempotency", () => {
  it("joins a delivery of a running call instead of running it twice", async () => {
    const release = deferred();
    const run = vi.fn(async (_args: unknown, _signal: AbortSignal, ctx: ToolCallContext) => {
      await release.promise;
      return `attempt ${ctx.attempt}`;
    });
    const { executor } = setup([{ name: "t", description: "d", run }]);
    const first = executor.execute(call("c", "t"));
    const second = executor.execute(call("c", "t"));
    release.resolve();
    const [a, b] = await Promise.all([first, second]);
    expect(run).toHaveBeenCalledTimes(1);
    expect(a).toMatchObject({ outcome: "completed", attempt: 1, content: { text: "attempt 1" } });
    expect(b).toMatchObject({ outcome: "completed", attempt: 2, content: { text: "attempt 1" } });
  });

  it("returns the stored result for a call delivered after it finished", async () => {
    const run = vi.fn(
      (_args: unknown, _signal: AbortSignal, ctx: ToolCallContext) => `attempt ${ctx.attempt}`,
    );
    const { executor, events } = setup([{ name: "t", description: "d", run }]);
    const first = await executor.execute(call("c", "t"));
    const again = await executor.execute(call("c", "t"));
    expect(run).toHaveBeenCalledTimes(1);
    expect(again).toEqual({ ...first, attempt: 2 });
    expect(events.filter((e) => e.type === "finished")).toHaveLength(1);
    const other = await executor.execute(call("d", "t"));
    expect(other.attempt).toBe(1);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it("takes the attempt from the sender when given", async () => {
    let attempt = 0;
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        run: (_args, _signal, ctx) => {
          attempt = ctx.attempt;
        },
      },
    ]);
    expect((await executor.execute(call("c", "t"), { attempt: 3 })).attempt).toBe(3);
    expect(attempt).toBe(3);
  });

  it("uses a supplied store keyed by session and call, and joins while the store is writing", async () => {
    const data = new Map<string, ToolExecutionResult>();
    const written = deferred();
    const store: IdempotencyStore = {
      get: async (key) => data.get(key),
      set: async (key, result) => {
        await written.promise;
        data.set(key, result);
      },
    };
    const run = vi.fn(() => "ran");
    const { executor } = setup([{ name: "t", description: "d", run }], { idempotencyStore: store });
    const first = await executor.execute(call("c", "t"));
    const during = executor.execute(call("c", "t"));
    written.resolve();
    expect(await during).toMatchObject({ outcome: "completed", attempt: 2 });
    expect([...data.keys()]).toEqual(["s_1:c"]);
    const fresh = new ToolExecutor({
      tools: new Tools([{ name: "t", description: "d", run }]),
      sessionId: "s_1",
      idempotencyStore: store,
    });
    expect(await fresh.execute(call("c", "t"))).toMatchObject({ content: first.content, attempt: 1 });
    expect(run).toHaveBeenCalledTimes(1);
  });

  it("fails closed when the store cannot be read", async () => {
    const run = vi.fn();
    const { executor } = setup([{ name: "t", description: "d", run }], {
      idempotencyStore: { get: () => Promise.reject(new Error("redis down")), set: () => {} },
    });
    expect(await executor.execute(call("c", "t"))).toMatchObject({
      outcome: "failed",
      error: { code: "idempotency_store_failed", message: "redis down" },
    });
    expect(run).not.toHaveBeenCalled();
  });
});
