import type { ApprovalRequest, JsonObject, ToolApprovalSpec } from "@patchbay/protocol";
import { fillTemplate } from "./fill-template";
import { hashArguments } from "./hash-arguments";

/**
 * What {@link buildApprovalRequest} needs: the call, its tool's approval spec and the clock.
 *
 * @example
 * ```ts
 * const input: ApprovalRequestInput = { callId: "call_1", tool: "book_flight", approval, arguments: args, now: Date.now(), defaultExpiresInMs: 300_000 };
 * ```
 */
export interface ApprovalRequestInput {
  callId: string;
  tool: string;
  approval: ToolApprovalSpec;
  arguments: JsonObject;
  /** When the question is asked, in ms. */
  now: number;
  /** How long the question stays open when the tool's approval sets no `expiresInMs`. */
  defaultExpiresInMs: number;
}

/**
 * The approval request for one call, the same wherever it is asked (the server, or an executor
 * with its own gate): id `approval_<callId>`, the title with its `{argument}` placeholders
 * filled, the button titles, the arguments' hash, and the reason from the tool's
 * `reasonArgument` (a string as it is, another value as JSON, left out when absent or null).
 *
 * @example
 * ```ts
 * const request = buildApprovalRequest({ callId, tool: "book_flight", approval, arguments: args, now: Date.now(), defaultExpiresInMs: 300_000 });
 * ```
 */
export function buildApprovalRequest(input: ApprovalRequestInput): ApprovalRequest {
  const { approval, arguments: args } = input;
  const request: ApprovalRequest = {
    id: `approval_${input.callId}`,
    callId: input.callId,
    tool: input.tool,
    title: fillTemplate(approval.title, args),
    allowTitle: approval.allowTitle ?? "Allow",
    declineTitle: approval.declineTitle ?? "Decline",
    argumentsHash: hashArguments(args),
    expiresAt: input.now + (approval.expiresInMs ?? input.defaultExpiresInMs),
  };
  const reason = approval.reasonArgument === undefined ? undefined : args[approval.reasonArgument];
  if (reason !== undefined && reason !== null) {
    request.reason = typeof reason === "string" ? reason : JSON.stringify(reason);
  }
  return request;
}
