import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { call, loadJsonSchemaValidator, never, setup, sleep } from "./test-support/executor";
import type { ToolExecutionResult } from "./tool-execution-result";

beforeAll(loadJsonSchemaValidator);

describe("ToolExecutor: timeouts", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("times a call out after 30 s by default, even when run ignores the signal", async () => {
    let signal: AbortSignal | undefined;
    const { executor } = setup([
      {
        name: "slow",
        description: "d",
        run: (_args, s) => {
          signal = s;
          return never();
        },
      },
    ]);
    const done = vi.fn();
    const pending = executor.execute(call("c", "slow")).then(done);
    await vi.advanceTimersByTimeAsync(29_999);
    expect(done).not.toHaveBeenCalled();
    expect(signal?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await pending;
    const result = done.mock.calls[0]?.[0] as ToolExecutionResult;
    expect(result).toMatchObject({ outcome: "timed_out", error: { code: "timed_out" }, durationMs: 30_000 });
    expect(result.content.text).toBe('The call of "slow" timed out after 30000 ms.');
    expect(signal?.aborted).toBe(true);
    expect((signal!.reason as DOMException).name).toBe("TimeoutError");
  });

  it("uses the tool's timeoutMs and the executor's default", async () => {
    const { executor } = setup(
      [
        { name: "long", description: "d", timeoutMs: 60_000, run: () => sleep(45_000).then(() => "done") },
        { name: "short", description: "d", run: () => sleep(6_000).then(() => "done") },
      ],
      { defaultTimeoutMs: 5_000 },
    );
    const long = executor.execute(call("1", "long"));
    const short = executor.execute(call("2", "short"));
    await vi.advanceTimersByTimeAsync(60_000);
    expect((await long).outcome).toBe("completed");
    expect((await short).outcome).toBe("timed_out");
  });

  it("counts the wait for a concurrency slot toward the timeout", async () => {
    const { executor } = setup([
      {
        name: "one",
        description: "d",
        concurrency: 1,
        timeoutMs: 1_000,
        run: () => sleep(800).then(() => "done"),
      },
    ]);
    const first = executor.execute(call("1", "one"));
    const second = executor.execute(call("2", "one"));
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await first).outcome).toBe("completed");
    const late = await second;
    expect(late.outcome).toBe("timed_out");
    expect(late.durationMs).toBe(1_000);
  });

  it("times out a call that goes idle, each update resetting the idle clock", async () => {
    const { executor } = setup([
      {
        name: "chatty",
        description: "d",
        idleTimeoutMs: 1_000,
        run: async (_args, _signal, ctx) => {
          for (let i = 0; i < 3; i++) {
            await sleep(900);
            ctx.update(`step ${i}`);
          }
          await sleep(5_000);
          return "done";
        },
      },
    ]);
    const pending = executor.execute(call("c", "chatty"));
    await vi.advanceTimersByTimeAsync(10_000);
    const result = await pending;
    expect(result.outcome).toBe("timed_out");
    expect(result.error?.code).toBe("idle_timeout");
    expect(result.durationMs).toBe(2_700 + 1_000);
    expect(result.content.text).toBe('The call of "chatty" made no progress for 1000 ms and was stopped.');
  });

  it("keeps the hard timeout over an idle timeout that keeps being reset", async () => {
    const { executor } = setup([
      {
        name: "busy",
        description: "d",
        timeoutMs: 2_000,
        idleTimeoutMs: 500,
        run: async (_args, signal, ctx) => {
          while (!signal.aborted) {
            await sleep(100);
            ctx.say("still here");
          }
        },
      },
    ]);
    const pending = executor.execute(call("c", "busy"));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await pending).toMatchObject({
      outcome: "timed_out",
      durationMs: 2_000,
      error: { code: "timed_out" },
    });
  });

  it("does not count the approval wait toward the timeout", async () => {
    const { executor } = setup(
      [
        {
          name: "t",
          description: "d",
          approval: { title: "Go?" },
          timeoutMs: 1_000,
          run: () => sleep(500).then(() => "ok"),
        },
      ],
      { approvalGate: () => sleep(40_000).then(() => "allowed" as const) },
    );
    const pending = executor.execute(call("c", "t"));
    await vi.advanceTimersByTimeAsync(41_000);
    expect(await pending).toMatchObject({ outcome: "completed", durationMs: 40_500 });
  });
});
