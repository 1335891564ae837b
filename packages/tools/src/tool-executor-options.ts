// The public option, event and per-call types of ToolExecutor, apart from the class so the
// pipeline steps can name them without importing the executor.
import type { ConversationItem, User } from "@patchbay/protocol";
import type { ApprovalGate } from "./approval-gate";
import type { IdempotencyStore } from "./idempotency-store";
import type { ToolExecutionResult } from "./tool-execution-result";
import type { ToolLimiter } from "./tool-limiter";
import type { Tools } from "./tools";

/**
 * The events a {@link ToolExecutor} emits, each naming the call. `finished` carries the whole
 * result. A call answered from the idempotency store, or joined to a run in progress, emits
 * nothing: events describe runs.
 *
 * @example
 * ```ts
 * executor.on("progress", ({ callId, text }) => send({ type: "tool.progress", callId, text }));
 * ```
 */
export interface ToolExecutorEvents {
  started: (event: {
    callId: string;
    name: string;
    attempt: number;
    arguments: Record<string, unknown>;
  }) => void;
  progress: (event: { callId: string; name: string; text: string }) => void;
  say: (event: { callId: string; name: string; text: string }) => void;
  held: (event: { callId: string; name: string }) => void;
  /**
   * A tool's `run` (or its `approval.when`) threw: the error itself, stack and all, for the
   * developer's log (the model only gets a short sentence in the result). Emitted before
   * `finished`.
   */
  threw: (event: {
    callId: string;
    name: string;
    sessionId: string;
    error: unknown;
    /** Which of the tool's functions threw: `run`, or its `approval.when`. */
    step: "run" | "when";
  }) => void;
  finished: (result: ToolExecutionResult) => void;
}

/**
 * Options of a {@link ToolExecutor}.
 *
 * @example
 * ```ts
 * const options: ToolExecutorOptions = { tools, sessionId: "s_1", user: { id: "u_1" }, approvalGate: allowAll };
 * ```
 */
export interface ToolExecutorOptions {
  tools: Tools;
  /** The session the calls belong to. Default `""`. */
  sessionId?: string;
  /** The user whose turns trigger the calls. Default `{ id: "anonymous" }`. */
  user?: User;
  /** The conversation, or a function giving it as it is now (read when a tool reads `ctx.conversation`). */
  conversation?: readonly ConversationItem[] | (() => readonly ConversationItem[]);
  /** Asks the user before a tool with `approval` runs. Without one, such tools are declined. */
  approvalGate?: ApprovalGate;
  /** How long an approval request stays open unless the tool says otherwise. Default 5 minutes. */
  approvalExpiresInMs?: number;
  /** Where finished results are kept for calls delivered again. Default: an in-memory LRU with TTL. */
  idempotencyStore?: IdempotencyStore;
  /**
   * How many calls of this session run at once. Default 16. `null`: no session cap here, because
   * the caller caps the calls it hands over (the server's tool-call runner does).
   */
  maxConcurrentCalls?: number | null;
  /** The timeout of a tool that sets none. Default 30 000 ms. */
  defaultTimeoutMs?: number;
  /**
   * Asked when a tool calls `ctx.disallowInterruptions()`: whether the call may hold. The hold
   * (and the `held` event) happens only once it answers `accepted: true`; a refusal makes
   * `disallowInterruptions()` reject with `CallNotHeld`, and a refusal because a cancel is under
   * way (`reason: "cancelling"`) cancels the call. A page or a worker asks the server here
   * (`tool.hold` / `hosted.hold`, answered by the ack frame). Default: every hold is accepted.
   */
  confirmHold?: (request: HoldRequest) => HoldDecision | Promise<HoldDecision>;
  /**
   * For a `PreapprovedToolExecutor` (calls approved upstream): asked when a tool's
   * `approval.when` says a call needs the user's approval, since the question lives where the
   * approvals are. A page or worker asks the server here (`tool.approval` / `hosted.approval`,
   * answered by the ack frame); the call runs only on `allowed`. Without it such a call is
   * declined (`approval_unavailable`). A `ToolExecutor` asks its `approvalGate` instead.
   */
  confirmApproval?: (
    request: ConditionalApprovalRequest,
  ) => ConditionalApprovalAnswer | Promise<ConditionalApprovalAnswer>;
  /** Process-wide per-tool caps shared with other executors. */
  limiter?: ToolLimiter;
  /**
   * Delivers coalesced progress: called with a `flush` function when an update is pending; the
   * `progress` event is emitted when `flush` runs, with the newest text pending then. Default:
   * the next macrotask (`setTimeout(flush, 0)`), late enough that an update made just before
   * `run` returns is replaced by the result. A host that relays progress at a pace (speech)
   * can pass its own.
   */
  scheduleProgress?: (flush: () => void) => void;
  /** The clock, in ms. Default `Date.now`. */
  now?: () => number;
}

