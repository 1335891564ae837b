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
  threw(state: CallState, error: unknown, step?: "run" | "when"): void;
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

/** Calls the tool's `run` the way installed for this entry (`useRunCall`). */
export function callToolRun(
  host: RunHost,
  state: CallState,
  definition: CompiledTool["definition"],
  args: unknown,
): unknown {
  return callRun(host, state, definition, args);
}

/** The run step's start: the idle timer, and the `started` event. */
export function startRun(host: RunHost, state: CallState, tool: CompiledTool): void {
  if (tool.definition.idleTimeoutMs !== undefined) armIdle(host, state, tool.definition.idleTimeoutMs);
  host.started(state);
}

/** `run` threw (or its promise rejected): the call fails, unless it ended meanwhile. */
export function runThrew(host: RunHost, state: CallState, error: unknown): void {
  if (state.settled) return;
  host.threw(state, error);
  host.finish(state, "failed", failureOf(state.call.name, error));
}

/**
 * What `run` returned becomes the call's output: `completed` with its content, or `failed` when
 * it cannot be used. Images are checked by image-content.ts, loaded by the first result that has
 * any (the one case that answers a promise), under the rules of image-rules.ts. A call that ended
 * meanwhile keeps that ending.
 */
export function endRun(host: RunHost, state: CallState, value: unknown): void | Promise<void> {
  if (state.settled) return;
  let content: ToolExecutionResult["content"];
  try {
    if (hasImages(value)) return endRunWithImages(host, state, value);
    content = outputContent(value, undefined);
  } catch (error) {
    host.finish(state, "failed", failureOf(state.call.name, error));
    return;
  }
  host.finish(state, "completed", { text: content.text, content, value });
}

async function endRunWithImages(host: RunHost, state: CallState, value: unknown): Promise<void> {
  let content: ToolExecutionResult["content"];
  try {
    const images = await import("./image-content");
    if (state.settled) return;
    content = outputContent(value, (image: ToolImage, path: string) =>
      images.checkImage(image, path, IMAGE_RULES),
    );
  } catch (error) {
    host.finish(state, "failed", failureOf(state.call.name, error));
    return;
  }
  host.finish(state, "completed", { text: content.text, content, value });
}

/**
 * The last step, once the call holds its slots: runs the tool with the parsed arguments and ends
 * the call as `completed` with its output, or `failed` when it threw or its output cannot be used.
 * A call that ended meanwhile (cancelled, timed out) keeps that ending. (The Node entry's
 * pipeline runs run-step-fast.ts instead: the same steps without an async frame.)
 */
export async function runStep(
  host: RunHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
): Promise<void> {
  startRun(host, state, tool);
  let value: unknown;
  try {
    value = await callRun(host, state, tool.definition, args);
  } catch (error) {
    runThrew(host, state, error);
    return;
  }
  await endRun(host, state, value);
}
