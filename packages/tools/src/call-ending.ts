import type { ToolOutcome } from "@patchbay/protocol";
import type { CallState } from "./call-state";
import { ToolError, ToolOutputError } from "./errors";
import * as Sentences from "./model-sentences";
import type { ToolExecutionResult } from "./tool-execution-result";

/**
 * How a call ends, before it becomes a result: the model's text (a `ModelSentences` sentence
 * unless the call completed), and for every outcome but `completed` a stable code and the
 * developer's message.
 */
export interface Ending {
  text: string;
  code?: string;
  message?: string;
  content?: ToolExecutionResult["content"];
  value?: unknown;
}

/** The ending of a call whose tool threw (or whose output could not be used). */
export function failureOf(name: string, error: unknown): Ending {
  if (error instanceof ToolError) return { text: error.message, code: error.code, message: error.message };
  if (error instanceof ToolOutputError) {
    return {
      text: Sentences.unusableOutput(name, error.message),
      code: error.code,
      message: error.message,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  const own = error instanceof Error ? (error as unknown as { code?: unknown }).code : undefined;
  const code = typeof own === "string" && own !== "" ? own : "tool_error";
  return { text: Sentences.failed(name, message), code, message };
}

/** The message of anything thrown, for a developer-facing `error.message`. */
export function messageOf(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}

/** The result of a call that ended at `now`; `value` is kept for a completed call only. */
export function resultOf(
  state: CallState,
  outcome: ToolOutcome,
  ending: Ending,
  now: number,
): ToolExecutionResult {
  const result: ToolExecutionResult = {
    callId: state.call.id,
    name: state.call.name,
    outcome,
    content: ending.content ?? { text: ending.text, images: [] },
    held: state.held,
    attempt: state.attempt,
    durationMs: Math.max(0, now - state.startedAt),
  };
  if (ending.code !== undefined) result.error = { code: ending.code, message: ending.message ?? ending.text };
  if (outcome === "completed") result.value = ending.value;
  return result;
}

/** Ends a call (the executor's `finish`: once per call, later endings are ignored). */
export interface CallFinisher {
  finish(state: CallState, outcome: ToolOutcome, ending: Ending): void;
}
