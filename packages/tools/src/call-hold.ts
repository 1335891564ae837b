import { type CallState, signalOf } from "./call-state";
import { CallNotHeld } from "./errors";
import type { HoldDecision, HoldRequest } from "./tool-executor-options";

/** What a hold asks of the executor. */
export interface HoldHost {
  /** See `ToolExecutorOptions.confirmHold`; undefined: every hold is accepted. */
  readonly confirmHold: ((request: HoldRequest) => HoldDecision | Promise<HoldDecision>) | undefined;
  /** The call became held (the executor emits `held`). */
  held(state: CallState): void;
  /** Stops the call (a hold refused because a cancel is under way). */
  stop(state: CallState, why: "interrupted"): void;
}

/**
 * `ctx.disallowInterruptions()`: resolves with the held signal once the hold is confirmed (at
 * once without `confirmHold`); rejects with `CallNotHeld` when the call ended or the hold was
 * refused. Asked once per call: a second request gets the same answer.
 */
export function holdCall(host: HoldHost, state: CallState): Promise<AbortSignal> {
  if (state.settled || state.aborted) {
    return Promise.reject(new CallNotHeld(state.call.id, state.stopReason ?? "finished"));
  }
  if (state.held && state.holdController) return Promise.resolve(state.holdController.signal);
  if (state.holdPending) return state.holdPending;
  const confirm = host.confirmHold;
  if (confirm === undefined) return Promise.resolve(becomeHeld(host, state));
  state.holdPending = confirmHold(host, state, confirm);
  // A tool that does not await its hold must not leave an unhandled rejection behind.
  state.holdPending.catch(() => undefined);
  return state.holdPending;
}

async function confirmHold(
  host: HoldHost,
  state: CallState,
  confirm: NonNullable<HoldHost["confirmHold"]>,
): Promise<AbortSignal> {
  const signal = signalOf(state);
  let decision: HoldDecision | "ended";
  try {
    decision = await Promise.race([
      Promise.resolve(
        confirm({ callId: state.call.id, name: state.call.name, attempt: state.attempt, signal }),
      ),
      new Promise<"ended">((resolve) => {
        if (signal.aborted) resolve("ended");
        else signal.addEventListener("abort", () => resolve("ended"), { once: true });
      }),
    ]);
  } catch (error) {
    state.holdPending = undefined;
    throw new CallNotHeld(state.call.id, `not confirmed (${(error as Error)?.message ?? String(error)})`);
  }
  state.holdPending = undefined;
  if (decision === "ended" || state.settled || state.aborted) {
    throw new CallNotHeld(state.call.id, state.stopReason ?? "finished");
  }
  if (!decision.accepted) {
    // Refused because a cancel of this call is under way: the call stops now, whichever of
    // the cancel and this answer arrived first.
    if (decision.reason === "cancelling") host.stop(state, "interrupted");
    throw new CallNotHeld(state.call.id, `refused by the server (${decision.reason ?? "no reason given"})`);
  }
  return becomeHeld(host, state);
}

function becomeHeld(host: HoldHost, state: CallState): AbortSignal {
  if (!state.held || !state.holdController) {
    state.held = true;
    state.holdController = new AbortController();
    host.held(state);
  }
  return state.holdController.signal;
}
