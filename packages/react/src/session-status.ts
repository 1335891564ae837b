import type { ApprovalRequest, ConnectionState, ConversationItem } from "@patchbay/client";

/**
 * What a session is doing, as a page shows it: `connecting` (no session yet, or the socket is
 * down), `idle`, `thinking` (a reply started, no words yet, or a tool runs), `streaming` (words
 * arrive; a message sent and not yet answered counts as `thinking` too), `waiting_for_approval`,
 * `interrupted` (the last reply was stopped), `failed` (the session could not open, or the last
 * reply failed) and `closed` (the session went away: deleted, or closed; `send` fails).
 *
 * @example
 * ```ts
 * const busy = status === "thinking" || status === "streaming";
 * ```
 */
export type SessionStatus =
  | "connecting"
  | "idle"
  | "thinking"
  | "streaming"
  | "waiting_for_approval"
  | "interrupted"
  | "failed"
  | "closed";

/** What the status is derived from. */
export interface StatusInput {
  opened: boolean;
  openFailed: boolean;
  /** The session was closed or deleted: nothing more happens in it. */
  closed: boolean;
  connection: ConnectionState;
  conversation: readonly ConversationItem[];
  approvals: readonly ApprovalRequest[];
  /** Replies started and not yet completed or failed. */
  activeResponses: number;
  /** Messages sent and not yet in the conversation. */
  pending: number;
  /** A user message is in the conversation and its reply has not started yet. */
  awaitingReply: boolean;
  /** How the last reply ended. */
  lastOutcome: "completed" | "interrupted" | "failed" | undefined;
}

// One rule, used by the store for every snapshot.
export function sessionStatus(input: StatusInput): SessionStatus {
  if (input.openFailed) return "failed";
  if (input.closed) return "closed";
  if (!input.opened || input.connection !== "open") return "connecting";
  if (input.approvals.length > 0) return "waiting_for_approval";
  const last = input.conversation.at(-1);
  const running =
    input.activeResponses > 0 ||
    input.conversation.some(
      (item) =>
        (item.type === "message" && item.status === "in_progress") ||
        (item.type === "tool_call" && (item.status === "pending" || item.status === "running")),
    );
  if (running || input.pending > 0 || input.awaitingReply) {
    return last?.type === "message" && last.role === "assistant" && last.status === "in_progress" && last.text
      ? "streaming"
      : "thinking";
  }
  if (input.lastOutcome === "interrupted") return "interrupted";
  if (input.lastOutcome === "failed") return "failed";
  return "idle";
}
