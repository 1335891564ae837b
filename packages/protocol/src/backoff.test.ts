import { describe, expect, it } from "vitest";
import { backoffDelay } from "./backoff";

describe("backoffDelay", () => {
  it("doubles the ceiling per attempt and scales it by the jitter", () => {
    const half = { initialDelayMs: 100, maxDelayMs: 10_000, random: () => 0.5 };
    expect([0, 1, 2, 3].map((attempt) => backoffDelay(attempt, half))).toEqual([50, 100, 200, 400]);
  });

  it("never waits longer than the cap, however many attempts failed", () => {
    const almostOne = { initialDelayMs: 100, maxDelayMs: 1_000, random: () => 0.999_999 };
    expect(backoffDelay(4, almostOne)).toBe(999);
    expect(backoffDelay(50, almostOne)).toBe(999);
    expect(backoffDelay(5_000, almostOne)).toBe(999);
  });

  it("uses the whole window from zero (full jitter)", () => {
    expect(backoffDelay(6, { initialDelayMs: 100, maxDelayMs: 60_000, random: () => 0 })).toBe(0);
    const seen = new Set<number>();
    for (let i = 0; i < 200; i += 1) seen.add(backoffDelay(3, { initialDelayMs: 100, maxDelayMs: 60_000 }));
    expect(Math.max(...seen)).toBeLessThan(800);
    expect(seen.size).toBeGreaterThan(20);
  });
});
