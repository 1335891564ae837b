import { describe, expect, it } from "vitest";
import { ToolCallStatusSchema } from "./conversation";
import { ToolResultSchema } from "./tool-call";
import { failedResult, isTerminalToolCallStatus, TERMINAL_TOOL_CALL_STATUSES } from "./tool-results";

describe("failedResult", () => {
  it("builds a valid wire result whose text the model reads and whose code says why", () => {
    const result = failedResult("timed_out", "timed_out", "It timed out.", true);
    expect(ToolResultSchema.parse(result)).toEqual({
      outcome: "timed_out",
      content: { text: "It timed out.", images: [] },
      error: { code: "timed_out", message: "It timed out." },
      held: true,
    });
    expect("held" in failedResult("failed", "internal", "x")).toBe(false);
  });
});

describe("terminal tool call statuses", () => {
  it("are every status but the three a call passes through", () => {
    const open = ToolCallStatusSchema.options.filter((status) => !isTerminalToolCallStatus(status));
    expect(open).toEqual(["pending", "awaiting_approval", "running"]);
    expect(TERMINAL_TOOL_CALL_STATUSES.size).toBe(ToolCallStatusSchema.options.length - 3);
    expect(isTerminalToolCallStatus("nonsense")).toBe(false);
  });
});
