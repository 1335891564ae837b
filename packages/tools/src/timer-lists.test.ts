import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type ListedTimer, TimerLists } from "./timer-lists";

describe("TimerLists", () => {
  let fired: string[];
  let timers: TimerLists;
  const note = (name: string, suffix: string) => fired.push(`${name}${suffix}`);
  beforeEach(() => {
    vi.useFakeTimers();
    fired = [];
    timers = new TimerLists();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("calls each timer back when its own time has come, with one timer for one duration", async () => {
    timers.setTimeout(note, 1_000, "a", "!");
    await vi.advanceTimersByTimeAsync(300);
    timers.setTimeout(note, 1_000, "b", "!");
    await vi.advanceTimersByTimeAsync(300);
    timers.setTimeout(note, 1_000, "c", "!");
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(399);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["a!"]);
    await vi.advanceTimersByTimeAsync(299);
    expect(fired).toEqual(["a!"]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["a!", "b!"]);
    await vi.advanceTimersByTimeAsync(300);
    expect(fired).toEqual(["a!", "b!", "c!"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("never calls back a cleared timer, wherever it was in its list", async () => {
    const [a, b] = [timers.setTimeout(note, 1_000, "a", ""), timers.setTimeout(note, 1_000, "b", "")];
    timers.setTimeout(note, 1_000, "c", "");
    timers.clearTimeout(b);
    timers.clearTimeout(a);
    timers.clearTimeout(a);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual(["c"]);
    expect(a.list).toBeUndefined();
    // Clearing a timer that fired changes nothing.
    timers.clearTimeout(a);
  });

  it("keeps timers of different durations apart", async () => {
    timers.setTimeout(note, 5_000, "long", "");
    timers.setTimeout(note, 1_000, "short", "");
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual(["short"]);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(fired).toEqual(["short", "long"]);
  });

  it("keeps one armed timer across timers that are cleared, firing it without calling anything", async () => {
    timers.clearTimeout(timers.setTimeout(note, 1_000, "a", ""));
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    timers.setTimeout(note, 1_000, "b", "");
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(500);
    expect(fired).toEqual([]);
    // It waits again for b, whose deadline is 500 ms later.
    await vi.advanceTimersByTimeAsync(499);
    expect(fired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["b"]);
  });

  it("calls back the timer it waited for even when the clock says it is early", async () => {
    let clock = 0;
    const frozen = new TimerLists(() => clock);
    frozen.setTimeout(note, 1_000, "a", "");
    clock = -60_000; // the wall clock jumped back
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual(["a"]);
  });

  it("arms one timer for timers set while expired ones are being called back", async () => {
    const restart = (name: string) => {
      fired.push(name);
      if (name === "first") timers.setTimeout(restart, 1_000, "later", undefined);
    };
    timers.setTimeout(restart, 1_000, "first", undefined);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual(["first"]);
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(fired).toEqual(["first", "later"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("still calls back the rest when a callback throws, and the error is thrown", async () => {
    const boom = () => {
      throw new Error("boom");
    };
    timers.setTimeout(boom, 1_000, undefined, undefined);
    timers.setTimeout(note, 1_000, "after", "");
    // The fake clock runs the Node timer's callback; its error surfaces as a timer's would.
    await expect(vi.advanceTimersByTimeAsync(1_000)).rejects.toThrow("boom");
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toEqual(["after"]);
  });
});

describe("TimerLists with Node's timers", () => {
  const refTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === "Timeout").length;

  it("keeps the process alive exactly while a timer waits (the Node timer is unref'd while its list is empty)", () => {
    const before = refTimers();
    const timers = new TimerLists();
    const a: ListedTimer = timers.setTimeout(() => {}, 60_000, undefined, undefined);
    expect(refTimers()).toBe(before + 1);
    timers.clearTimeout(a);
    expect(refTimers()).toBe(before);
    const b = timers.setTimeout(() => {}, 60_000, undefined, undefined);
    expect(refTimers()).toBe(before + 1);
    timers.clearTimeout(b);
    expect(refTimers()).toBe(before);
  });
});
