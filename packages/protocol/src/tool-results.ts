import type { ToolCallStatus } from "./conversation";
import type { ToolOutcome, ToolResult } from "./tool-call";

/**
 * A tool result for a call that did not complete, the same wherever it is built (a server
 * router, a worker, a page): `content.text` tells the model what happened (a model sentence),
 * `error` carries the stable code and the same text.
 *
 * @example
 * ```ts
 * failedResult("timed_out", "timed_out", 'The call of "get_location" timed out after 30000 ms.');
 * ```
 */
export function failedResult(
  outcome: ToolOutcome,
  code: string,
  message: string,
  held?: boolean,
): ToolResult {
  const result: ToolResult = { outcome, content: { text: message, images: [] }, error: { code, message } };
  if (held !== undefined) result.held = held;
  return result;
}

/**
 * The statuses a tool call ends in: once a call has one, it has its result and changes no more.
 *
 * @example
 * ```ts
 * const done = TERMINAL_TOOL_CALL_STATUSES.has(item.status);
 * ```
 */
export const TERMINAL_TOOL_CALL_STATUSES: ReadonlySet<ToolCallStatus> =
  /* @__PURE__ */ new Set<ToolCallStatus>([
    "completed",
    "failed",
    "cancelled",
    "declined",
    "timed_out",
    "withdrawn",
  ]);

/**
 * Whether a tool call has ended (see {@link TERMINAL_TOOL_CALL_STATUSES}).
 *
 * @example
 * ```ts
 * if (item.type === "tool_call" && isTerminalToolCallStatus(item.status)) showResult(item);
 * ```
 */
export function isTerminalToolCallStatus(status: string): boolean {
  return TERMINAL_TOOL_CALL_STATUSES.has(status as ToolCallStatus);
}
