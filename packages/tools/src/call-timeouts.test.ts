import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CallState } from "./call-state";
import { CallTimeouts } from "./call-timeouts";

const callState = (id: string) =>
  new CallState({ id, index: 0, name: "t", arguments: {}, rawArguments: "{}" }, undefined, 1, 0, id);

describe("CallTimeouts", () => {
  let expired: string[];
  let timeouts: CallTimeouts;
  beforeEach(() => {
    vi.useFakeTimers();
    expired = [];
    timeouts = new CallTimeouts(Date.now, (state) => expired.push(state.call.id));
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("ends each call when its own time has come, with one timer for calls of one duration", async () => {
    const a = callState("a");
    const b = callState("b");
    const c = callState("c");
    timeouts.arm(a, 1_000);
    await vi.advanceTimersByTimeAsync(300);
    timeouts.arm(b, 1_000);
    await vi.advanceTimersByTimeAsync(300);
    timeouts.arm(c, 1_000);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(399);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(299);
    expect(expired).toEqual(["a"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(["a", "b"]);
    await vi.advanceTimersByTimeAsync(300);
    expect(expired).toEqual(["a", "b", "c"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("never ends a call that left its list, wherever it was in it", async () => {
    const [a, b, c] = [callState("a"), callState("b"), callState("c")];
    for (const state of [a, b, c]) timeouts.arm(state, 1_000);
    b.timeoutList?.remove(b);
    a.timeoutList?.remove(a);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual(["c"]);
    expect(a.timeoutList).toBeUndefined();
  });

  it("keeps calls of different durations apart", async () => {
    const long = callState("long");
    const short = callState("short");
    timeouts.arm(long, 5_000);
    timeouts.arm(short, 1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual(["short"]);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(expired).toEqual(["short", "long"]);
  });

  it("keeps one armed timer across calls that end, firing it without ending anything", async () => {
    const a = callState("a");
    timeouts.arm(a, 1_000);
    a.timeoutList?.remove(a);
    expect(vi.getTimerCount()).toBe(1);
    const b = callState("b");
    await vi.advanceTimersByTimeAsync(500);
    timeouts.arm(b, 1_000);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(expired).toEqual([]);
    // It waits again for b, whose deadline is 500 ms later.
    await vi.advanceTimersByTimeAsync(499);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(["b"]);
  });

  it("ends the call the timer waited for even when the clock says it is early", async () => {
    let clock = 0;
    const frozen = new CallTimeouts(
      () => clock,
      (state) => expired.push(state.call.id),
    );
    const a = callState("a");
    frozen.arm(a, 1_000);
    clock = -60_000; // the wall clock jumped back
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual(["a"]);
  });

  it("arms one timer for calls started while expired ones are being ended", async () => {
    const later = callState("later");
    const first = callState("first");
    const withRestart = new CallTimeouts(Date.now, (state) => {
      expired.push(state.call.id);
      if (state === first) withRestart.arm(later, 1_000);
    });
    withRestart.arm(first, 1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual(["first"]);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual(["first", "later"]);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("CallTimeouts with Node's timers", () => {
  const refTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;

  it("keeps the process alive exactly while a call waits (the timer is unref'd while its list is empty)", () => {
    const before = refTimers();
    const timeouts = new CallTimeouts(Date.now, () => {});
    const a = callState("a");
    timeouts.arm(a, 60_000);
    expect(refTimers()).toBe(before + 1);
    a.timeoutList?.remove(a);
    expect(refTimers()).toBe(before);
    const b = callState("b");
    timeouts.arm(b, 60_000);
    expect(refTimers()).toBe(before + 1);
    b.timeoutList?.remove(b);
    expect(refTimers()).toBe(before);
  });
});
