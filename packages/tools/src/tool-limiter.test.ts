import { describe, expect, it } from "vitest";
import { ToolLimiter } from "./tool-limiter";

describe("ToolLimiter", () => {
  it("caps the tools it knows and lets the others through", async () => {
    const limiter = new ToolLimiter({ search: 1 });
    expect(limiter.limitOf("search")).toBe(1);
    expect(limiter.limitOf("other")).toBeUndefined();
    const release = await limiter.acquire("search");
    let second = false;
    const next = limiter.acquire("search").then((r) => {
      second = true;
      return r;
    });
    await limiter.acquire("other");
    await Promise.resolve();
    expect(second).toBe(false);
    expect(limiter.waiting("search")).toBe(1);
    release();
    (await next)();
    expect(second).toBe(true);
  });

  it("refuses a limit that is not a positive integer", () => {
    expect(() => new ToolLimiter({ search: 0 })).toThrow("limits.search: must be a positive integer, got 0");
  });
});
