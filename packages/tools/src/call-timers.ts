import type { CallState } from "./call-state";
import * as Sentences from "./model-sentences";

/** What a fired timer asks of the executor. */
export interface TimerHost {
  timeOut(state: CallState, text: string, code: "timed_out" | "idle_timeout"): void;
}

/** Starts the call's timeout (it counts the wait for slots too). */
export function armTimeout(host: TimerHost, state: CallState, timeoutMs: number): void {
  state.timeoutMs = timeoutMs;
  state.timeoutTimer = setTimeout(timeOutCall, timeoutMs, host, state);
}

/** Starts, or starts again, the call's idle timeout. */
export function armIdle(host: TimerHost, state: CallState, idleMs: number): void {
  if (state.idleTimer !== undefined) clearTimeout(state.idleTimer);
  state.idleMs = idleMs;
  state.idleTimer = setTimeout(fireIdle, idleMs, host, state);
}

/** The tool showed a sign of life (progress or speech): its idle timeout starts again. */
export function touch(host: TimerHost, state: CallState): void {
  const idleMs = state.tool?.definition.idleTimeoutMs;
  if (idleMs !== undefined && state.idleTimer !== undefined) armIdle(host, state, idleMs);
}

export function clearTimers(state: CallState): void {
  if (state.timeoutTimer !== undefined) clearTimeout(state.timeoutTimer);
  state.timeoutBatch?.leave(state);
  if (state.idleTimer !== undefined) clearTimeout(state.idleTimer);
}

// Timer callbacks are module functions that get the host and the call as arguments, so arming a
// timer makes no closure.
/** What the call's timeout does when it fires (its own timer's, or its batch's: timeout-batch.ts). */
export function timeOutCall(host: TimerHost, state: CallState): void {
  host.timeOut(state, Sentences.timedOut(state.call.name, state.timeoutMs), "timed_out");
}

function fireIdle(host: TimerHost, state: CallState): void {
  host.timeOut(state, Sentences.idleTimedOut(state.call.name, state.idleMs), "idle_timeout");
}
