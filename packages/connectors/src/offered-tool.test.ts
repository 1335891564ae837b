import { ToolExecutor, Tools } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import type { ConnectorTool } from "./connector";
import { ConnectorEntrySchema } from "./connector-entry";
import { isToolOffered, needsApproval, offeredToolName, toOfferedDefinition } from "./offered-tool";

const entry = (extra: Record<string, unknown> = {}) =>
  ConnectorEntrySchema.parse({ name: "everything", mcp: {}, ...extra });
const sum: ConnectorTool = {
  name: "get-sum",
  description: "Adds",
  inputSchema: {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: { a: { type: "number" }, b: { type: "number" } },
    required: ["a", "b"],
  },
  run: (args) => String(Number(args.a) + Number(args.b)),
};

describe("offered tools", () => {
  it("names a tool <connector>__<tool>, mapping characters a name may not hold", () => {
    expect(offeredToolName("everything", "get-sum")).toBe("everything__get-sum");
    expect(offeredToolName("fs", "files/read.all")).toBe("fs__files_read_all");
    expect(offeredToolName("x", "y".repeat(70))).toBeUndefined();
  });

  it("applies allow and deny lists", () => {
    expect(isToolOffered(entry({ tools: { allow: ["echo"] } }), "echo")).toBe(true);
    expect(isToolOffered(entry({ tools: { allow: ["echo"] } }), "get-sum")).toBe(false);
    expect(isToolOffered(entry({ tools: { deny: ["echo"] } }), "echo")).toBe(false);
  });

  it("asks for approval from the annotations unless the config lists the tools", () => {
    expect(needsApproval(entry(), { name: "t" })).toBe(true);
    expect(needsApproval(entry(), { name: "t", annotations: { readOnlyHint: true } })).toBe(false);
    expect(
      needsApproval(entry(), { name: "t", annotations: { readOnlyHint: true, destructiveHint: true } }),
    ).toBe(true);
    expect(
      needsApproval(entry({ approval: { tools: [] } }), {
        name: "t",
        annotations: { destructiveHint: true },
      }),
    ).toBe(false);
    expect(
      needsApproval(entry({ approval: { tools: ["*"] } }), {
        name: "t",
        annotations: { readOnlyHint: true },
      }),
    ).toBe(true);
  });

  it("uses the configured title where its placeholders are the tool's arguments", () => {
    const titled = entry({ approval: { tools: ["get-sum", "echo"], title: "Add {a} and {b}?" } });
    expect(
      toOfferedDefinition(titled, sum, "everything__get-sum", { downReason: () => undefined }).approval,
    ).toEqual({ title: "Add {a} and {b}?" });
    const echo = {
      ...sum,
      name: "echo",
      inputSchema: { type: "object" as const, properties: { message: {} } },
    };
    expect(
      toOfferedDefinition(titled, echo, "everything__echo", { downReason: () => undefined }).approval,
    ).toEqual({
      title: "Allow everything to run echo?",
    });
  });

  it("runs through the executor: arguments checked, timeout from the entry, down state answered", async () => {
    let down: string | undefined;
    const definition = toOfferedDefinition(
      entry({ timeout_ms: 1234, approval: { tools: [] } }),
      sum,
      "everything__get-sum",
      { downReason: () => down },
    );
    expect(definition.timeoutMs).toBe(1234);
    expect(
      toOfferedDefinition(entry({ max_concurrent_calls: 2 }), sum, "everything__get-sum", {
        downReason: () => undefined,
      }).sharedConcurrency,
    ).toBe(2);
    expect(definition.parameters).not.toHaveProperty("$schema");
    const executor = new ToolExecutor({ tools: new Tools([definition]) });
    expect(
      (await executor.execute({ id: "c1", name: "everything__get-sum", arguments: { a: 2, b: 3 } })).content
        .text,
    ).toBe("5");
    const bad = await executor.execute({ id: "c2", name: "everything__get-sum", arguments: { a: "2" } });
    expect(bad.outcome).toBe("invalid_arguments");
    down = "the MCP server process exited";
    const failed = await executor.execute({
      id: "c3",
      name: "everything__get-sum",
      arguments: { a: 1, b: 1 },
    });
    expect(failed.outcome).toBe("failed");
    expect(failed.content.text).toBe(
      "The everything service is unavailable right now (the MCP server process exited). Try again later.",
    );
  });
});
