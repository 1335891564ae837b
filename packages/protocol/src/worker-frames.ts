import { z } from "zod";
import {
  ApprovalAckOutcomeSchema,
  ErrorFrameSchema,
  PingFrameSchema,
  PongFrameSchema,
} from "./client-frames";
import { ConversationItemSchema, TimestampSchema } from "./conversation";
import { IdSchema, JsonObjectSchema, UserSchema, WireErrorSchema } from "./primitives";
import { ToolResultSchema } from "./tool-call";
import { ToolSpecSchema } from "./tool-spec";
import { MAX_CACHED_CONVERSATION_BYTES, MAX_CACHED_CONVERSATIONS, MIN_WORKER_RECEIVE_BYTES } from "./version";

// ---------------------------------------------------------------------------------------------
// Worker -> server: what a dispatch worker sends on `/v1/worker`.
// ---------------------------------------------------------------------------------------------

/**
 * The tools a worker hosts for one agent, and how long the server waits for one call.
 *
 * @example
 * ```ts
 * { agent: "support", tools: [spec], toolTimeoutMs: 60000 }
 * ```
 */
export const HostedAgentSchema = z.object({
  agent: z.string().min(1),
  tools: z.array(ToolSpecSchema),
  toolTimeoutMs: z.number().int().positive().optional(),
});

/** The tools a worker hosts for one agent. */
export type HostedAgent = z.infer<typeof HostedAgentSchema>;

/**
 * The first frame on a worker socket. `workerId` is stable across reconnects; `running` lists
 * the work and hosted calls the worker still runs from before a reconnect, so the server neither
 * hands them out again nor counts them free.
 *
 * @example
 * ```ts
 * { type: "worker.hello", protocol: 1, apiKey, workerId: "w_1", capacity: 8,
 *   handles: { messages: true, calls: false }, hosts: [], running: { work: [], calls: [] } }
 * ```
 */
export const WorkerHelloFrameSchema = z.object({
  type: z.literal("worker.hello"),
  protocol: z.number().int().positive(),
  apiKey: z.string().min(1),
  secret: z.string().min(1).optional(),
  workerId: IdSchema,
  capacity: z.number().int().nonnegative(),
  handles: z.object({ messages: z.boolean(), calls: z.boolean() }),
  hosts: z.array(HostedAgentSchema).default([]),
  running: z.object({ work: z.array(IdSchema), calls: z.array(IdSchema) }).default({ work: [], calls: [] }),
  /**
   * The largest frame this worker accepts, in UTF-8 bytes (its WebSocket's receive limit). The
   * server never sends it a larger frame. 1 MiB when absent.
   */
  maxFrameBytes: z.number().int().min(MIN_WORKER_RECEIVE_BYTES).optional(),
  /**
   * Asks the server to send each conversation item once on this connection: the worker keeps the
   * recent conversation of at most `sessions` sessions and `bytes` bytes of items (as JSON) between
   * calls, and a `hosted.call` then carries only the items new or changed since the session's last
   * call here (`conversationIds`). The server decides what is kept: it never asks for more, and
   * `forgetSessions` says what to drop. Absent: every call carries its conversation whole.
   */
  conversationCache: z
    .object({
      sessions: z.number().int().min(1).max(MAX_CACHED_CONVERSATIONS),
      bytes: z.number().int().min(0).max(MAX_CACHED_CONVERSATION_BYTES),
    })
    .optional(),
});

/**
 * The worker took an offered piece of work.
 *
 * @example
 * ```ts
 * { type: "work.accepted", workId: "wk_1" }
 * ```
 */
export const WorkAcceptedFrameSchema = z.object({ type: z.literal("work.accepted"), workId: IdSchema });

/**
 * The worker finished a piece of work, with the error if its handler failed.
 *
 * @example
 * ```ts
 * { type: "work.done", workId: "wk_1" }
 * ```
 */
export const WorkDoneFrameSchema = z.object({
  type: z.literal("work.done"),
  workId: IdSchema,
  error: WireErrorSchema.optional(),
});

