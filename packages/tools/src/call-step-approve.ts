import type { ApprovalDecision, ApprovalGate } from "./approval-gate";
import { buildApprovalRequest } from "./approval-request";
import { type CallFinisher, messageOf } from "./call-ending";
import { abortError, type CallState, signalOf } from "./call-state";
import { type WhenHost, whenStep } from "./call-step-when";
import * as Sentences from "./model-sentences";
import type { CompiledTool } from "./tool-definition";

/** What the approval step asks of the executor. */
export interface ApproveHost extends CallFinisher, WhenHost {
  readonly approvalGate: ApprovalGate | undefined;
  /** How long a request stays open unless the tool says otherwise. */
  readonly approvalExpiresInMs: number;
  now(): number;
}

/**
 * The second step, for a tool with `approval`: unless its `when` says this call runs without
 * asking, asks the approval gate and waits for its answer,
 * the request's expiry or the call's end, whichever comes first. True when the user allowed
 * this call with these arguments; otherwise the call ended here (`declined`, `approval_expired`
 * or `failed`), or had already ended.
 */
export async function approveStep(
  host: ApproveHost,
  state: CallState,
  tool: CompiledTool,
  args: unknown,
): Promise<boolean> {
  const { call } = state;
  const approval = tool.spec.approval!;
  if (approval.conditional) {
    const need = await whenStep(host, state, tool, args);
    if (need !== "ask") return need === "run";
  }
  const gate = host.approvalGate;
  if (!gate) {
    host.finish(state, "declined", {
      text: Sentences.approvalUnavailable(call.name),
      code: "approval_unavailable",
      message: "no approval gate is configured",
    });
    return false;
  }
  const expiresInMs = approval.expiresInMs ?? host.approvalExpiresInMs;
  const request = buildApprovalRequest({
    callId: call.id,
    tool: call.name,
    approval,
    arguments: call.arguments,
    now: host.now(),
    defaultExpiresInMs: host.approvalExpiresInMs,
  });
  const argumentsHash = request.argumentsHash;

  const questionController = new AbortController();
  const callSignal = signalOf(state);
  const onCallEnd = () => questionController.abort(callSignal.reason);
  callSignal.addEventListener("abort", onCallEnd, { once: true });
  let expiryTimer: ReturnType<typeof setTimeout> | undefined;
  const expiry = new Promise<"expired">((resolve) => {
    expiryTimer = setTimeout(() => resolve("expired"), expiresInMs);
  });
  const ended = new Promise<"ended">((resolve) => {
    callSignal.addEventListener("abort", () => resolve("ended"), { once: true });
  });
  let answer: ApprovalDecision | "ended";
  try {
    answer = await Promise.race([
      Promise.resolve().then(() => gate(request, questionController.signal)),
      expiry,
      ended,
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
  } finally {
    clearTimeout(expiryTimer);
    callSignal.removeEventListener("abort", onCallEnd);
  }
  if (state.settled || answer === "ended") return false;
  const decision = decisionOf(answer);
  if (decision.outcome === "expired" || host.now() > request.expiresAt) {
    questionController.abort(abortError("the approval request expired", "TimeoutError"));
    host.finish(state, "approval_expired", {
      text: Sentences.approvalExpired(call.name),
      code: "approval_expired",
      message: `the approval request expired after ${expiresInMs} ms`,
    });
    return false;
  }
  if (
    (decision.callId !== undefined && decision.callId !== call.id) ||
    (decision.argumentsHash !== undefined && decision.argumentsHash !== argumentsHash)
  ) {
    host.finish(state, "declined", {
      text: Sentences.approvalMismatch(call.name),
      code: "approval_mismatch",
      message: "the approval is bound to another call id or arguments hash",
    });
    return false;
  }
  if (decision.outcome === "declined") {
    host.finish(state, "declined", {
      text: Sentences.declined(call.name),
      code: "declined",
      message: "the user declined",
    });
    return false;
  }
  if (decision.outcome !== "allowed") {
    host.finish(state, "failed", {
      text: Sentences.approvalFailed(call.name, "its answer was not understood"),
      code: "approval_failed",
      message: `the approval gate answered ${JSON.stringify(answer)}, expected "allowed", "declined" or "expired"`,
    });
    return false;
  }
  return true;
}

function decisionOf(decision: ApprovalDecision): {
  outcome: string;
  callId?: string;
  argumentsHash?: string;
} {
  return typeof decision === "string" ? { outcome: decision } : (decision ?? { outcome: "invalid" });
}
