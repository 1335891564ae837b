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
 * step ends the call itself when it cannot go on; every await is followed by a look at whether
 * the call ended meanwhile. The timeout starts after the approval, so it counts the wait for
 * slots but not the user's answer. Steps that answer at once (a synchronous schema, no approval,
 * a free slot) are not awaited: a call that needs none of the waits reaches `run` in the same
 * microtask. Returns a promise only when a step had to wait; it never rejects: what throws where
 * it should not ends the call as failed (`failInternally`). A synchronous throw is the caller's.
 */
export function runPipeline(host: PipelineHost, state: CallState): void | Promise<void> {
  const tool = findTool(host, state);
  if (tool === undefined) return;
  // Arguments checked before (ExecuteOptions.checkedArguments) are not parsed again.
  if (state.checkedArguments)
    return afterParse(host, state, tool, { ok: true, value: state.checkedArguments.value });
  const parsed = tool.parameters.parse(state.call.arguments);
  // Our parse functions answer a value or a native promise.
  return parsed instanceof Promise
    ? parsed.then(
        (result) => afterParse(host, state, tool, result),
        (error: unknown) => host.failInternally(state, error),
      )
    : afterParse(host, state, tool, parsed);
}

function afterParse(
  host: PipelineHost,
  state: CallState,
  tool: CompiledTool,
  parsed: ValidationResult<unknown>,
): void | Promise<void> {
  try {
    if (state.settled || !acceptArguments(host, state, parsed)) return;
    if (tool.spec.approval) return approveThenRun(host, state, tool, parsed.value);
    return startRun(host, state, tool, parsed.value);
  } catch (error) {
    host.failInternally(state, error);
  }
}

async function approveThenRun(host: PipelineHost, state: CallState, tool: CompiledTool, args: unknown) {
  try {
    const approval = tool.spec.approval!;
    // Approved upstream (no approve step): only a conditional approval is decided here.
    const allowed = host.approve
      ? await host.approve(host, state, tool, args)
      : !approval.conditional || (await confirmStep(host, state, tool, args));
    if (!allowed || state.settled) return;
    await startRun(host, state, tool, args);
  } catch (error) {
    host.failInternally(state, error);
  }
}

function startRun(
  host: PipelineHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
): void | Promise<void> {
  armTimeout(host, state, state.explicitTimeoutMs || (tool.definition.timeoutMs ?? host.defaultTimeoutMs));
  const slots = acquireSlots(state, tool, host.caps);
  if (slots === true) return runStep(host, state, tool, args);
  return slots.then(
    (held) => (held ? runStep(host, state, tool, args) : undefined),
    (error: unknown) => host.failInternally(state, error),
  );
}
