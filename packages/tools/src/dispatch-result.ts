import type { ToolOutcome } from "@patchbay/protocol";

/**
 * The result of one call in a batch, in call order.
 *
 * @example
 * ```ts
 * for (const entry of dispatched.results) if (!entry.success) console.warn(entry.name, entry.error);
 * ```
 */
export interface DispatchResultEntry {
  success: boolean;
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  /** The tool name whose handler ran, `null` for an unsupported tool. */
  handler: string | null;
  outcome: ToolOutcome;
  /** What the handler returned, without top-level `_`-prefixed keys; `null` when it failed or returned nothing. */
  result: unknown;
  /**
   * What the model is shown: a string as is, anything else as compact JSON, or the error
   * (redacted and bounded, see `error`).
   */
  content: string;
  /** Why the call failed: redacted, and cut to `MAX_ERROR_TEXT` characters. */
  error?: string;
}

/**
 * Everything a batch produced: results in call order, counts, and chat-style tool messages to
 * append to the conversation for the next model turn.
 *
 * @example
 * ```ts
 * const { messages, allSucceeded } = await dispatchToolCalls(message.tool_calls, { handlers });
 * history.push(message, ...messages);
 * ```
 */
export interface DispatchResult {
  results: DispatchResultEntry[];
  count: number;
  /** Calls that did not succeed (failed, unsupported, cancelled or never run). */
  errors: number;
  allSucceeded: boolean;
  messages: { role: "tool"; tool_call_id: string; content: string }[];
  /** The entries by call id (an object without prototype). */
  byId: Record<string, DispatchResultEntry>;
}
