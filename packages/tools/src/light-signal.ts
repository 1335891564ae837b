import type { CallState } from "./call-state";

/**
 * A stand-in for a call's `AbortSignal` with what code that only watches for an abort reads: an
 * `EventTarget` with `aborted`, `reason` and `throwIfAborted()` that dispatches `abort` once.
 * Node 20 takes microseconds to make a real `AbortSignal` (an `EventTarget` given another
 * prototype) and to add a listener to one; this takes a fraction of one. A tool that asks for it
 * (`ToolDefinition.lightSignal`) gets one as `run`'s second argument; `ctx.signal` stays a real
 * one, for `fetch` and the like.
 */
export class LightSignal extends EventTarget {
  aborted = false;
  reason: unknown = undefined;

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  /** Aborts once: sets `aborted` and `reason`, then dispatches `abort`. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.dispatchEvent(new Event("abort"));
  }
}

/** The call's stand-in, made on first use and aborted already when the call was. */
export function lightSignalOf(state: CallState): AbortSignal {
  let light = state.light as LightSignal | undefined;
  if (light === undefined) {
    light = new LightSignal();
    state.light = light;
    if (state.aborted) light.abort(state.abortReason);
  }
  return light as unknown as AbortSignal;
}
