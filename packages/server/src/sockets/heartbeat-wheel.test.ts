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
