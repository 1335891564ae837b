import { acquireSlots, type SlotCaps } from "./call-slots";
import type { CallState } from "./call-state";
import type { ApproveHost } from "./call-step-approve";
import { acceptArguments, findTool, type ParseHost } from "./call-step-parse";
import { type RunHost, runStep } from "./call-step-run";
import { type ConfirmHost, confirmStep } from "./call-step-when";
import { armTimeout } from "./call-timers";
import type { CompiledTool } from "./tool-definition";
import type { ValidationResult } from "./validate-arguments";

/** The approval step (call-step-approve.ts), passed in so an executor without one carries none. */
export type ApproveStep = (
  host: ApproveHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
) => Promise<boolean>;

/** What the whole pipeline asks of the executor. */
export interface PipelineHost extends ParseHost, ApproveHost, ConfirmHost, RunHost {
  readonly defaultTimeoutMs: number;
  readonly caps: SlotCaps;
  /** Undefined where the approval was decided before the call arrived. */
  readonly approve: ApproveStep | undefined;
}

/**
 * A call's way from arrival to result: parse → approve (unless decided upstream, where only a
 * conditional approval's `when` and `confirmApproval` run) → (timeout starts) → slots → run. Each
 * step ends the call itself when it cannot go on; every wait is followed by a look at whether
 * the call ended meanwhile. The timeout starts after the approval, so it counts the wait for
 * slots but not the user's answer. A step that answers at once (a synchronous schema, no
 * approval, a free slot) is not awaited, so a call that needs none of the waits reaches `run`
 * in the same microtask. Returns `run`'s promise, or one for the rest when a step had to wait.
 */
export function runPipeline(host: PipelineHost, state: CallState): unknown {
  const tool = findTool(host, state);
  if (tool === undefined) return;
  // Arguments checked before (ExecuteOptions.checkedArguments) are not parsed again.
  const checked = state.checkedArguments;
  const parsed = checked
    ? { ok: true as const, value: checked.value }
    : tool.parameters.parse(state.call.arguments);
  return then(parsed, (result: ValidationResult<unknown>) => {
    if (state.settled || !acceptArguments(host, state, result)) return;
    const value = (result as { value: unknown }).value;
    const approval = tool.spec.approval;
    // Approved upstream (no approve step): only a conditional approval is decided here.
    const allowed =
      !approval ||
      (host.approve
        ? host.approve(host, state, tool, value)
        : !approval.conditional || confirmStep(host, state, tool, value));
    return then(allowed, (yes) => {
      if (!yes || state.settled) return;
      armTimeout(
        host,
        state,
        state.explicitTimeoutMs || (tool.definition.timeoutMs ?? host.defaultTimeoutMs),
      );
      return then(acquireSlots(state, tool, host.caps), (held) => held && runStep(host, state, tool, value));
    });
  });
}

// `next(value)` at once, or once `value` (our steps answer a value or a native promise) resolves.
const then = <T>(value: T | Promise<T>, next: (value: T) => unknown): unknown =>
  value instanceof Promise ? value.then(next) : next(value);
