// How the Node entry calls `run` (run-call-fast.ts): a run that cannot see its signal costs none,
// and one that can gets a real AbortSignal, aborted on cancel, timeout and interrupt as before.
import { EventEmitter, once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { CallNotHeld } from "./errors";
import {
  call,
  countAbortControllers,
  deferred,
  never,
  setup,
  useNodeEntryPaths,
} from "./test-support/executor";
import type { ToolCallContext } from "./tool-definition";

useNodeEntryPaths();

let made: () => number;
beforeEach(() => {
  made = countAbortControllers();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

describe("a run that declares only its arguments", () => {
  it("makes no signal, whether the call completes, is cancelled, interrupted or times out", async () => {
    const { executor } = setup([
      { name: "count", description: "d", run: async ({ text }: { text: string }) => text.length },
      { name: "wait", description: "d", interruptible: true, run: () => never() },
      { name: "slow", description: "d", timeoutMs: 200, run: (_args: unknown) => never() },
    ]);
    const done = await executor.execute(call("c1", "count", { text: "four" }));
    expect(done).toMatchObject({ outcome: "completed", content: { text: "4" } });
    const cancelled = executor.execute(call("c2", "wait"));
    const interrupted = executor.execute(call("c3", "wait"));
    const timedOut = executor.execute(call("c4", "slow"));
    await vi.waitFor(() => expect(executor.activeCallIds).toHaveLength(3));
    expect(executor.cancel("c2")).toBe(true);
    expect(executor.interrupt()).toEqual(["c3"]);
    expect((await cancelled).outcome).toBe("cancelled");
    expect((await interrupted).outcome).toBe("cancelled");
    expect((await timedOut).outcome).toBe("timed_out");
    expect(made()).toBe(0);
  });
});

describe("a run that declares its signal", () => {
  it("gets a real AbortSignal that fetch, events.once, AbortSignal.any and listeners see aborted on cancel", async () => {
    // A server that never answers, so only the abort ends the request.
    const server = createServer(() => {});
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    onTestFinished(() => {
      server.closeAllConnections();
      server.close();
    });
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    const requested = deferred();
    server.on("request", () => requested.resolve());
    const seen = deferred<{
      signal: AbortSignal;
      any: AbortSignal;
      listener: number;
      settled: PromiseSettledResult<unknown>[];
    }>();
    const { executor } = setup([
      {
        name: "fetch_page",
        description: "d",
        run: async (_args: unknown, signal: AbortSignal) => {
          let listener = 0;
          signal.addEventListener("abort", () => listener++);
          const any = AbortSignal.any([signal]);
          const settled = await Promise.allSettled([
            fetch(url, { signal }),
            once(new EventEmitter(), "never", { signal }),
          ]);
          seen.resolve({ signal, any, listener, settled });
          return "late";
        },
      },
    ]);
    const pending = executor.execute(call("c", "fetch_page"));
    await requested.promise;
    expect(executor.cancel("c")).toBe(true);
    expect((await pending).outcome).toBe("cancelled");
    const { signal, any, listener, settled } = await seen.promise;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as DOMException).name).toBe("AbortError");
    expect(any.aborted).toBe(true);
    expect(any.reason).toBe(signal.reason);
    expect(listener).toBe(1);
    for (const result of settled) {
      expect(result.status).toBe("rejected");
      expect(((result as PromiseRejectedResult).reason as Error).name).toBe("AbortError");
    }
  });

  it("has it aborted with a TimeoutError when the call times out, and with an AbortError on interrupt", async () => {
    const reasons: unknown[] = [];
    const run = (_args: unknown, signal: AbortSignal) =>
      new Promise((resolve) =>
        signal.addEventListener("abort", () => {
          reasons.push(signal.reason);
          resolve("late");
        }),
      );
    const { executor } = setup([
      { name: "slow", description: "d", timeoutMs: 200, run },
      { name: "wait", description: "d", interruptible: true, run },
    ]);
    const timedOut = executor.execute(call("c1", "slow"));
    expect((await timedOut).outcome).toBe("timed_out");
    const interrupted = executor.execute(call("c2", "wait"));
    await vi.waitFor(() => expect(made()).toBe(2));
    expect(executor.interrupt()).toEqual(["c2"]);
    expect((await interrupted).outcome).toBe("cancelled");
    await vi.waitFor(() => expect(reasons).toHaveLength(2));
    expect(reasons.map((reason) => (reason as DOMException).name)).toEqual(["TimeoutError", "AbortError"]);
  });
});

describe("a signal read after the call was stopped", () => {
  it("is made already aborted, with the reason the call was stopped for", async () => {
    const running = deferred<{ light: AbortSignal; ctx: ToolCallContext }>();
    const { executor } = setup([
      {
        name: "peer__echo",
        description: "d",
        lightSignal: true,
        run: (_args: unknown, light: AbortSignal, ctx: ToolCallContext) => {
          running.resolve({ light, ctx });
          return never();
        },
      },
    ]);
    const pending = executor.execute(call("c", "peer__echo"));
    const { light, ctx } = await running.promise;
    // The stand-in, not a real signal: none is made until something reads ctx.signal.
    expect(light).not.toBeInstanceOf(AbortSignal);
    expect(made()).toBe(0);
    expect(executor.cancel("c")).toBe(true);
    expect((await pending).outcome).toBe("cancelled");
    const late = ctx.signal;
    expect(made()).toBe(1);
    expect(late).toBeInstanceOf(AbortSignal);
    expect(late.aborted).toBe(true);
    expect(late.reason).toBe(light.reason);
    expect((late.reason as DOMException).name).toBe("AbortError");
    expect(ctx.signal).toBe(late);
    await expect(ctx.disallowInterruptions()).rejects.toBeInstanceOf(CallNotHeld);
  });
});
