import type { ToolOutcome } from "@patchbay/protocol";
import { CallContext, type ContextHost } from "./call-context";
import { type CallFinisher, messageOf } from "./call-ending";
import { type CallState, signalOf } from "./call-state";
import * as Sentences from "./model-sentences";
import type { CompiledTool } from "./tool-definition";
import type { ToolExecutorOptions } from "./tool-executor-options";

/** What deciding a conditional approval asks of the executor. */
export interface WhenHost extends CallFinisher, ContextHost {
  /** The tool's `approval.when` threw (the executor emits `threw`, for the developer's log). */
  threw(state: CallState, error: unknown, step?: "run" | "when"): void;
}

/**
 * For a tool with `approval.when`: whether this call asks (`"ask"`), runs without asking
 * (`"run"`: `when` answered `false`), or already ended (`"ended"`: `when` threw, and the call
 * failed with a short sentence for the model, or it was cancelled meanwhile). Anything but
 * `false` asks, so a `when` that forgets to return does not skip the question.
 */
export async function whenStep(
  host: WhenHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
): Promise<"ask" | "run" | "ended"> {
  const when = tool.definition.approval?.when;
  if (typeof when !== "function") return "ask";
  let answer: unknown;
  try {
    answer = await when(args, new CallContext(host, state));
  } catch (error) {
    if (!state.settled) {
      host.threw(state, error, "when");
      host.finish(state, "failed", {
        text: Sentences.approvalCheckFailed(state.call.name),
        code: "approval_check_failed",
        message: messageOf(error),
      });
    }
    return "ended";
  }
  if (state.settled) return "ended";
  return answer === false ? "run" : "ask";
}

/** What the conditional approval step of a `PreapprovedToolExecutor` asks of the executor. */
export interface ConfirmHost extends WhenHost {
  readonly confirmApproval: ToolExecutorOptions["confirmApproval"];
}

/**
 * The approval step of an executor whose calls were approved upstream, for a tool whose approval
 * is conditional: `when` decides, and a call it says yes to is asked about where the approvals
 * live (`confirmApproval`: a page or worker asks the server, which tells the model how a
 * question that did not allow the call ended). True when the call may run; otherwise it ended
 * here: `declined` (also `approval_unavailable` without `confirmApproval`), `approval_expired`,
 * `cancelled` (the question was withdrawn, or not asked) or `failed` (`confirmApproval` threw).
 */
export async function confirmStep(
  host: ConfirmHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
): Promise<boolean> {
  const need = await whenStep(host, state, tool, args);
  if (need !== "ask") return need === "run";
  const { call } = state;
  const confirm = host.confirmApproval;
  const signal = signalOf(state);
  let outcome: string;
  try {
    outcome = confirm
      ? await Promise.race([
          Promise.resolve()
            .then(() => confirm({ callId: call.id, name: call.name, attempt: state.attempt, signal }))
            .then((answer) => answer?.outcome ?? "cancelled"),
          new Promise<string>((resolve) => {
            if (signal.aborted) resolve("ended");
            else signal.addEventListener("abort", () => resolve("ended"), { once: true });
          }),
        ])
      : "unavailable";
  } catch {
    outcome = "failed";
  }
  if (state.settled || outcome === "ended") return false;
  if (outcome === "allowed") return true;
  // declined, expired, cancelled; unavailable (no confirmApproval) and failed (it threw).
  const ended: ToolOutcome =
    outcome === "expired"
      ? "approval_expired"
      : outcome === "failed" || outcome === "cancelled"
        ? outcome
        : "declined";
  host.finish(state, ended, {
    text: Sentences.approvalNotGiven(call.name, outcome),
    code: outcome === "declined" || outcome === "cancelled" ? outcome : `approval_${outcome}`,
  });
  return false;
}
