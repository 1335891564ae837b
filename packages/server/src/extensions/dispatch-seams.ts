import type {
  ConversationItem,
  ImageContent,
  InboundMessage,
  JsonObject,
  ServerToWorkerFrame,
  SessionInfo,
  ToolResult,
  ToolSpec,
  User,
  WireError,
} from "@patchbay/protocol";

// The seams between the turn loop and the dispatch module. This file imports no server module,
// so every part of the server can depend on it without a cycle; what the dispatch module is
// handed when the server starts is in `dispatch-extension.ts`.

/**
 * Why the server's tool-call runner asks a call to stop: the user interrupted, its timeout
 * passed, or its session closed.
 *
 * @example
 * ```ts
 * router.cancel("call_1", "interrupted");
 * ```
 */
export type CancelReason = "interrupted" | "timed_out" | "session_closed";

/**
 * The runner's answer to a hold, sent back on the wire as `hosted.hold.ack` / `tool.hold.ack`.
 * `reason` (when refused): `cancelling`, `settled`, `unknown_call` or `stale_attempt`.
 *
 * @example
 * ```ts
 * const answer: HoldAnswer = { accepted: false, reason: "cancelling" };
 * ```
 */
export interface HoldAnswer {
  accepted: boolean;
  reason?: string;
}

/**
 * How a conditional approval a call asked for ended (`handlers.approval`), sent back on the wire
 * as `hosted.approval.ack` / `tool.approval.ack`. The call runs only on `allowed`; `reason` is the
 * user's on a decline, or why nothing was asked (`settled`, `unknown_call`, `stale_attempt`).
 *
 * @example
 * ```ts
 * const answer: ApprovalAnswer = { outcome: "declined", reason: "too expensive" };
 * ```
 */
export interface ApprovalAnswer {
  outcome: "allowed" | "declined" | "expired" | "cancelled";
  reason?: string;
}

/**
 * One hosted tool call the turn loop hands to the {@link HostedToolRouter}. Approval, argument
 * validation and the timeout are decided already: the server only routes a call that was
 * allowed.
 *
 * @example
 * ```ts
 * const request: HostedToolRequest = {
 *   callId: "call_1", agent: "support", sessionId: "s_1", tool: "lookup_order",
 *   arguments: { order_id: "A1" }, user: { id: "u_1" }, conversation: [], timeoutMs: 30_000,
 * };
 * ```
 */
export interface HostedToolRequest {
  /**
   * The call's id: minted by the server, unique across sessions, and the same on every delivery,
   * so it is the idempotency key (the model's own id is the item's `providerCallId`).
   */
  callId: string;
  agent: string;
  sessionId: string;
  tool: string;
  arguments: JsonObject;
  user: User;
  conversation: ConversationItem[];
  /**
   * How long the call may run, from now: the tool's `timeoutMs` or 30 s, under the ceiling
   * ({@link HostedToolRouter.timeoutCeilingMs}, else the agent's `hosted_tool_timeout_ms`).
   * Each delivery tells the worker the time left. The runner, not the router, times the call
   * out (with `cancel(callId, "timed_out")`).
   */
  timeoutMs: number;
  /**
   * The attempt number of this delivery when it is not the first: a call another node of a
   * cluster sent before it died goes on from there (default 1).
   */
  attempt?: number;
}

/**
 * What a call tells the turn loop while it runs, wherever it runs. The loop relays each to the
 * page (with the progress coalescing rule) and keeps the conversation item current.
 *
 * @example
 * ```ts
 * handlers.progress("Looking it up"); const { accepted } = handlers.hold(1); handlers.attempt(2);
 * ```
 */
export interface ToolCallHandlers {
  progress(text: string): void;
  say(text: string): void;
  /**
   * The tool asks to disallow interruptions, for the delivery `attempt` (when the far side named
   * one). The runner decides at once: accepted unless a cancel of the call is under way, the
   * call ended, or the attempt is older than the latest delivery. The caller sends the answer
   * back (`hosted.hold.ack` / `tool.hold.ack`).
   */
  hold(attempt?: number): HoldAnswer;
  /**
   * The tool's approval is conditional and its `when` said this call asks: the runner asks the
   * user (the session's approvals, bound to the call id and arguments hash), pausing the call's
   * timeout, and resolves with how the question ended. Asked again (a later delivery), it gives
   * the same question or its outcome, never a second one. The caller sends the answer back
   * (`hosted.approval.ack` / `tool.approval.ack`). The runner always gives it; it is optional so
   * handlers made elsewhere (tests, benchmarks) need not.
   */
  approval?(attempt?: number): Promise<ApprovalAnswer>;
  /** The call was delivered (again) with this attempt number. */
  attempt(attempt: number): void;
}

/**
 * The seam the dispatch module (`src/workers/`) implements to run tools that workers host.
 * The turn loop asks `hasTool` to decide where a call goes and `specs` for what to offer the
 * model; `call` resolves with the call's result as the worker reported it. The turn loop's
 * tool-call runner alone decides when a call is cancelled (an interrupt of an interruptible
 * call that is not held, its timeout, the session closing) and calls `cancel`.
 *
 * Contract for implementers:
 * - `call` never rejects. It resolves with the worker's `hosted.result` for the latest delivery
 *   (from the worker that delivery went to); no worker hosting the tool resolves
 *   `{ outcome: "failed", error: { code: "no_worker" } }` at once.
 * - `cancel` is a request: it sends `hosted.cancel` and does not settle the call; the worker's
 *   answer (a cancelled result, or its real one) settles it. A call nobody answers after a
 *   cancel resolves `{ error: { code: "unanswered" } }` within a bound, so nothing waits forever.
 * - The same `callId` may be delivered to several workers (attempt 2, 3, ...); results for an
 *   older attempt are dropped.
 * - `specs(agent)` lists the tools of every connected worker that hosts the agent (one spec per
 *   name); it is read at the start of each model round.
 *
 * @example
 * ```ts
 * class WorkerToolRouter implements HostedToolRouter {
 *   hasTool(agent: string, name: string) { return this.hosts(agent).has(name); }
 *   specs(agent: string) { return [...this.hosts(agent).values()]; }
 *   call(request: HostedToolRequest, handlers: ToolCallHandlers) { return this.offer(request, handlers); }
 *   cancel(callId: string, reason: CancelReason) { this.sendCancel(callId, reason); }
 * }
 * ```
 */
