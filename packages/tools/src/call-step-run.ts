import { CallContext, type ContextHost } from "./call-context";
import { type CallFinisher, failureOf } from "./call-ending";
import { type CallState, signalOf } from "./call-state";
import { armIdle, type TimerHost } from "./call-timers";
import { IMAGE_RULES } from "./image-rules";
import { hasImages, outputContent } from "./output-content";
import type { CompiledTool } from "./tool-definition";
import type { ToolExecutionResult } from "./tool-execution-result";
import type { ToolImage } from "./tool-output";

/** What the run step asks of the executor. */
export interface RunHost extends CallFinisher, ContextHost, TimerHost {
  /** The call starts running (the executor emits `started`). */
  started(state: CallState): void;
  /** The tool threw (the executor emits `threw`, for the developer's log). */
  threw(state: CallState, error: unknown): void;
}

/** How `run` is called; the Node entry installs a cheaper way that does the same (`useRunCall`). */
export type RunCall = (
  host: RunHost,
  state: CallState,
  definition: CompiledTool["definition"],
  args: unknown,
) => unknown;

/** How a page (the browser entry) calls `run`: with the call's real signal and its context. */
export const plainRunCall: RunCall = (host, state, definition, args) =>
  definition.run(args, signalOf(state), new CallContext(host, state));

let callRun = plainRunCall;

/** Installs how `run` is called (the Node entry does, once: run-call-fast.ts); returns the one before. */
export function useRunCall(how: RunCall): RunCall {
  const before = callRun;
  callRun = how;
  return before;
}

/**
 * The last step, once the call holds its slots: runs the tool with the parsed arguments and ends
 * the call as `completed` with its output, or `failed` when it threw or its output cannot be used.
 * A call that ended meanwhile (cancelled, timed out) keeps that ending.
 */
export async function runStep(
  host: RunHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
): Promise<void> {
  const definition = tool.definition;
  if (definition.idleTimeoutMs !== undefined) armIdle(host, state, definition.idleTimeoutMs);
  host.started(state);
  let value: unknown;
  try {
    value = await callRun(host, state, definition, args);
  } catch (error) {
    if (!state.settled) {
      host.threw(state, error);
      host.finish(state, "failed", failureOf(state.call.name, error));
    }
    return;
  }
  if (state.settled) return;
  let content: ToolExecutionResult["content"];
  try {
    // Images are checked by image-content.ts, loaded by the first result that has any, under the
    // rules of image-rules.ts.
    const images = hasImages(value) ? await import("./image-content") : undefined;
    const toImage =
      images && ((image: ToolImage, path: string) => images.checkImage(image, path, IMAGE_RULES));
    if (state.settled) return;
    content = outputContent(value, toImage);
  } catch (error) {
    host.finish(state, "failed", failureOf(state.call.name, error));
    return;
  }
  host.finish(state, "completed", { text: content.text, content, value });
}
