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

describe("LightSignal, like an AbortSignal", () => {
  it("calls onabort and handleEvent objects, never a listener added after the abort", () => {
    const signal = new LightSignal();
    const order: string[] = [];
    signal.onabort = () => order.push("onabort");
    signal.addEventListener("abort", { handleEvent: () => order.push("object") });
    signal.addEventListener("other", () => order.push("other"));
    signal.abort("why");
    const late = vi.fn();
    signal.addEventListener("abort", late);
    signal.abort("again");
    expect(order).toEqual(["onabort", "object"]);
    expect(late).not.toHaveBeenCalled();
  });

  it("runs every listener when one throws, and reports the error as uncaught", async () => {
    const signal = new LightSignal();
    const after = vi.fn();
    const uncaught = vi.fn();
    const listeners = process.listeners("uncaughtException");
    process.removeAllListeners("uncaughtException");
    process.on("uncaughtException", uncaught);
    try {
      signal.addEventListener("abort", () => {
        throw new Error("listener broke");
      });
      signal.addEventListener("abort", after);
      signal.abort("why");
      expect(after).toHaveBeenCalledTimes(1);
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(uncaught).toHaveBeenCalledWith(
        expect.objectContaining({ message: "listener broke" }),
        expect.anything(),
      );
    } finally {
      process.off("uncaughtException", uncaught);
      for (const listener of listeners) process.on("uncaughtException", listener);
    }
  });
});
