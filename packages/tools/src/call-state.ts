import type { NormalizedToolCall } from "@patchbay/protocol";
import type { Release } from "./semaphore";
import type { CompiledTool } from "./tool-definition";
import type { ToolExecutionResult } from "./tool-execution-result";

/**
 * One call in progress. A class with every field set in the constructor, and nothing made that
 * most calls never use (signals, timers other than the timeout, slot lists, listeners): the
 * executor's cost per call is mostly allocation, a third of it garbage collection.
 */
export class CallState {
  readonly call: NormalizedToolCall;
  readonly tool: CompiledTool | undefined;
  readonly attempt: number;
  readonly startedAt: number;
  /** The call's key in the idempotency store. */
  readonly storeKey: string;
  readonly interruptible: boolean;
  held = false;
  settled = false;
  stopReason: string | undefined = undefined;
  /** Made when something needs the call's signal (see `signalOf`). */
  controller: AbortController | undefined = undefined;
  /** The stand-in signal of a `lightSignal` tool (light-signal.ts, Node entry). */
  light: { abort(reason: unknown): void } | undefined = undefined;
  /** Set when the call is stopped, so a signal made afterwards is born aborted with the reason. */
  aborted = false;
  abortReason: unknown = undefined;
  /** Made on the first hold: signals are costly to create and most calls are never held. */
  holdController: AbortController | undefined = undefined;
  /** A hold asked for and not answered yet (see `confirmHold`). */
  holdPending: Promise<AbortSignal> | undefined = undefined;
  /** From `ExecuteOptions.timeoutMs`; 0 when the tool's or the default applies. */
  explicitTimeoutMs = 0;
  checkedArguments: { value: unknown } | undefined = undefined;
  timeoutMs = 0;
  timeoutTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** The Node entry's shared timer the timeout is on instead (timeout-batch.ts), and when it is due there. */
  timeoutBatch: { leave(state: CallState): void } | undefined = undefined;
  timeoutDeadline = 0;
  idleMs = 0;
  idleTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** The slots the call holds, given back when it ends. */
  releases: Release[] | undefined = undefined;
  pendingProgress: string | undefined = undefined;
  progressScheduled = false;
  /** Stops listening to the `signal` execute was given. */
  detach: (() => void) | undefined = undefined;
  /** Ended with its result stored: it leaves the active calls when the executor tidies. */
  forgetWhenTidied = false;
  readonly promise: Promise<ToolExecutionResult>;
  resolve!: (result: ToolExecutionResult) => void;

  constructor(
    call: NormalizedToolCall,
    tool: CompiledTool | undefined,
    attempt: number,
    startedAt: number,
    storeKey: string,
  ) {
    this.call = call;
    this.tool = tool;
    this.attempt = attempt;
    this.startedAt = startedAt;
    this.storeKey = storeKey;
    this.interruptible = tool?.definition.interruptible === true;
    this.promise = new Promise<ToolExecutionResult>((resolve) => {
      this.resolve = resolve;
    });
  }
}

/**
 * The call's signal, made on first use: an AbortController costs about a tenth of a call, and
 * most calls end without anything listening to it. A signal made after the call was stopped
 * is born aborted, with the same reason.
 */
export function signalOf(state: CallState): AbortSignal {
  let controller = state.controller;
  if (controller === undefined) {
    controller = new AbortController();
    state.controller = controller;
    if (state.aborted) controller.abort(state.abortReason);
  }
  return controller.signal;
}

/** Aborts the call's signal (made or not yet made) once; later reasons are ignored. */
export function abortCall(state: CallState, reason: unknown): void {
  if (state.aborted) return;
  state.aborted = true;
  state.abortReason = reason;
  state.controller?.abort(reason);
  state.light?.abort(reason);
}

export function abortError(message: string, name: "AbortError" | "TimeoutError"): DOMException {
  return new DOMException(message, name);
}
