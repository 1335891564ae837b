import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type {
  ConversationItem,
  ImageContent,
  InboundMessage,
  JsonObject,
  SessionInfo,
  ToolResult,
  ToolSpec,
  User,
  WireError,
} from "@patchbay/protocol";
import type { AgentConfig } from "./agent-config";
import type { Authenticator } from "./auth";
import type { HttpRouteExtension } from "./http-api";
import type { Logger } from "./logger";
import type { ServerMetrics } from "./metrics";
import type { SessionManager } from "./session-manager";
import type { Store } from "./store";

/**
 * One hosted tool call the turn loop hands to the {@link HostedToolRouter}. Approval and argument
 * validation are already done: the server only routes a call that was allowed.
 *
 * @example
 * ```ts
 * const request: HostedToolRequest = {
 *   callId: "call_1", agent: "support", sessionId: "s_1", tool: "lookup_order",
 *   arguments: { order_id: "A1" }, user: { id: "u_1" }, conversation: [], defaultTimeoutMs: 120_000,
 *   interruptible: false,
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
   * The agent's hosted tool timeout (its `hosted_tool_timeout_ms`, 2 minutes by default). The
   * router applies the longest `toolTimeoutMs` a worker offered instead, when one did.
   */
  defaultTimeoutMs: number;
  /** Whether an interrupt may cancel the call (the tool's spec said `interruptible: true`). */
  interruptible: boolean;
}

/**
 * What a hosted call tells the turn loop while it runs. The loop relays each to the page (with
 * the progress coalescing rule) and keeps the conversation item current.
 *
 * @example
 * ```ts
 * handlers.progress("Looking it up"); handlers.hold(); handlers.attempt(2);
 * ```
 */
export interface HostedToolHandlers {
  progress(text: string): void;
  say(text: string): void;
  /** The tool disallowed interruptions: from now on only its timeout ends it. */
  hold(): void;
  /** The call was delivered (again) to a worker with this attempt number. */
  attempt(attempt: number): void;
}

/**
 * The seam the dispatch module (`src/dispatch/`) implements to run tools that workers host.
 * The turn loop asks `hasTool` to decide where a call goes and `specs` for what to offer the
 * model; `call` resolves with the call's result once, whatever happens to workers meanwhile;
 * `cancel` is used on an interrupt (only for interruptible, not held calls) and when a session
 * closes.
 *
 * Contract for implementers:
 * - `call` never rejects: a timeout resolves `{ outcome: "timed_out" }`, no worker hosting the
 *   tool resolves `{ outcome: "failed", error: { code: "no_worker" } }`, a cancel resolves
 *   `{ outcome: "cancelled" }`.
 * - The same `callId` may be delivered to several workers (attempt 2, 3, ...) within the timeout;
 *   the first result wins, later ones are dropped. `Store.putToolResult` keeps the first result
 *   durably, so a result that arrives twice is used once even across a restart.
 * - `specs(agent)` lists the tools of every connected worker that hosts the agent (one spec per
 *   name); it is read at the start of each model round.
 *
 * @example
 * ```ts
 * class WorkerToolRouter implements HostedToolRouter {
 *   hasTool(agent: string, name: string) { return this.hosts(agent).has(name); }
 *   specs(agent: string) { return [...this.hosts(agent).values()]; }
 *   call(request: HostedToolRequest, handlers: HostedToolHandlers) { return this.offer(request, handlers); }
 *   cancel(callId: string, reason: "interrupted" | "timed_out" | "session_closed") { this.sendCancel(callId, reason); }
 * }
 * ```
 */
export interface HostedToolRouter {
  hasTool(agent: string, name: string): boolean;
  specs(agent: string): ToolSpec[];
  call(request: HostedToolRequest, handlers: HostedToolHandlers): Promise<ToolResult>;
  cancel(callId: string, reason: "interrupted" | "timed_out" | "session_closed"): void;
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
 * What the dispatch module is given when the server starts: enough to authenticate workers
 * (`authenticator.checkApiKey`), reach sessions, keep metrics (`metrics.workers`) and log.
 *
 * @example
 * ```ts
 * createServer({ dispatch: (context) => createDispatch(context) });
 * ```
 */
export interface DispatchContext {
  authenticator: Authenticator;
  store: Store;
  sessions: SessionManager;
  agents: ReadonlyMap<string, AgentConfig>;
  logger: Logger;
  metrics: ServerMetrics;
}

/**
 * The dispatch module as the server hosts it: the two routing seams, the `/v1/worker` socket
 * (`handleUpgrade` takes the upgrades it wants and returns `true`), extra HTTP routes (the
 * inbound message and call endpoints), and `close` for a graceful shutdown (called after
 * sessions stopped, before the store closes).
 *
 * @example
 * ```ts
 * const extension: DispatchExtension = {
 *   hostedTools: router, messageRouter: router,
 *   handleUpgrade: (req, socket, head) => new URL(req.url!, "http://x").pathname === "/v1/worker" && workers.upgrade(req, socket, head),
 *   http: (req, res) => inbound.handle(req, res),
 *   close: () => workers.close(),
 * };
 * ```
 */
export interface DispatchExtension {
  hostedTools?: HostedToolRouter;
  messageRouter?: MessageRouter;
  handleUpgrade?(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  http?: HttpRouteExtension;
  /** `/readyz` answers 503 while this returns false. */
  isReady?(): boolean;
  close?(): Promise<void>;
}
