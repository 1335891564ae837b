import { acquireSlots, type SlotCaps } from "./call-slots";
import type { CallState } from "./call-state";
import type { ApproveHost } from "./call-step-approve";
import { acceptArguments, findTool, type ParseHost } from "./call-step-parse";
import { type RunHost, runStep } from "./call-step-run";
import { type ConfirmHost, confirmStep } from "./call-step-when";
import { armTimeout } from "./call-timers";
import type { CompiledTool } from "./tool-definition";

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
 * conditional approval's `when` and `confirmApproval` run) → (timeout
 * starts) → slots → run. Each
 * step ends the call itself when it cannot go on; every await is followed by a look at whether
 * the call ended meanwhile. The timeout starts after the approval, so it counts the wait for
 * slots but not the user's answer.
 */
export async function runPipeline(host: PipelineHost, state: CallState): Promise<void> {
  const tool = findTool(host, state);
  if (tool === undefined) return;
  // Arguments checked before (ExecuteOptions.checkedArguments) are not parsed again.
  const parsed = state.checkedArguments
    ? ({ ok: true, value: state.checkedArguments.value } as const)
    : await tool.parameters.parse(state.call.arguments);
  if (state.settled || !acceptArguments(host, state, parsed)) return;
  const approval = tool.spec.approval;
  if (approval) {
    // Approved upstream (no approve step): only a conditional approval is decided here.
    const allowed = host.approve
      ? await host.approve(host, state, tool, parsed.value)
      : !approval.conditional || (await confirmStep(host, state, tool, parsed.value));
    if (!allowed) return;
  }
  if (state.settled) return;
  armTimeout(host, state, state.explicitTimeoutMs || (tool.definition.timeoutMs ?? host.defaultTimeoutMs));
  const slots = acquireSlots(state, tool, host.caps);
  if (slots !== true && !(await slots)) return;
  await runStep(host, state, tool, parsed.value);
}
