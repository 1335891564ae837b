import type { ToolOutcome, ToolResult } from "@patchbay/protocol";

/**
 * A tool result for a call that did not complete: `content.text` tells the model what happened
 * (it is what the model reads), `error` carries the stable code.
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
