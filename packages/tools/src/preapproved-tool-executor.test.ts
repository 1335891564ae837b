import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PreapprovedToolExecutor } from "./preapproved-tool-executor";
import { call } from "./test-support/executor";
import { ToolExecutor } from "./tool-executor";
import { Tools } from "./tools";

const tools = new Tools([
  {
    name: "pay",
    description: "Pays",
    parameters: z.object({ amount: z.number().positive() }),
    approval: { title: "Pay {amount}" },
    run: ({ amount }) => `paid ${amount}`,
  },
]);

describe("PreapprovedToolExecutor", () => {
  it("runs a tool with approval without asking, where a ToolExecutor without a gate declines it", async () => {
    const preapproved = new PreapprovedToolExecutor({ tools, sessionId: "s_1" });
    const finished: string[] = [];
    preapproved.on("finished", (result) => finished.push(result.outcome));
    const result = await preapproved.execute(call("c1", "pay", { amount: 5 }));
    expect(result).toMatchObject({ outcome: "completed", content: { text: "paid 5" } });
    expect(finished).toEqual(["completed"]);
    const plain = await new ToolExecutor({ tools, sessionId: "s_1" }).execute(
      call("c1", "pay", { amount: 5 }),
    );
    expect(plain.error?.code).toBe("approval_unavailable");
  });

  it("checks arguments and remembers results like any executor", async () => {
    const preapproved = new PreapprovedToolExecutor({ tools, sessionId: "s_1" });
    expect((await preapproved.execute(call("c1", "pay", { amount: -1 }))).outcome).toBe("invalid_arguments");
    const first = await preapproved.execute(call("c2", "pay", { amount: 2 }));
    const again = await preapproved.execute(call("c2", "pay", { amount: 2 }));
    expect(again).toMatchObject({ outcome: "completed", attempt: 2, content: first.content });
  });
});
