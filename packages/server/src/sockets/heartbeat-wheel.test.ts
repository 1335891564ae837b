import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startBeating, stopBeating } from "./heartbeat-wheel";

describe("heartbeat wheel", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("beats each socket once per interval, the first beat between 15/16 of an interval and one", () => {
    const beats: Record<string, number[]> = { a: [], b: [] };
    const start = Date.now();
    const a = { beat: () => beats.a!.push(Date.now() - start) };
    const b = { beat: () => beats.b!.push(Date.now() - start) };
    startBeating(a, 1_600);
    vi.advanceTimersByTime(500);
    startBeating(b, 1_600);
    vi.advanceTimersByTime(1_600 * 3);
    expect(beats.a).toEqual([1_600, 3_200, 4_800]);
    // b joined at 500 ms: its beats come one interval apart, the first within (1500, 1600] ms of joining.
    expect(beats.b).toHaveLength(3);
    expect(beats.b![0]! - 500).toBeGreaterThan(1_500);
    expect(beats.b![0]! - 500).toBeLessThanOrEqual(1_600);
    expect(beats.b![1]! - beats.b![0]!).toBe(1_600);
    stopBeating(a, 1_600);
    stopBeating(b, 1_600);
  });

  it("stops beating a socket once stopped, and a socket stopped inside a beat is not beaten again", () => {
    let count = 0;
    const socket = {
      beat: () => {
        count += 1;
        stopBeating(socket, 100);
      },
    };
    const other = { beat: vi.fn() };
    startBeating(socket, 100);
    startBeating(other, 100);
    vi.advanceTimersByTime(1_000);
    expect(count).toBe(1);
    expect(other.beat).toHaveBeenCalledTimes(10);
    stopBeating(other, 100);
    vi.advanceTimersByTime(1_000);
    expect(other.beat).toHaveBeenCalledTimes(10);
    // Nothing left to beat: no timer is kept.
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a beat that throws does not stop the other sockets' beats", () => {
    const failing = {
      beat: () => {
        throw new Error("boom");
      },
    };
    const other = { beat: vi.fn() };
    startBeating(failing, 160);
    startBeating(other, 160);
    const thrown: unknown[] = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (run) => {
      try {
        run();
      } catch (error) {
        thrown.push(error);
      }
    };
    try {
      vi.advanceTimersByTime(160);
    } finally {
      globalThis.queueMicrotask = original;
    }
    expect(other.beat).toHaveBeenCalledTimes(1);
    expect(thrown).toHaveLength(1);
    stopBeating(failing, 160);
    stopBeating(other, 160);
  });
});

describe("heartbeat wheel after a stall", () => {
  it("lets no beat drop for an interval after this process stalled, then judges again", async () => {
    // Real timers: a stall is a timer that fires late. 16 sockets, one joined per tick, so
    // (nearly) every slot holds one and the late tick beats one of them.
    const beats: { mayDrop: boolean; at: number }[] = [];
    const sockets = Array.from({ length: 16 }, () => ({
      beat: (mayDrop: boolean) => beats.push({ mayDrop, at: Date.now() }),
    }));
    try {
      for (const socket of sockets) {
        startBeating(socket, 320);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const stalledUntil = Date.now() + 400;
      while (Date.now() < stalledUntil) {}
      const firstAfter = await vi.waitFor(() => {
        const beat = beats.find((b) => b.at >= stalledUntil);
        if (!beat) throw new Error("no beat after the stall yet");
        return beat;
      });
      expect(firstAfter.mayDrop).toBe(false);
      // An interval later (with no further stall) beats judge again.
      await vi.waitFor(
        () => {
          if (!beats.some((b) => b.at >= stalledUntil + 320 && b.mayDrop)) throw new Error("still in grace");
        },
        { timeout: 5_000 },
      );
      // Before the stall, on-time beats could drop.
      expect(beats.filter((b) => b.at < stalledUntil - 400).every((b) => b.mayDrop)).toBe(true);
    } finally {
      for (const socket of sockets) stopBeating(socket, 320);
    }
  });
});
