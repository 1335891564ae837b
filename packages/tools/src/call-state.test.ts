import { describe, expect, it } from "vitest";
import { abortCall, abortError, CallState, signalOf } from "./call-state";

const call = { id: "c1", index: 0, name: "t", arguments: {}, rawArguments: "{}" };

describe("CallState", () => {
  it("makes the signal on first use, once", () => {
    const state = new CallState(call, undefined, 1, 0, "s:c1");
    expect(state.controller).toBeUndefined();
    const signal = signalOf(state);
    expect(signalOf(state)).toBe(signal);
    expect(signal.aborted).toBe(false);
  });

  it("aborts a signal made before the stop, keeping the first reason", () => {
    const state = new CallState(call, undefined, 1, 0, "s:c1");
    const signal = signalOf(state);
    const first = abortError("first", "AbortError");
    abortCall(state, first);
    abortCall(state, abortError("second", "TimeoutError"));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(first);
  });

  it("gives a signal made after the stop born aborted, with the same reason", () => {
    const state = new CallState(call, undefined, 1, 0, "s:c1");
    const reason = abortError("timed out", "TimeoutError");
    abortCall(state, reason);
    const signal = signalOf(state);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect((signal.reason as DOMException).name).toBe("TimeoutError");
  });

  it("is interruptible only when its tool says so", () => {
    expect(new CallState(call, undefined, 1, 0, "k").interruptible).toBe(false);
    const tool = { definition: { interruptible: true } } as never;
    expect(new CallState(call, tool, 1, 0, "k").interruptible).toBe(true);
  });
});
