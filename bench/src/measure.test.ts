import { describe, expect, it } from "vitest";
import { stoppedRising } from "./measure";

describe("stoppedRising", () => {
  it("goes on while a block beats the best before it by more than 2 %", () => {
    expect(stoppedRising([100])).toBe(false);
    expect(stoppedRising([100, 200, 300, 301, 302])).toBe(false);
    // 310 beats 300 by more than 2 %: the count of flat blocks starts again.
    expect(stoppedRising([100, 200, 300, 301, 302, 310, 311, 312])).toBe(false);
  });

  it("stops after three blocks in a row that did not", () => {
    expect(stoppedRising([100, 200, 300, 301, 302, 303])).toBe(true);
    // A block that falls back counts as flat too: a plateau read through noise.
    expect(stoppedRising([100, 300, 250, 280, 305])).toBe(true);
  });
});
