import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
// The Node entry, whose fast pipeline puts timeouts in batches.
import { ToolExecutor, Tools } from "./index";

describe("an executor's timeouts on one timer (the Node entry)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    // The spies first: one on the fake setTimeout must not be put back over the real one.
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  const gates = new Map<string, () => void>();
  const tools = new Tools()
    .register({
      name: "wait",
      description: "d",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      timeoutMs: 1_000,
      run: ({ id }) => new Promise<string>((resolve) => gates.set(id as string, () => resolve(`done ${id}`))),
    })
    .register({
      name: "wait_long",
      description: "d",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      timeoutMs: 5_000,
      run: ({ id }) => new Promise<string>((resolve) => gates.set(id as string, () => resolve(`done ${id}`))),
    });
  const call = (id: string, name = "wait") => ({ id, name, arguments: { id } });

  it("calls started in the same millisecond share one timer, and each still times out", async () => {
    const executor = new ToolExecutor({ tools });
    const results = ["a", "b", "c"].map((id) => executor.execute(call(id)));
    await vi.advanceTimersByTimeAsync(0);
    expect(vi.getTimerCount()).toBe(1);
    gates.get("b")!();
    await vi.advanceTimersByTimeAsync(999);
    expect((await results[1])?.outcome).toBe("completed");
    await vi.advanceTimersByTimeAsync(1);
    const [a, , c] = await Promise.all(results);
    expect(a).toMatchObject({ outcome: "timed_out", durationMs: 1_000, error: { code: "timed_out" } });
    expect(c).toMatchObject({ outcome: "timed_out", durationMs: 1_000 });
  });

  it("keeps its timer for the next calls, unref'd while none waits, and drops it when it fires with none", async () => {
    const executor = new ToolExecutor({ tools });
    const set = vi.spyOn(globalThis, "setTimeout");
    const timers = () => vi.getTimerCount();
    const results = ["d", "e"].map((id) => executor.execute(call(id)));
    await vi.advanceTimersByTimeAsync(0);
    expect(timers()).toBe(1);
    gates.get("d")!();
    gates.get("e")!();
    await Promise.all(results);
    // Still set, but it no longer holds the process open.
    expect(timers()).toBe(1);
    expect(lastTimer(set)?.hasRef()).toBe(false);
    // A later call (a later deadline) waits on the same timer, which holds the process again.
    await vi.advanceTimersByTimeAsync(300);
    const later = executor.execute(call("d2"));
    await vi.advanceTimersByTimeAsync(0);
    expect(timers()).toBe(1);
    expect(lastTimer(set)?.hasRef()).toBe(true);
    // The timer fires at the first calls' deadline, finds d2's still to come, and is set for it.
    await vi.advanceTimersByTimeAsync(700);
    expect(timers()).toBe(1);
    await vi.advanceTimersByTimeAsync(299);
    gates.get("d2")!();
    expect((await later).outcome).toBe("completed");
    await vi.advanceTimersByTimeAsync(1);
    expect(timers()).toBe(0);
  });

  it("sets the timer sooner for a call whose deadline comes first", async () => {
    const executor = new ToolExecutor({ tools });
    const long = executor.execute(call("l", "wait_long"));
    await vi.advanceTimersByTimeAsync(100);
    const short = executor.execute(call("s"));
    await vi.advanceTimersByTimeAsync(999);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await short).toMatchObject({ outcome: "timed_out", durationMs: 1_000 });
    await vi.advanceTimersByTimeAsync(3_899);
    gates.get("l")!();
    expect((await long).outcome).toBe("completed");
  });

  it("calls of later milliseconds and other durations keep their own deadlines", async () => {
    const executor = new ToolExecutor({ tools });
    const first = executor.execute(call("f"));
    const long = executor.execute(call("g", "wait_long"));
    await vi.advanceTimersByTimeAsync(400);
    const later = executor.execute(call("h"));
    await vi.advanceTimersByTimeAsync(600);
    expect((await first).outcome).toBe("timed_out");
    await vi.advanceTimersByTimeAsync(399);
    gates.get("h")!();
    expect((await later).outcome).toBe("completed");
    const late = executor.execute(call("i"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await late).toMatchObject({ outcome: "timed_out", durationMs: 1_000 });
    await vi.advanceTimersByTimeAsync(5_000 - 2_399);
    expect(await long).toMatchObject({ outcome: "timed_out", durationMs: 5_000 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a call cancelled before its batch fires is not timed out, and the others are", async () => {
    const executor = new ToolExecutor({ tools });
    const results = ["j", "k"].map((id) => executor.execute(call(id)));
    await vi.advanceTimersByTimeAsync(10);
    expect(executor.cancel("j")).toBe(true);
    await vi.advanceTimersByTimeAsync(990);
    const [j, k] = await Promise.all(results);
    expect(j?.outcome).toBe("cancelled");
    expect(k?.outcome).toBe("timed_out");
  });
});

/** The timer the last `setTimeout` since the spy began returned (fake timers' have `hasRef`). */
function lastTimer(set: { mock: { results: { value: unknown }[] } }): { hasRef(): boolean } | undefined {
  return set.mock.results.at(-1)?.value as { hasRef(): boolean } | undefined;
}