/**
 * Let the model reply to a message that was sent to the worker first (`dispatch.text: enabled`).
 *
 * @example
 * ```ts
 * { type: "answer", workId: "wk_1", sessionId: "s_1", messageId: "m_1" }
 * ```
 */
export const AnswerFrameSchema = z.object({
  type: z.literal("answer"),
  workId: IdSchema.optional(),
  sessionId: IdSchema,
  messageId: IdSchema,
});

/**
 * Progress of a hosted tool call.
 *
 * @example
 * ```ts
 * { type: "hosted.progress", callId: "call_1", text: "Looking it up" }
 * ```
 */
export const HostedProgressFrameSchema = z.object({
  type: z.literal("hosted.progress"),
  callId: IdSchema,
  text: z.string().max(10_000),
});

/**
 * Exact words a hosted tool wants said.
 *
 * @example
 * ```ts
 * { type: "hosted.say", callId: "call_1", text: "One moment." }
 * ```
 */
export const HostedSayFrameSchema = z.object({
  type: z.literal("hosted.say"),
  callId: IdSchema,
  text: z.string().max(10_000),
});

/**
 * A hosted tool call asks to disallow interruptions, for the delivery `attempt` it runs (left out
 * by older workers: the server then takes the latest delivery). The server answers
 * `hosted.hold.ack`; the call is held only once that says `accepted: true`.
 *
 * @example
 * ```ts
 * { type: "hosted.hold", callId: "call_1", attempt: 1 }
 * ```
 */
export const HostedHoldFrameSchema = z.object({
  type: z.literal("hosted.hold"),
  callId: IdSchema,
  attempt: z.number().int().positive().optional(),
});

/**
 * A hosted tool whose approval is conditional (`approval.conditional`) decided that this call
 * asks the user: the server asks (bound to the call id and its arguments hash) and answers
 * `hosted.approval.ack`. The call runs only on `allowed`. A later delivery of the same call that
 * asks again gets the same question (or its outcome), never a second one.
 *
 * @example
 * ```ts
 * { type: "hosted.approval", callId: "call_1", attempt: 1 }
 * ```
 */
export const HostedApprovalFrameSchema = z.object({
  type: z.literal("hosted.approval"),
  callId: IdSchema,
  attempt: z.number().int().positive(),
});

/**
 * The result of a hosted tool call, for the delivery `attempt` it answers.
 *
 * @example
 * ```ts
 * { type: "hosted.result", callId: "call_1", attempt: 1, result }
 * ```
 */
export const HostedResultFrameSchema = z.object({
  type: z.literal("hosted.result"),
  callId: IdSchema,
  attempt: z.number().int().positive(),
  result: ToolResultSchema,
});

/**
 * How busy the worker is, sent when it changes.
 *
 * @example
 * ```ts
 * { type: "load", active: 3, capacity: 8 }
 * ```
 */
export const LoadFrameSchema = z.object({
  type: z.literal("load"),
  active: z.number().int().nonnegative(),
  capacity: z.number().int().nonnegative(),
});

/**
 * The tools the worker hosts changed after its hello (a tool registered or an agent hosted after
 * the worker started): the whole list again, which replaces the hello's `hosts`.
 *
 * @example
 * ```ts
 * { type: "worker.hosts", hosts: [{ agent: "support", tools: [spec] }] }
 * ```
 */
export const WorkerHostsFrameSchema = z.object({
  type: z.literal("worker.hosts"),
  hosts: z.array(HostedAgentSchema),
});

/**
 * Every frame a dispatch worker may send.
 *
 * @example
 * ```ts
 * const frame: WorkerToServerFrame = { type: "work.done", workId };
 * ```
 */
export const WorkerToServerFrameSchema = z.discriminatedUnion("type", [
  WorkerHelloFrameSchema,
  WorkAcceptedFrameSchema,
  WorkDoneFrameSchema,
  AnswerFrameSchema,
  HostedProgressFrameSchema,
  HostedSayFrameSchema,
  HostedHoldFrameSchema,
  HostedApprovalFrameSchema,
  HostedResultFrameSchema,
  LoadFrameSchema,
  WorkerHostsFrameSchema,
  PingFrameSchema,
  PongFrameSchema,
]);

