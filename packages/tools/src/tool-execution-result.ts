import type { ToolOutcome, ToolOutputContent, ToolResult } from "@patchbay/protocol";

/**
 * How a call run by a `ToolExecutor` ended. `content` is what the model is shown (for every
 * outcome but `completed` it explains what went wrong); `error.code` says why in a stable form;
 * `held` says whether the call had disallowed interruptions, so a side effect may have happened
 * even when it was cancelled or timed out.
 *
 * @example
 * ```ts
 * const result: ToolExecutionResult = await executor.execute(call);
 * if (result.outcome === "cancelled" && result.held) console.warn("the booking may have gone through");
 * ```
 */
export interface ToolExecutionResult {
  callId: string;
  name: string;
  outcome: ToolOutcome;
  content: ToolOutputContent;
  error?: { code: string; message: string };
  held: boolean;
  /** The delivery this result answers (1 the first time the id was seen). */
  attempt: number;
  /** From the call's arrival to its end, approval included. */
  durationMs: number;
  /**
   * The value `run` returned, for a `completed` call, on its first delivery only: the idempotency
   * stores keep results without it, so a call delivered again after it finished is answered
   * without it.
   */
  value?: unknown;
}

/**
 * The wire form of an execution result, as a page sends it in `tool.result` and a worker in its
 * hosted result frame.
 *
 * @example
 * ```ts
 * socket.send(JSON.stringify({ type: "tool.result", sessionId, callId: r.callId, attempt: r.attempt, result: toToolResult(r) }));
 * ```
 */
export function toToolResult(result: ToolExecutionResult): ToolResult {
  const wire: ToolResult = { outcome: result.outcome, content: result.content, held: result.held };
  if (result.error) wire.error = { code: result.error.code, message: result.error.message };
  return wire;
}
