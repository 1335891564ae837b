import { beforeAll, describe, expect, it } from "vitest";
import { call, deferred, loadJsonSchemaValidator, setup, sleep } from "./test-support/executor";

beforeAll(loadJsonSchemaValidator);

describe("ToolExecutor: progress", () => {
  it("coalesces updates not yet delivered, and the result replaces a pending one", async () => {
    const gate = deferred();
    const { executor, events } = setup([
      {
        name: "t",
        description: "d",
        run: async (_args, _signal, ctx) => {
          ctx.update("one");
          ctx.update("two");
          ctx.update("three");
          await gate.promise;
          ctx.update("four");
          return "done";
        },
      },
    ]);
    const progress = () =>
      events.filter((e) => e.type === "progress").map((e) => (e.payload as { text: string }).text);
    const pending = executor.execute(call("c", "t"));
    await sleep(5);
    expect(progress()).toEqual(["three"]);
    expect(events.find((e) => e.type === "progress")?.payload).toEqual({
      callId: "c",
      name: "t",
      text: "three",
    });
    gate.resolve();
    await pending;
    await sleep(5);
    expect(progress()).toEqual(["three"]);
    expect(events.at(-1)?.type).toBe("finished");
  });

  it("never coalesces say", async () => {
    const { executor, events } = setup([
      {
        name: "t",
        description: "d",
        run: (_args, _signal, ctx) => {
          ctx.say("One moment.");
          ctx.say("Still checking.");
          return "done";
        },
      },
    ]);
    await executor.execute(call("c", "t"));
    expect(events.filter((e) => e.type === "say").map((e) => e.payload)).toEqual([
      { callId: "c", name: "t", text: "One moment." },
      { callId: "c", name: "t", text: "Still checking." },
    ]);
  });

  it("lets the host drive delivery, emitting only the newest pending update", async () => {
    const flushes: (() => void)[] = [];
    const step = deferred();
    const { executor, events } = setup(
      [
        {
          name: "t",
          description: "d",
          run: async (_args, _signal, ctx) => {
            ctx.update("a");
            ctx.update("b");
            await step.promise;
            return "done";
          },
        },
      ],
      { scheduleProgress: (flush) => flushes.push(flush) },
    );
    const pending = executor.execute(call("c", "t"));
    await new Promise((r) => setTimeout(r, 0));
    expect(flushes).toHaveLength(1);
    expect(events.filter((e) => e.type === "progress")).toEqual([]);
    flushes[0]?.();
    expect(events.filter((e) => e.type === "progress").map((e) => e.payload)).toEqual([
      { callId: "c", name: "t", text: "b" },
    ]);
    step.resolve();
    await pending;
  });
});