export interface HostedToolRouter {
  hasTool(agent: string, name: string): boolean;
  specs(agent: string): ToolSpec[];
  call(request: HostedToolRequest, handlers: ToolCallHandlers): Promise<ToolResult>;
  cancel(callId: string, reason: CancelReason): void;
  /** The ceiling of a hosted tool's timeout the workers set (`toolTimeoutMs`), if any did. */
  timeoutCeilingMs?(agent: string, tool: string): number | undefined;
}

/**
 * A user message (sent with a user token; the backend's and workers' messages go straight to the
 * model) of a session whose agent has `dispatch: { text: enabled }`, handed to the
 * {@link MessageRouter} before the model runs.
 *
 * @example
 * ```ts
 * const request: MessageRouteRequest = { session, message, images: [], signal };
 * ```
 */
export interface MessageRouteRequest {
  session: SessionInfo;
  /** The message as a worker receives it: `sessionId` set, `id` is the user message item's id. */
  message: InboundMessage;
  /**
   * The images the user message carries. A worker receives text only, so a router refuses a
   * message with any (`unsupported_content`) rather than pass it on without them.
   */
  images: readonly ImageContent[];
  /** Aborted when the turn is interrupted (a newer message, an explicit interrupt, shutdown). */
  signal: AbortSignal;
}

/**
 * How routing a message ended:
 * - `answer`: the worker called `answer` for this message: the model now replies;
 * - `handled`: the worker finished without `answer` (it replies in its own words from its
 *   backend): the turn ends with `response.completed { reason: "answered_by_worker" }`;
 * - `dropped`: no worker took it (none connected, queue full, images refused): the turn ends
 *   with `response.failed` carrying `error` (`no_worker`, `queue_full`, `unsupported_content`).
 *
 * @example
 * ```ts
 * const outcome: MessageRouteOutcome = { kind: "dropped", error: { code: "no_worker", message: "no worker is connected" } };
 * ```
 */
export type MessageRouteOutcome =
  | { kind: "answer" }
  | { kind: "handled" }
  | { kind: "dropped"; error: WireError };

/**
 * The seam the dispatch module implements to send a session's user messages to a worker first
 * (`dispatch: { text: enabled }` in the agent file). While `route` runs, the client sees
 * `response.thinking { reason: "dispatch" }`. Without a router installed, such a message is
 * dropped with `no_worker`, the same as when no worker is connected.
 *
 * @example
 * ```ts
 * const router: MessageRouter = {
 *   route: async ({ message, signal }) => (await offerToWorker(message, signal)) ? { kind: "answer" } : { kind: "dropped", error },
 * };
 * ```
 */
export interface MessageRouter {
  route(request: MessageRouteRequest): Promise<MessageRouteOutcome>;
}

/**
 * How much room a node's dispatch workers have now, as its cluster heartbeat says
 * (docs/cluster.md): the free slots of the freest worker that handles messages, and of the
 * freest that handles incoming calls (`-1` when none does), and per agent and hosted tool the
 * calls outstanding on its least busy host. Work and calls go to the node with the most room.
 *
 * @example
 * ```ts
 * const room: WorkerRoom = { messages: 3, calls: -1, tools: { support: { record_payment: 0 } } };
 * ```
 */
export interface WorkerRoom {
  messages: number;
  calls: number;
  tools: Record<string, Record<string, number>>;
}

/**
 * A message or incoming call for a dispatch worker, as `work.offered` carries it.
 *
 * @example
 * ```ts
 * const work: DispatchWork = { kind: "call", call: { id: "pc_1", agent: "support", from: "+1", to: "+2", customData: {}, createdAt: 0 } };
 * ```
 */
export type DispatchWork = (ServerToWorkerFrame & { type: "work.offered" })["work"];

/**
 * Where submitted work stands: offered to a worker, queued for one, or dropped (and why).
 *
 * @example
 * ```ts
 * const receipt: DispatchWorkReceipt = { status: "queued", workId: "wk_1" };
 * ```
 */
export type DispatchWorkReceipt =
  | { status: "offered" | "queued"; workId: string }
  | { status: "dropped"; workId: string; error: WireError };

/**
 * Cluster mode (docs/cluster.md): work that comes in on this node (the inbound routes) goes to
 * the node whose workers have the most room. `submit` hands it to such a node, or to `local`
 * when this node has as much room as any; `serve` takes other nodes' work onto this node's.
 *
 * @example
 * ```ts
 * const receipt = await elsewhere.submit(work, () => router.submit(work), freeSlotsHere);
 * ```
 */
export interface WorkElsewhere {
  submit(
    work: DispatchWork,
    local: () => DispatchWorkReceipt,
    localRoom: number,
  ): DispatchWorkReceipt | Promise<DispatchWorkReceipt>;
  serve(local: (work: DispatchWork) => DispatchWorkReceipt): void;
}
