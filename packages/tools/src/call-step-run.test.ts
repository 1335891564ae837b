import { describe, expect, it } from "vitest";
import { call, loadJsonSchemaValidator, setup } from "./test-support/executor";

describe("the run step", () => {
  it("reports a thrown error to the developer before the result, and the model gets a sentence", async () => {
    await loadJsonSchemaValidator();
    const order: string[] = [];
    const error = new Error("socket hang up");
    const { executor } = setup([
      {
        name: "fetch",
        description: "Fetches",
        run: () => {
          throw error;
        },
      },
    ]);
    executor.on("threw", (event) => order.push(`threw:${event.step}:${(event.error as Error).message}`));
    executor.on("finished", (result) => order.push(`finished:${result.outcome}`));
    const result = await executor.execute(call("c1", "fetch"));
    expect(order).toEqual(["threw:run:socket hang up", "finished:failed"]);
    expect(result.error).toEqual({ code: "tool_error", message: "socket hang up" });
  });

  it("keeps the ending of a call stopped while it ran, whatever the tool returns or throws after", async () => {
    const { executor } = setup([
      {
        name: "a",
        description: "A",
        run: async (_args, signal) => new Promise((r) => signal.addEventListener("abort", () => r("late"))),
      },
      {
        name: "b",
        description: "B",
        run: async (_args, signal) =>
          new Promise((_r, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))),
      },
    ]);
    const threw: unknown[] = [];
    executor.on("threw", (event) => threw.push(event));
    const a = executor.execute(call("c1", "a"));
    const b = executor.execute(call("c2", "b"));
    await new Promise((r) => setTimeout(r, 5));
    executor.cancel("c1");
    executor.cancel("c2");
    expect((await a).outcome).toBe("cancelled");
    expect((await b).outcome).toBe("cancelled");
    expect(threw).toEqual([]);
  });

  it("fails a call whose output cannot be shown to the model", async () => {
    const { executor } = setup([{ name: "f", description: "F", run: () => () => "a function" }]);
    const result = await executor.execute(call("c1", "f"));
    expect(result.outcome).toBe("failed");
    expect(result.error?.code).toBe("invalid_tool_output");
  });
});
