import type { ApprovalRequest } from "@patchbay/protocol";

/**
 * The answer of an approval gate. The object form lets a gate say which call and which
 * arguments the user approved; the executor refuses an answer bound to another call id or
 * another arguments hash.
 *
 * @example
 * ```ts
 * const decision: ApprovalDecision = { outcome: "allowed", callId: request.callId, argumentsHash: request.argumentsHash };
 * ```
 */
export type ApprovalDecision =
  | "allowed"
  | "declined"
  | "expired"
  | { outcome: "allowed" | "declined" | "expired"; callId?: string; argumentsHash?: string };

/**
 * Asks the user whether a tool call may run. Supplied by whoever hosts the executor (the server
 * asks the page). `signal` aborts when the request expires or the call is cancelled; the gate
 * should then withdraw the question.
 *
 * @example
 * ```ts
 * const approvalGate: ApprovalGate = async (request, signal) => {
 *   const allowed = await ui.confirm(request.title, { allow: request.allowTitle, decline: request.declineTitle, signal });
 *   return allowed ? "allowed" : "declined";
 * };
 * ```
 */
export type ApprovalGate = (request: ApprovalRequest, signal: AbortSignal) => Promise<ApprovalDecision>;

/**
 * A gate that allows every call, for hosts where approval was already granted upstream (a page
 * or a worker running a call the server asked the user about).
 *
 * @example
 * ```ts
 * const executor = new ToolExecutor({ tools, sessionId, approvalGate: allowAll });
 * ```
 */
export const allowAll: ApprovalGate = async () => "allowed";
