import type { ToolOutcome } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Ending } from "./call-ending";
import { CallState } from "./call-state";
import { acceptArguments, findTool } from "./call-step-parse";
import { compiledToolOf, Tools } from "./tools";

const tools = new Tools([
  {
    name: "book",
    description: "Books",
    parameters: z.object({ seats: z.number().int().min(1) }),
    run: () => "ok",
  },
]);

function host() {
  const ended: { outcome: ToolOutcome; ending: Ending }[] = [];
  return {
    tools,
    ended,
    finish(state: CallState, outcome: ToolOutcome, ending: Ending) {
      state.settled = true;
      ended.push({ outcome, ending });
    },
  };
}

function stateOf(name: string, args: Record<string, unknown>, argumentsError?: string) {
  const call = {
    id: "c1",
    index: 0,
    name,
    arguments: args,
    rawArguments: JSON.stringify(args),
    argumentsError,
  };
  if (argumentsError === undefined) delete call.argumentsError;
  return new CallState(call, compiledToolOf(tools, name), 1, 0, "s:c1");
}

describe("the parse step", () => {
  it("finds the tool and accepts arguments that fit its schema", async () => {
    const h = host();
    const state = stateOf("book", { seats: 2 });
    const tool = findTool(h, state)!;
    const parsed = await tool.parameters.parse(state.call.arguments);
    expect(acceptArguments(h, state, parsed)).toBe(true);
    expect(parsed).toEqual({ ok: true, value: { seats: 2 } });
    expect(h.ended).toEqual([]);
  });

  it("ends the call as invalid_arguments with one issue per line", () => {
    const h = host();
    const state = stateOf("book", { seats: 0 });
    expect(acceptArguments(h, state, { ok: false, issues: ["seats: too small", "cabin: unknown"] })).toBe(
      false,
    );
    expect(h.ended[0]).toMatchObject({
      outcome: "invalid_arguments",
      ending: { code: "invalid_arguments", message: "seats: too small\ncabin: unknown" },
    });
  });

  it("ends a call naming no registered tool as unknown_tool, listing the tools there are", () => {
    const h = host();
    expect(findTool(h, stateOf("fly", {}))).toBeUndefined();
    expect(h.ended[0]?.outcome).toBe("unknown_tool");
    expect(h.ended[0]?.ending.text).toContain("Available tools: book");
  });

  it("ends a call with unreadable arguments before looking at the tool", () => {
    const h = host();
    expect(findTool(h, stateOf("book", {}, "Unexpected end of JSON input"))).toBeUndefined();
    expect(h.ended[0]).toMatchObject({ outcome: "invalid_arguments", ending: { code: "invalid_arguments" } });
  });
});
