import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ProgressCoalescer } from "./progress-coalescer";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("ProgressCoalescer", () => {
  it("says the first update at once and only the newest of those that follow within the interval", () => {
    const said: string[] = [];
    const progress = new ProgressCoalescer(100, (_id, text) => said.push(text));
    progress.push("c", "one");
    progress.push("c", "two");
    progress.push("c", "three");
    expect(said).toEqual(["one"]);
    vi.advanceTimersByTime(100);
    expect(said).toEqual(["one", "three"]);
    vi.advanceTimersByTime(100);
    progress.push("c", "four");
    expect(said).toEqual(["one", "three", "four"]);
  });

  it("drops what waits when the result arrives", () => {
    const said: string[] = [];
    const progress = new ProgressCoalescer(100, (_id, text) => said.push(text));
    progress.push("c", "one");
    progress.push("c", "two");
    progress.drop("c");
    vi.advanceTimersByTime(500);
    expect(said).toEqual(["one"]);
  });

  it("keeps calls apart", () => {
    const said: string[] = [];
    const progress = new ProgressCoalescer(100, (id, text) => said.push(`${id}:${text}`));
    progress.push("a", "1");
    progress.push("b", "1");
    progress.push("a", "2");
    vi.advanceTimersByTime(100);
    expect(said).toEqual(["a:1", "b:1", "a:2"]);
  });
});
