import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { call, countAbortControllers, loadJsonSchemaValidator, setup, sleep } from "./test-support/executor";
import type { ToolDefinition } from "./tool-definition";
import { ToolExecutor } from "./tool-executor";
import { ToolLimiter } from "./tool-limiter";
import { Tools } from "./tools";

beforeAll(loadJsonSchemaValidator);

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

  it("makes no AbortSignal for a call waiting for a slot, and a wait ended by a timeout leaves the line", async () => {
    // On Node 20 an AbortSignal costs microseconds to make and drags what it touches past the
    // young generation's collections; a call in line needs only its place in the queue.
    const made = countAbortControllers();
    try {
      const t = tracked("t", { lightSignal: true });
      const { executor } = setup([t.definition], { maxConcurrentCalls: 1 });
      const first = executor.execute(call("1", "t"));
      const second = executor.execute(call("2", "t"), { timeoutMs: 50 });
      const third = executor.execute(call("3", "t"));
      await vi.advanceTimersByTimeAsync(0);
      expect(t.log).toEqual(["1"]);
      // At most the running call's own (a page's executor hands `run` a real one); none for the two in line.
      const forRunning = made();
      expect(forRunning).toBeLessThanOrEqual(1);
      await vi.advanceTimersByTimeAsync(60);
      expect((await second).outcome).toBe("timed_out");
      expect(made()).toBe(forRunning);
      await vi.advanceTimersByTimeAsync(200);
      expect((await first).outcome).toBe("completed");
      expect((await third).outcome).toBe("completed");
      // The timed-out call never ran and never held the slot the third one took.
      expect(t.log).toEqual(["1", "3"]);
      expect(t.peak()).toBe(1);
      expect(made()).toBeLessThanOrEqual(2 * forRunning);
    } finally {
      vi.unstubAllGlobals();
    }
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
