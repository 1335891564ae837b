import { describe, expect, it, vi } from "vitest";
import { LightSignal } from "./light-signal";

describe("LightSignal", () => {
  it("aborts once: sets aborted and reason, then dispatches abort to each listener once", () => {
    const signal = new LightSignal();
    const first = vi.fn();
    const second = vi.fn();
    const removed = vi.fn();
    signal.addEventListener("abort", first);
    signal.addEventListener("abort", first);
    signal.addEventListener("abort", second, { once: true });
    signal.addEventListener("abort", removed);
    signal.removeEventListener("abort", removed);
    expect(() => signal.throwIfAborted()).not.toThrow();
    const reason = new DOMException("stop", "AbortError");
    signal.abort(reason);
    signal.abort(new Error("again"));
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe(reason);
    expect(first).toHaveBeenCalledTimes(1);
    expect(second).toHaveBeenCalledTimes(1);
    expect(second.mock.calls[0]![0]).toMatchObject({ type: "abort", target: signal });
    expect(removed).not.toHaveBeenCalled();
    expect(() => signal.throwIfAborted()).toThrow(reason);
  });
});