/** Every frame a dispatch worker may send. */
export type WorkerToServerFrame = z.infer<typeof WorkerToServerFrameSchema>;

// ---------------------------------------------------------------------------------------------
// Server -> worker.
// ---------------------------------------------------------------------------------------------

/**
 * The server's answer to `worker.hello`.
 *
 * @example
 * ```ts
 * { type: "worker.ready", workerId: "w_1", heartbeatIntervalMs: 15000 }
 * ```
 */
export const WorkerReadyFrameSchema = z.object({
  type: z.literal("worker.ready"),
  protocol: z.number().int().positive(),
  workerId: IdSchema,
  heartbeatIntervalMs: z.number().int().positive(),
  maxFrameBytes: z.number().int().positive(),
  /** The size limit of a `hosted.result` frame. Servers that leave it out take `maxFrameBytes`. */
  maxResultFrameBytes: z.number().int().positive().optional(),
});

/**
 * A message for a worker: from a session whose agent has `dispatch.text: enabled` (then
 * `sessionId` is set and `answer` lets the model reply), or from a channel with no session yet.
 *
 * @example
 * ```ts
 * { id: "m_1", agent: "support", sessionId: "s_1", channel: null, user: { id: "u_1" }, text: "Hi", createdAt: 0, metadata: {} }
 * ```
 */
export const InboundMessageSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1),
  sessionId: IdSchema.nullable(),
  channel: z.object({ type: z.string().min(1), id: IdSchema }).nullable(),
  user: UserSchema,
  text: z.string(),
  createdAt: TimestampSchema,
  metadata: JsonObjectSchema,
});

/** A message for a worker. */
export type InboundMessage = z.infer<typeof InboundMessageSchema>;

/**
 * An incoming phone call for a worker (audio is out of scope: this is the call's signalling).
 *
 * @example
 * ```ts
 * { id: "pc_1", agent: "support", from: "+15550100", to: "+15550199", customData: {}, createdAt: 0 }
 * ```
 */
export const InboundCallSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1),
  from: z.string().min(1),
  to: z.string().min(1),
  customData: JsonObjectSchema,
  createdAt: TimestampSchema,
});

/** An incoming phone call for a worker. */
export type InboundCall = z.infer<typeof InboundCallSchema>;

/**
 * Work offered to a worker. The worker's slot is reserved when this is sent; the worker answers
 * `work.accepted`, then `work.done`.
 *
 * @example
 * ```ts
 * { type: "work.offered", workId: "wk_1", attempt: 1, work: { kind: "message", message } }
 * ```
 */
export const WorkOfferedFrameSchema = z.object({
  type: z.literal("work.offered"),
  workId: IdSchema,
  attempt: z.number().int().positive(),
  work: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("message"), message: InboundMessageSchema }),
    z.object({ kind: z.literal("call"), call: InboundCallSchema }),
  ]),
});

/**
 * Run a hosted tool. The same `callId` with a higher `attempt` is a redelivery of the same call
 * (its previous worker went away); the call id is the idempotency key throughout.
 *
 * @example
 * ```ts
 * { type: "hosted.call", callId: "call_1", attempt: 1, agent: "support", sessionId: "s_1",
 *   tool: "lookup_order", arguments: { order_id: "A1" }, user: { id: "u_1" }, conversation: [], timeoutMs: 30000 }
 * ```
 */
export const HostedCallFrameSchema = z.object({
  type: z.literal("hosted.call"),
  callId: IdSchema,
  attempt: z.number().int().positive(),
  agent: z.string().min(1),
  sessionId: IdSchema,
  tool: z.string().min(1),
  arguments: JsonObjectSchema,
  user: UserSchema,
  conversation: z.array(ConversationItemSchema),
  timeoutMs: z.number().int().positive(),
  /**
   * True when the server left inline images or the oldest items out of `conversation` so the
   * frame fits the worker's `maxFrameBytes`. Absent otherwise.
   */
  conversationTrimmed: z.boolean().optional(),
  /**
   * Present only for a worker that declared `worker.hello.conversationCache`: the ids of the whole
   * conversation, oldest first. `conversation` then carries only the items new or changed since
   * the session's last `hosted.call` on this connection; every other id is an item the worker
   * kept. The worker then keeps exactly these items for the session. A `hosted.call` without it
   * carries the conversation whole, and the worker drops what it kept of the session.
   */
  conversationIds: z.array(IdSchema).optional(),
  /** Sessions whose kept conversation the worker drops before it reads this frame's. */
  forgetSessions: z.array(IdSchema).optional(),
});