/**
 * A tool asks to hold its call (see {@link ToolExecutorOptions.confirmHold}).
 *
 * @example
 * ```ts
 * const request: HoldRequest = { callId: "call_1", name: "book_flight", attempt: 1, signal };
 * ```
 */
export interface HoldRequest {
  callId: string;
  name: string;
  attempt: number;
  /** Aborts when the call ends before the answer comes. */
  signal: AbortSignal;
}

/**
 * The answer to a {@link HoldRequest}, as `hosted.hold.ack` / `tool.hold.ack` carry it.
 *
 * @example
 * ```ts
 * const decision: HoldDecision = { accepted: false, reason: "cancelling" };
 * ```
 */
export interface HoldDecision {
  accepted: boolean;
  reason?: string;
}

/**
 * A tool's `approval.when` said this call asks the user (see
 * {@link ToolExecutorOptions.confirmApproval}).
 *
 * @example
 * ```ts
 * const request: ConditionalApprovalRequest = { callId: "call_1", name: "pay", attempt: 1, signal };
 * ```
 */
export interface ConditionalApprovalRequest {
  callId: string;
  name: string;
  attempt: number;
  /** Aborts when the call ends before the answer comes. */
  signal: AbortSignal;
}

/**
 * How the question of a {@link ConditionalApprovalRequest} ended, as `tool.approval.ack` /
 * `hosted.approval.ack` carry it. `reason`: the user's words on a decline, or why the question
 * was not asked.
 *
 * @example
 * ```ts
 * const answer: ConditionalApprovalAnswer = { outcome: "declined", reason: "too expensive" };
 * ```
 */
export interface ConditionalApprovalAnswer {
  outcome: "allowed" | "declined" | "expired" | "cancelled";
  reason?: string;
}

/**
 * Why a call is stopped with {@link ToolExecutor.cancel}: `timed_out` stops held calls too (their
 * held signal aborts); `interrupted` and `session_closed` leave a held call running; `cancelled`
 * (the default) stops any call, a held one included, but leaves its held signal alone.
 *
 * @example
 * ```ts
 * executor.cancel(frame.callId, frame.reason);
 * ```
 */
export type CancelReason = "interrupted" | "timed_out" | "session_closed" | "cancelled";

/**
 * Per-call options of {@link ToolExecutor.execute}.
 *
 * @example
 * ```ts
 * await executor.execute(call, { attempt: frame.attempt, signal: session.signal });
 * ```
 */
export interface ExecuteOptions {
  /**
   * The delivery number as the sender counts it; default: how many times this executor saw the
   * id. A delivery with its number is counted here only for an id seen before without one.
   */
  attempt?: number;
  /** Aborting it cancels the call (as `cancel` does). Not used when the call joins one in progress. */
  signal?: AbortSignal;
  /**
   * This call's timeout, instead of the tool's `timeoutMs` or the default: the sender worked it
   * out (the server sends the time left in `tool.call` / `hosted.call`).
   */
  timeoutMs?: number;
  /**
   * The arguments as {@link ToolExecutor.checkArguments} already parsed them: they are not parsed
   * again (a call's arguments are checked once).
   */
  checkedArguments?: { value: unknown };
}
