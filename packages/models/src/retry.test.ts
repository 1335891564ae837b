import { describe, expect, it } from "vitest";
import { ModelError } from "./model-error";
import { retryDelay, sleep, streamWithRetries } from "./retry";

async function collect<T>(events: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const event of events) out.push(event);
  return out;
}

/** An attempt that fails on its first step, counting how often it was started. */
function failingAttempt(error: ModelError, counter: { attempts: number }): () => AsyncIterable<number> {
  return () => {
    counter.attempts++;
    return {
      [Symbol.asyncIterator]: () => ({
        next: () => Promise.reject(error),
      }),
    };
  };
}

describe("retryDelay", () => {
  it("doubles with jitter between half and all of the base, capped, and honours retry-after", () => {
    expect(retryDelay(0, undefined, { initialDelayMs: 100 }, () => 0)).toBe(50);
    expect(retryDelay(0, undefined, { initialDelayMs: 100 }, () => 1)).toBe(100);
    expect(retryDelay(2, undefined, { initialDelayMs: 100 }, () => 1)).toBe(400);
    expect(retryDelay(10, undefined, { initialDelayMs: 100, maxDelayMs: 1000 }, () => 1)).toBe(1000);
    expect(retryDelay(3, 1234, { initialDelayMs: 100 })).toBe(1234);
  });
});

describe("streamWithRetries", () => {
  it("retries a retryable failure before anything was yielded, at most maxRetries times", async () => {
    const counter = { attempts: 0 };
    const failing = failingAttempt(new ModelError("unavailable", "down", { status: 503 }), counter);
    await expect(
      collect(streamWithRetries(failing, { provider: "p", retry: { maxRetries: 3, initialDelayMs: 1 } })),
    ).rejects.toMatchObject({ code: "unavailable", status: 503 });
    expect(counter.attempts).toBe(4);
  });

  it("never retries once an event was yielded, nor a non-retryable error", async () => {
    let attempts = 0;
    const partial = async function* (): AsyncGenerator<number> {
      attempts++;
      yield 1;
      throw new ModelError("unavailable", "cut");
    };
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const n of streamWithRetries(partial, { provider: "p", retry: { initialDelayMs: 1 } }))
          seen.push(n);
      })(),
    ).rejects.toMatchObject({ code: "unavailable" });
    expect([attempts, seen]).toEqual([1, [1]]);

    const counter = { attempts: 0 };
    const bad = failingAttempt(new ModelError("bad_request", "no"), counter);
    await expect(collect(streamWithRetries(bad, { provider: "p" }))).rejects.toMatchObject({
      code: "bad_request",
    });
    expect(counter.attempts).toBe(1);
  });

  it("gives up at once when the provider asks to wait longer than maxRetryAfterMs", async () => {
    const counter = { attempts: 0 };
    const limited = failingAttempt(
      new ModelError("rate_limited", "slow down", { retryAfterMs: 120_000 }),
      counter,
    );
    await expect(collect(streamWithRetries(limited, { provider: "p" }))).rejects.toMatchObject({
      code: "rate_limited",
      retryAfterMs: 120_000,
    });
    expect(counter.attempts).toBe(1);
  });
});

describe("sleep", () => {
  it("rejects with aborted as soon as the signal aborts", async () => {
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 20);
    await expect(sleep(5_000, controller.signal)).rejects.toMatchObject({ code: "aborted" });
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