/**
 * Why a server refused a hold (`hosted.hold.ack` / `tool.hold.ack` with `accepted: false`). The
 * frames carry `reason` as a string, so a newer server may give a reason not listed here.
 *
 * @example
 * ```ts
 * if (!ack.accepted && ack.reason === "cancelling") signal.throwIfAborted();
 * ```
 */
export const HOLD_REFUSAL_REASONS = ["cancelling", "settled", "unknown_call", "stale_attempt"] as const;

/** Why a server refused a hold. */
export type HoldRefusalReason = (typeof HOLD_REFUSAL_REASONS)[number];

/**
 * The server's answer to `hosted.hold`: whether the call is now held (an interrupt no longer
 * cancels it; only its timeout does). Refused (`accepted: false`) when a cancel of the call is
 * already under way (`reason: "cancelling"`), the call has ended (`"settled"`), the server does
 * not know it (`"unknown_call"`) or the hold names an older delivery (`"stale_attempt"`).
 *
 * @example
 * ```ts
 * { type: "hosted.hold.ack", callId: "call_1", attempt: 1, accepted: false, reason: "cancelling" }
 * ```
 */
export const HostedHoldAckFrameSchema = z.object({
  type: z.literal("hosted.hold.ack"),
  callId: IdSchema,
  attempt: z.number().int().positive(),
  accepted: z.boolean(),
  reason: z.string().max(1_000).optional(),
});

/**
 * The server's answer to `hosted.approval`: how the question ended, for the delivery `attempt`
 * that asked. The call runs only on `allowed`. `reason` says why the server would not ask at all
 * (`settled`, `unknown_call`, `stale_attempt`, outcome `cancelled`).
 *
 * @example
 * ```ts
 * { type: "hosted.approval.ack", callId: "call_1", attempt: 1, outcome: "declined" }
 * ```
 */
export const HostedApprovalAckFrameSchema = z.object({
  type: z.literal("hosted.approval.ack"),
  callId: IdSchema,
  attempt: z.number().int().positive(),
  outcome: ApprovalAckOutcomeSchema,
  reason: z.string().max(1_000).optional(),
});

/**
 * Asks the worker to stop a hosted tool call (an interrupt, the server's timeout, the session
 * closing). A request, not a verdict: the worker answers with the `hosted.result` of that
 * attempt, a cancelled result or, when the call finished or is held, its real one. `timed_out`
 * stops held calls too. `attempt` names the delivery (left out by older servers).
 *
 * @example
 * ```ts
 * { type: "hosted.cancel", callId: "call_1", reason: "interrupted", attempt: 1 }
 * ```
 */
export const HostedCancelFrameSchema = z.object({
  type: z.literal("hosted.cancel"),
  callId: IdSchema,
  reason: z.enum(["interrupted", "timed_out", "session_closed"]),
  attempt: z.number().int().positive().optional(),
});

/**
 * Every frame the server may send to a dispatch worker.
 *
 * @example
 * ```ts
 * const result = decodeFrame(text, { channel: "server-to-worker" });
 * ```
 */
export const ServerToWorkerFrameSchema = z.discriminatedUnion("type", [
  WorkerReadyFrameSchema,
  WorkOfferedFrameSchema,
  HostedCallFrameSchema,
  HostedCancelFrameSchema,
  HostedHoldAckFrameSchema,
  HostedApprovalAckFrameSchema,
  ErrorFrameSchema,
  PingFrameSchema,
  PongFrameSchema,
]);

/** Every frame the server may send to a dispatch worker. */
export type ServerToWorkerFrame = z.infer<typeof ServerToWorkerFrameSchema>;
