import { backoffDelay } from "@patchbay/protocol/runtime";
import { describe, expect, it } from "vitest";
import { type BackoffPolicy, DEFAULT_BACKOFF, workerBackoff } from "./backoff";

const workerBackoffDelay = (attempt: number, policy: BackoffPolicy, random: () => number) =>
  backoffDelay(attempt, workerBackoff(policy, random));

const top = () => 0.999_999;

describe("workerBackoff", () => {
  it("grows from the worker's initial delay up to its own cap of 30 s, not the page client's 15 s", () => {
    expect([0, 1, 2].map((n) => workerBackoffDelay(n, {}, top))).toEqual([249, 499, 999]);
    const capped = workerBackoffDelay(20, {}, top);
    expect(capped).toBe(DEFAULT_BACKOFF.maxDelayMs - 1);
    expect(capped).toBeGreaterThan(15_000);
  });

  it("takes each field of a partial policy, keeping the default for the other", () => {
    expect(workerBackoffDelay(20, { initialDelayMs: 10 }, top)).toBe(29_999);
    expect(workerBackoffDelay(0, { maxDelayMs: 100 }, top)).toBe(99);
    expect(workerBackoffDelay(3, { initialDelayMs: 100, maxDelayMs: 5_000 }, () => 0.5)).toBe(400);
  });
});
