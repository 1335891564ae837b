import type { ToolOutcome, ToolResult } from "@patchbay/protocol";
import { redactErrorText } from "@patchbay/tools";

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

/**
 * A failed result as the model and the session's clients get it: the words a host took from a
 * thrown error (its `content.text` and `error.message`) with credentials in common shapes blanked
 * (`scheme://user:password@host`, `Bearer <token>`; see `redactErrorText`). Every host's results
 * pass here (workers in any language, pages, connectors, the server's own tools), so no SDK has to
 * remember it; the host's own log keeps the error whole. Other outcomes carry the server's
 * sentences or the tool's output and are left as they are.
 */
export function withoutCredentials(result: ToolResult): ToolResult {
  if (result.outcome !== "failed") return result;
  const text = redactErrorText(result.content.text, []);
  const message = result.error && redactErrorText(result.error.message, []);
  if (text === result.content.text && message === result.error?.message) return result;
  return {
    ...result,
    content: { ...result.content, text },
    ...(result.error && message !== undefined ? { error: { ...result.error, message } } : {}),
  };
}
