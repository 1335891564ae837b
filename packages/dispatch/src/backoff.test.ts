import { describe, expect, it } from "vitest";
import { backoffDelay } from "./backoff";

describe("backoffDelay", () => {
  it("doubles the ceiling each attempt until the cap", () => {
    const top = () => 0.999_999;
    const policy = { initialDelayMs: 100, maxDelayMs: 1_000 };
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(n, policy, top))).toEqual([
      99, 199, 399, 799, 999, 999,
    ]);
  });

  it("picks anywhere from zero (full jitter)", () => {
    expect(backoffDelay(6, { initialDelayMs: 100, maxDelayMs: 1_000 }, () => 0)).toBe(0);
    expect(backoffDelay(6, { initialDelayMs: 100, maxDelayMs: 1_000 }, () => 0.5)).toBe(500);
  });

  it("stays finite and capped for huge attempt numbers", () => {
    expect(backoffDelay(10_000, { initialDelayMs: 250, maxDelayMs: 30_000 }, () => 0.5)).toBe(15_000);
  });

  it("spreads real random delays over the whole window", () => {
    const delays = Array.from({ length: 200 }, () =>
      backoffDelay(10, { initialDelayMs: 100, maxDelayMs: 1_000 }),
    );
    expect(Math.min(...delays)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...delays)).toBeLessThan(1_000);
    // 200 uniform picks all landing in one half of the window would mean no jitter at all.
    expect(delays.some((d) => d < 500)).toBe(true);
    expect(delays.some((d) => d >= 500)).toBe(true);
  });
});
