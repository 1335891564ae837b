import { ToolResultSchema } from "@patchbay/protocol";
import { beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { plainRunCall, useRunCall } from "./call-step-run";
import { ToolError } from "./errors";
import type { IdempotencyStore } from "./idempotency-store";
import { runCallFast } from "./run-call-fast";
import {
  bookFlight,
  call,
  deferred,
  loadJsonSchemaValidator,
  never,
  PNG,
  setup,
} from "./test-support/executor";
import type { ToolCallContext } from "./tool-definition";
import type { ToolExecutionResult } from "./tool-execution-result";
import { toToolResult } from "./tool-execution-result";
import { ToolExecutor } from "./tool-executor";
import { ToolOutput } from "./tool-output";
import { Tools } from "./tools";

beforeAll(loadJsonSchemaValidator);

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

  it("gives a lightSignal tool the light stand-in, aborted on timeout like the real one in ctx.signal", async () => {
    const before = useRunCall(runCallFast);
    onTestFinished(() => void useRunCall(before));
    let light: AbortSignal | undefined;
    let real: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        lightSignal: true,
        timeoutMs: 20,
        run: (_args: unknown, signal: AbortSignal, ctx: ToolCallContext) => {
          light = signal;
          real = ctx.signal;
          signal.addEventListener("abort", listener);
          return never();
        },
      },
    ]);
    const listener = vi.fn();
    const pending = executor.execute(call("c", "t"));
    await vi.waitFor(() => expect(light).toBeDefined());
    expect(light).not.toBeInstanceOf(AbortSignal);
    expect(real).toBeInstanceOf(AbortSignal);
    expect((await pending).outcome).toBe("timed_out");
    expect(light!.aborted).toBe(true);
    expect(listener).toHaveBeenCalledTimes(1);
    expect((light!.reason as DOMException).name).toBe("TimeoutError");
    expect(real!.reason).toBe(light!.reason);
  });

  it("gives a lightSignal tool the real signal where no stand-in is installed (the browser entry)", async () => {
    const before = useRunCall(plainRunCall);
    onTestFinished(() => void useRunCall(before));
    let seen: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        lightSignal: true,
        run: (_args: unknown, signal: AbortSignal) => {
          seen = signal;
          return "ok";
        },
      },
    ]);
    expect((await executor.execute(call("c", "t"))).outcome).toBe("completed");
    expect(seen).toBeInstanceOf(AbortSignal);
  });

  it("refuses a lightSignal that is not a boolean", () => {
    expect(() =>
      new Tools().register({ name: "t", description: "d", lightSignal: "yes" as never, run: () => "" }),
    ).toThrow(/lightSignal: must be a boolean/);
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
    // The store keeps the result without what `run` returned (`value`, for the first delivery).
    const { value, ...kept } = first;
    expect(value).toBe("attempt 1");
    expect(again).toEqual({ ...kept, attempt: 2 });
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

  it("counts a delivery with its attempt only for an id counted before, and runs the call once", async () => {
    const run = vi.fn(
      (_args: unknown, _signal: AbortSignal, ctx: ToolCallContext) => `attempt ${ctx.attempt}`,
    );
    const { executor } = setup([{ name: "t", description: "d", run }]);
    const first = await executor.execute(call("c", "t"), { attempt: 3 });
    expect(first).toMatchObject({ outcome: "completed", attempt: 3, content: { text: "attempt 3" } });
    // Delivered again: the stored result, with the sender's attempt.
    const again = await executor.execute(call("c", "t"), { attempt: 5 });
    expect(again).toMatchObject({ outcome: "completed", attempt: 5, content: { text: "attempt 3" } });
    // Never counted without an attempt: a delivery without one counts from those without one.
    expect((await executor.execute(call("c", "t"))).attempt).toBe(1);
    // Counted now: the sender's attempt joins the count, and the next one without is one more.
    expect((await executor.execute(call("c", "t"), { attempt: 7 })).attempt).toBe(7);
    expect((await executor.execute(call("c", "t"))).attempt).toBe(8);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it("lists a call as active while it runs, and no longer once its result is in", async () => {
    const release = deferred();
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        run: async () => {
          await release.promise;
          return "done";
        },
      },
    ]);
    const running = executor.execute(call("c", "t"));
    expect(executor.activeCallIds).toEqual(["c"]);
    release.resolve();
    await running;
    expect(executor.activeCallIds).toEqual([]);
    // Delivered again in the same job as the result came: the stored result, no second run.
    expect(await executor.execute(call("c", "t"))).toMatchObject({ outcome: "completed", attempt: 2 });
  });

  it("starts the call waiting for a slot once the call that held it ended", async () => {
    const ran: string[] = [];
    const release = deferred();
    const { executor } = setup([
      {
        name: "t",
        description: "d",
        concurrency: 1,
        run: async (args: { n: string }) => {
          ran.push(args.n);
          if (args.n === "a") await release.promise;
          return args.n;
        },
      },
    ]);
    const a = executor.execute(call("a", "t", { n: "a" }));
    const b = executor.execute(call("b", "t", { n: "b" }));
    await vi.waitFor(() => expect(ran).toEqual(["a"]));
    expect(executor.activeCallIds).toEqual(["a", "b"]);
    release.resolve();
    expect(await a).toMatchObject({ outcome: "completed" });
    expect(await b).toMatchObject({ outcome: "completed", content: { text: "b" } });
    expect(ran).toEqual(["a", "b"]);
  });

  it("joins a running call delivered again with a higher attempt", async () => {
    const gate = deferred();
    const run = vi.fn(async () => {
      await gate.promise;
      return "ran";
    });
    const { executor } = setup([{ name: "t", description: "d", run }]);
    const first = executor.execute(call("c", "t"), { attempt: 1 });
    const second = executor.execute(call("c", "t"), { attempt: 2 });
    gate.resolve();
    expect(await first).toMatchObject({ outcome: "completed", attempt: 1 });
    expect(await second).toMatchObject({ outcome: "completed", attempt: 2, content: { text: "ran" } });
    expect(run).toHaveBeenCalledTimes(1);
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
