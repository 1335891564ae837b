import { CallContext, type ContextHost } from "./call-context";
import { type CallFinisher, messageOf } from "./call-ending";
import { type CallState, signalOf } from "./call-state";
import * as Sentences from "./model-sentences";
import type { CompiledTool } from "./tool-definition";
import type { ConditionalApprovalAnswer, ToolExecutorOptions } from "./tool-executor-options";

/** What deciding a conditional approval asks of the executor. */
export interface WhenHost extends CallFinisher, ContextHost {
  /** The tool's code threw (the executor emits `threw`, for the developer's log). */
  threw(state: CallState, error: unknown): void;
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
      host.threw(state, error);
      host.finish(state, "failed", {
        text: Sentences.approvalCheckFailed(state.call.name),
        code: "approval_check_failed",
        message: `approval.when threw: ${messageOf(error)}`,
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
 * live (`confirmApproval`: a page or worker asks the server). True when the call may run;
 * otherwise it ended here (`declined`, `approval_expired`, `cancelled` or `failed`).
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
  if (!confirm) {
    host.finish(state, "declined", {
      text: Sentences.approvalUnavailable(call.name),
      code: "approval_unavailable",
      message: "approval.when asked for approval and no confirmApproval is configured",
    });
    return false;
  }
  const signal = signalOf(state);
  let answer: ConditionalApprovalAnswer | "ended";
  try {
    answer = await Promise.race([
      Promise.resolve().then(() =>
        confirm({ callId: call.id, name: call.name, attempt: state.attempt, signal }),
      ),
      new Promise<"ended">((resolve) => {
        if (signal.aborted) resolve("ended");
        else signal.addEventListener("abort", () => resolve("ended"), { once: true });
      }),
    ]);
  } catch (error) {
    if (!state.settled) {
      host.finish(state, "failed", {
        text: Sentences.approvalFailed(call.name, messageOf(error)),
        code: "approval_failed",
        message: messageOf(error),
      });
    }
    return false;
  }
  if (state.settled || answer === "ended") return false;
  switch (answer?.outcome) {
    case "allowed":
      return true;
    case "declined":
      host.finish(state, "declined", {
        text: Sentences.declined(call.name, answer.reason),
        code: "declined",
        message: "the user declined",
      });
      return false;
    case "expired":
      host.finish(state, "approval_expired", {
        text: Sentences.approvalExpired(call.name),
        code: "approval_expired",
        message: "the approval request expired",
      });
      return false;
    default:
      // The question was withdrawn (an interrupt, the session closing) or not asked at all.
      host.finish(state, "cancelled", {
        text: Sentences.withdrawn(),
        code: "cancelled",
        message: `the approval ended ${answer?.outcome ?? "without an answer"}${answer?.reason ? ` (${answer.reason})` : ""}`,
      });
      return false;
  }
}
