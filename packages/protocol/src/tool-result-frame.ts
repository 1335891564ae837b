import type { ClientToServerFrame } from "./client-frames";
import { GuardIssue, literal, obj } from "./guard";
import { id, positive, toolResult } from "./tool-result-guards";

// A page's `tool.result` is the one client frame a server reads at tool-call rates, and zod's
// parse of it (a copy of every object, its checks' closures) cost more than the JSON it came in.
// This guard reads it field for field as `ClientToolResultFrameSchema` does, with the guards the
// server -> client frames use for a tool result (tool-result-guards.ts);
// tool-result-frame.test.ts keeps the two in step over the shared vectors and their mutations.

const toolResultFrame = obj({
  type: literal("tool.result"),
  sessionId: id,
  callId: id,
  attempt: positive,
  result: toolResult,
});

/**
 * A `tool.result` frame's JSON value decoded as its zod schema decodes it (unknown fields
 * dropped, defaults filled in), or `undefined` when it is not a valid one: `decodeFrame` then
 * asks zod, whose issues name what is wrong.
 */
export function guardedToolResult(
  value: unknown,
): Extract<ClientToServerFrame, { type: "tool.result" }> | undefined {
  try {
    return toolResultFrame(value) as Extract<ClientToServerFrame, { type: "tool.result" }>;
  } catch (error) {
    if (error instanceof GuardIssue) return undefined;
    throw error;
  }
}
