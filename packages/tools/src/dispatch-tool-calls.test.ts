import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { dispatchToolCalls } from "./dispatch-tool-calls";
import { ToolError, ToolsOptionError } from "./errors";
import { Tools } from "./tools";

const openAiCalls = [
  { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Berlin"}' } },
  { id: "call_b", type: "function", function: { name: "get_time", arguments: '{"zone":"CET"}' } },
];

describe("dispatchToolCalls", () => {
  it("runs provider calls through mapped handlers with projected input and call metadata", async () => {
    const weather = vi.fn((input: { city: string; user_id: unknown; call_id: string }) => ({
      city: input.city,
      temp: 21,
      _debug: "private",
    }));
    const time = vi.fn(() => "12:00");
    const dispatched = await dispatchToolCalls(openAiCalls, {
      handlers: {
        get_weather: {
          handler: weather,
          input: { city: "arguments.city", user_id: "ctx.user.id", call_id: "tool_call_id" },
        },
        get_time: time,
      },
      context: { user: { id: "u_1" } },
    });
    expect(weather).toHaveBeenCalledWith(
      { city: "Berlin", user_id: "u_1", call_id: "call_a" },
      expect.objectContaining({ id: "call_a", name: "get_weather", index: 0, arguments: { city: "Berlin" } }),
    );
    const meta = weather.mock.calls[0]?.[1 as never] as unknown as {
      call: { rawArguments: string };
      signal: AbortSignal;
    };
    expect(meta.call.rawArguments).toBe('{"city":"Berlin"}');
    expect(meta.signal).toBeInstanceOf(AbortSignal);
    expect(time).toHaveBeenCalledWith({ zone: "CET" }, expect.objectContaining({ id: "call_b", index: 1 }));
    expect(dispatched).toMatchObject({ count: 2, errors: 0, allSucceeded: true });
    expect(dispatched.results).toEqual([
      {
        success: true,
        id: "call_a",
        name: "get_weather",
        arguments: { city: "Berlin" },
        handler: "get_weather",
        outcome: "completed",
        result: { city: "Berlin", temp: 21 },
        content: '{"city":"Berlin","temp":21}',
      },
      {
        success: true,
        id: "call_b",
        name: "get_time",
        arguments: { zone: "CET" },
        handler: "get_time",
        outcome: "completed",
        result: "12:00",
        content: "12:00",
      },
    ]);
    expect(dispatched.messages).toEqual([
      { role: "tool", tool_call_id: "call_a", content: '{"city":"Berlin","temp":21}' },
      { role: "tool", tool_call_id: "call_b", content: "12:00" },
    ]);
    expect(dispatched.byId.call_b).toBe(dispatched.results[1]);
    expect(Object.getPrototypeOf(dispatched.byId)).toBeNull();
  });

  it("accepts Anthropic blocks and normalized calls", async () => {
    const handler = vi.fn((input: { city: string }) => input.city);
    const anthropic = await dispatchToolCalls(
      {
        role: "assistant",
        content: [
          { type: "text", text: "Let me check" },
          { type: "tool_use", id: "toolu_1", name: "w", input: { city: "Oslo" } },
        ],
      },
      { handlers: { w: handler } },
    );
    expect(anthropic.results.map((r) => [r.id, r.content])).toEqual([["toolu_1", "Oslo"]]);
    const normalized = await dispatchToolCalls(
      [{ id: "c1", index: 0, name: "w", arguments: { city: "Rome" }, rawArguments: '{"city":"Rome"}' }],
      { handlers: { w: handler } },
    );
    expect(normalized.results[0]?.content).toBe("Rome");
  });

  it("keeps nested _-prefixed keys, strips only top-level ones, and gives undefined as empty", async () => {
    const dispatched = await dispatchToolCalls(
      [
        { id: "1", name: "a", arguments: {} },
        { id: "2", name: "b", arguments: {} },
      ],
      { handlers: { a: () => ({ _secret: 1, data: { _keep: 2 } }), b: () => undefined } },
    );
    expect(dispatched.results[0]?.result).toEqual({ data: { _keep: 2 } });
    expect(dispatched.results[0]?.content).toBe('{"data":{"_keep":2}}');
    expect(dispatched.results[1]).toMatchObject({ result: null, content: "", success: true });
  });

  it("records calls to unmapped tools as unsupported and counts them as errors", async () => {
    const dispatched = await dispatchToolCalls(
      [
        { id: "1", name: "known", arguments: {} },
        { id: "2", name: "unknown", arguments: {} },
        { id: "3", name: "toString", arguments: {} },
      ],
      { handlers: { known: () => "ok" }, onError: "ignore" },
    );
    expect(dispatched.results.map((r) => [r.success, r.handler, r.outcome, r.error])).toEqual([
      [true, "known", "completed", undefined],
      [false, null, "unknown_tool", 'unsupported tool "unknown"'],
      [false, null, "unknown_tool", 'unsupported tool "toString"'],
    ]);
    expect(dispatched.messages[1]).toEqual({
      role: "tool",
      tool_call_id: "2",
      content: 'Error: unsupported tool "unknown"',
    });
    expect(dispatched).toMatchObject({ count: 3, errors: 2, allSucceeded: false });
  });

  it("with ignore, runs every call whatever fails", async () => {
    const after = vi.fn(() => "ran");
    const dispatched = await dispatchToolCalls(
      [
        { id: "1", name: "boom", arguments: {} },
        { id: "2", name: "after", arguments: {} },
      ],
      {
        handlers: {
          boom: () => {
            throw new ToolError("the database is down");
          },
          after,
        },
        onError: "ignore",
        concurrency: 1,
      },
    );
    expect(after).toHaveBeenCalledTimes(1);
    expect(dispatched.results[0]).toMatchObject({
      success: false,
      outcome: "failed",
      error: "the database is down",
      content: "Error: the database is down",
    });
    expect(dispatched.errors).toBe(1);
  });

  it("with fail_fast, stops at the first failure, cancels what runs and starts nothing more", async () => {
    let slowSignal: AbortSignal | undefined;
    const later = vi.fn(() => "ran");
    const dispatched = await dispatchToolCalls(
      [
        { id: "1", name: "slow", arguments: {} },
        { id: "2", name: "boom", arguments: {} },
        { id: "3", name: "later", arguments: {} },
      ],
      {
        handlers: {
          slow: (_input, meta) => {
            slowSignal = meta.signal;
            return new Promise(() => {});
          },
          boom: async () => {
            throw new Error("boom");
          },
          later,
        },
        concurrency: 2,
      },
    );
    expect(later).not.toHaveBeenCalled();
    expect(slowSignal?.aborted).toBe(true);
    expect(dispatched.results.map((r) => [r.id, r.success, r.outcome, r.error])).toEqual([
      ["1", false, "cancelled", "cancelled: an earlier tool call failed"],
      ["2", false, "failed", "boom"],
      ["3", false, "cancelled", "not run: an earlier tool call failed"],
    ]);
    expect(dispatched.messages).toHaveLength(3);
    expect(dispatched.errors).toBe(3);
  });

  it("refuses more calls than maxCalls before running any", async () => {
    const handler = vi.fn();
    const calls = Array.from({ length: 33 }, (_, i) => ({ id: `c${i}`, name: "t", arguments: {} }));
    const error = await dispatchToolCalls(calls, { handlers: { t: handler } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolsOptionError);
    expect(error).toMatchObject({ code: "too_many_tool_calls", option: "maxCalls" });
    expect((error as Error).message).toBe(
      "maxCalls: the model made 33 tool calls, more than maxCalls (32); none were run",
    );
    expect(handler).not.toHaveBeenCalled();
    await expect(
      dispatchToolCalls(calls.slice(0, 3), { handlers: { t: handler }, maxCalls: 2 }),
    ).rejects.toThrow(/more than maxCalls \(2\)/);
    await expect(dispatchToolCalls([], { handlers: {}, concurrency: 0 })).rejects.toThrow(
      "concurrency: must be a positive integer",
    );
    await expect(dispatchToolCalls([], { handlers: {}, onError: "retry" as never })).rejects.toThrow(
      /onError/,
    );
  });

  it("runs no more than concurrency handlers at once, in call order", async () => {
    let running = 0;
    let peak = 0;
    const started: string[] = [];
    const handler = async (_input: unknown, meta: { id: string }) => {
      started.push(meta.id);
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      return meta.id;
    };
    const calls = Array.from({ length: 6 }, (_, i) => ({ id: `c${i}`, name: "t", arguments: {} }));
    const dispatched = await dispatchToolCalls(calls, { handlers: { t: handler }, concurrency: 2 });
    expect(peak).toBe(2);
    expect(started).toEqual(["c0", "c1", "c2", "c3", "c4", "c5"]);
    expect(dispatched.results.map((r) => r.content)).toEqual(["c0", "c1", "c2", "c3", "c4", "c5"]);
  });

  it("runs a Tools registry through an executor: checked arguments, results as content", async () => {
    const tools = new Tools()
      .register({
        name: "get_weather",
        description: "d",
        parameters: z.object({ city: z.string() }),
        run: ({ city }) => ({ city, temp: 21, _raw: "x" }),
      })
      .register({ name: "book", description: "d", approval: { title: "Book?" }, run: () => "booked" });
    const dispatched = await dispatchToolCalls(
      [
        { id: "1", name: "get_weather", arguments: { city: "Berlin" } },
        { id: "2", name: "get_weather", arguments: { city: 5 } },
        { id: "3", name: "book", arguments: {} },
        { id: "4", name: "nope", arguments: {} },
      ],
      { handlers: tools, onError: "ignore" },
    );
    expect(dispatched.results.map((r) => [r.id, r.success, r.outcome, r.handler])).toEqual([
      ["1", true, "completed", "get_weather"],
      ["2", false, "invalid_arguments", "get_weather"],
      ["3", false, "declined", "book"],
      ["4", false, "unknown_tool", null],
    ]);
    expect(dispatched.results[0]?.result).toEqual({ city: "Berlin", temp: 21 });
    expect(dispatched.results[0]?.content).toBe('{"city":"Berlin","temp":21}');
    expect(dispatched.results[1]?.content).toBe(
      'The arguments for "get_weather" do not fit its schema:\ncity: Input should be a valid string',
    );
    expect(dispatched.results[1]?.error).toBe("city: Input should be a valid string");

    const allowed = await dispatchToolCalls([{ id: "3", name: "book", arguments: {} }], {
      handlers: tools,
      approvalGate: async () => "allowed",
    });
    expect(allowed.results[0]?.content).toBe("booked");
  });

  it("stops when its signal aborts", async () => {
    const controller = new AbortController();
    const dispatched = dispatchToolCalls(
      [
        { id: "1", name: "wait", arguments: {} },
        { id: "2", name: "wait", arguments: {} },
      ],
      { handlers: { wait: () => new Promise(() => {}) }, concurrency: 1, signal: controller.signal },
    );
    controller.abort();
    const result = await dispatched;
    expect(result.results.map((r) => r.error)).toEqual([
      "cancelled: the dispatch was aborted",
      "not run: the dispatch was aborted",
    ]);
  });
});
