// Over 400 lines on purpose: the 37 frame schemas of the client channel (/v1/client), each with
// its doc and example, and the two unions that decode them. The schema generator and the
// docs/protocol.md frame tables read them from here; one file per channel keeps them in one place.
import { z } from "zod";
import { ImageContentSchema } from "./content";
import {
  ApprovalOutcomeSchema,
  ApprovalRequestSchema,
  ConversationItemSchema,
  MessageItemSchema,
  SessionInfoSchema,
} from "./conversation";
import { IdSchema, JsonObjectSchema, SeqSchema, UserSchema, WireErrorSchema } from "./primitives";
import { ToolResultSchema } from "./tool-call";
import { ToolSpecSchema } from "./tool-spec";

// ---------------------------------------------------------------------------------------------
// Client -> server: what a session client (browser or backend) sends on `/v1/client`.
// ---------------------------------------------------------------------------------------------

/**
 * The first frame on a client socket. A browser authenticates with a user token its backend
 * minted; a backend with its API key (and may then act for any user).
 *
 * @example
 * ```ts
 * { type: "hello", protocol: 1, auth: { kind: "user", token } }
 * ```
 */
export const ClientHelloFrameSchema = z.object({
  type: z.literal("hello"),
  protocol: z.number().int().positive(),
  auth: z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("user"), token: z.string().min(1) }),
    z.object({ kind: z.literal("api_key"), apiKey: z.string().min(1), secret: z.string().min(1).optional() }),
  ]),
  client: z.object({ name: z.string(), version: z.string() }).optional(),
});

/**
 * Open a new session of an agent. `tools` are the tools that run in this page. `userId` is only
 * accepted from a connection authenticated with the API key.
 *
 * @example
 * ```ts
 * { type: "session.create", requestId: "r1", agent: "support", tools: [], metadata: {} }
 * ```
 */
export const SessionCreateFrameSchema = z.object({
  type: z.literal("session.create"),
  requestId: IdSchema,
  agent: z.string().min(1),
  userId: IdSchema.optional(),
  metadata: JsonObjectSchema.optional(),
  tools: z.array(ToolSpecSchema).default([]),
});

/**
 * Attach to an existing session. Every event with a sequence number above `afterSeq` is
 * replayed before live events flow.
 *
 * @example
 * ```ts
 * { type: "session.resume", requestId: "r2", sessionId: "s_1", afterSeq: 17, tools: [] }
 * ```
 */
export const SessionResumeFrameSchema = z.object({
  type: z.literal("session.resume"),
  requestId: IdSchema,
  sessionId: IdSchema,
  afterSeq: SeqSchema,
  tools: z.array(ToolSpecSchema).default([]),
});

/**
 * Detach this socket from a session (the session itself lives on).
 *
 * @example
 * ```ts
 * { type: "session.close", sessionId: "s_1" }
 * ```
 */
export const SessionCloseFrameSchema = z.object({
  type: z.literal("session.close"),
  requestId: IdSchema.optional(),
  sessionId: IdSchema,
});

/**
 * A user message. `commandId` is chosen by the client; a message sent again with the same
 * command id is not run twice.
 *
 * @example
 * ```ts
 * { type: "message.send", sessionId: "s_1", commandId: "c_1", text: "Where is my order?" }
 * ```
 */
export const MessageSendFrameSchema = z.object({
  type: z.literal("message.send"),
  sessionId: IdSchema,
  commandId: IdSchema,
  text: z.string().max(100_000),
  images: z.array(ImageContentSchema).max(16).optional(),
});

/**
 * Stop the running turn: interruptible tool calls that are not held are cancelled and the reply
 * stops streaming.
 *
 * @example
 * ```ts
 * { type: "interrupt", sessionId: "s_1", commandId: "c_2" }
 * ```
 */
export const InterruptFrameSchema = z.object({
  type: z.literal("interrupt"),
  sessionId: IdSchema,
  commandId: IdSchema,
});

/**
 * Replace the set of tools that run in this page for a session.
 *
 * @example
 * ```ts
 * { type: "tools.update", sessionId: "s_1", tools: [spec] }
 * ```
 */
export const ToolsUpdateFrameSchema = z.object({
  type: z.literal("tools.update"),
  sessionId: IdSchema,
  tools: z.array(ToolSpecSchema),
});

/**
 * A progress line from a running page tool (`ctx.update`). A newer one replaces an older one
 * that was not yet shown.
 *
 * @example
 * ```ts
 * { type: "tool.progress", sessionId: "s_1", callId: "call_1", text: "Checking seats" }
 * ```
 */
export const ClientToolProgressFrameSchema = z.object({
  type: z.literal("tool.progress"),
  sessionId: IdSchema,
  callId: IdSchema,
  text: z.string().max(10_000),
});

/**
 * Exact words a running page tool wants said (`ctx.say`).
 *
 * @example
 * ```ts
 * { type: "tool.say", sessionId: "s_1", callId: "call_1", text: "One moment." }
 * ```
 */
export const ClientToolSayFrameSchema = z.object({
  type: z.literal("tool.say"),
  sessionId: IdSchema,
  callId: IdSchema,
  text: z.string().max(10_000),
});

/**
 * A running page tool asks to disallow interruptions (`ctx.disallowInterruptions()`), for the
 * delivery `attempt` it runs (left out by older pages: the latest delivery). The server answers
 * `tool.hold.ack`; only once that says `accepted: true` is the call held, and from then on only
 * its timeout cancels it.
 *
 * @example
 * ```ts
 * { type: "tool.hold", sessionId: "s_1", callId: "call_1", attempt: 1 }
 * ```
 */
export const ClientToolHoldFrameSchema = z.object({
  type: z.literal("tool.hold"),
  sessionId: IdSchema,
  callId: IdSchema,
  attempt: z.number().int().positive().optional(),
});

/**
 * A page tool whose approval is conditional (`approval.conditional`) decided that this call asks
 * the user: the server asks (`approval.requested`, bound to the call id and its arguments hash,
 * as for any approval) and answers `tool.approval.ack` with how the question ended. The call runs
 * only on `allowed`. Asked again for a later delivery of the same call, it gets the same
 * question (or its outcome), never a second one.
 *
 * @example
 * ```ts
 * { type: "tool.approval", sessionId: "s_1", callId: "call_1", attempt: 1 }
 * ```
 */
export const ClientToolApprovalFrameSchema = z.object({
  type: z.literal("tool.approval"),
  sessionId: IdSchema,
  callId: IdSchema,
  attempt: z.number().int().positive(),
});

/**
 * The result of a page tool call. `attempt` echoes the delivery it answers.
 *
 * @example
 * ```ts
 * { type: "tool.result", sessionId: "s_1", callId: "call_1", attempt: 1, result }
 * ```
 */
export const ClientToolResultFrameSchema = z.object({
  type: z.literal("tool.result"),
  sessionId: IdSchema,
  callId: IdSchema,
  attempt: z.number().int().positive(),
  result: ToolResultSchema,
});

/**
 * The user's answer to an approval request.
 *
 * @example
 * ```ts
 * { type: "approval.decide", sessionId: "s_1", approvalId: "ap_1", allowed: true }
 * ```
 */
export const ApprovalDecideFrameSchema = z.object({
  type: z.literal("approval.decide"),
  sessionId: IdSchema,
  approvalId: IdSchema,
  allowed: z.boolean(),
  /** With `allowed: false`: why the user declined, in their words; the model is told it. */
  reason: z.string().max(1_000).optional(),
});

/**
 * Heartbeat, on both sockets and in both directions: a `ping` is answered by a `pong` with the
 * same `nonce`.
 *
 * @example
 * ```ts
 * { type: "ping", nonce: "7" }
 * ```
 */
export const PingFrameSchema = z.object({ type: z.literal("ping"), nonce: z.string().max(64).optional() });

/**
 * The answer to a `ping`.
 *
 * @example
 * ```ts
 * { type: "pong", nonce: "7" }
 * ```
 */
export const PongFrameSchema = z.object({ type: z.literal("pong"), nonce: z.string().max(64).optional() });

/**
 * Every frame a session client may send.
 *
 * @example
 * ```ts
 * const frame: ClientToServerFrame = { type: "interrupt", sessionId, commandId };
 * ```
 */
export const ClientToServerFrameSchema = z.discriminatedUnion("type", [
  ClientHelloFrameSchema,
  SessionCreateFrameSchema,
  SessionResumeFrameSchema,
  SessionCloseFrameSchema,
  MessageSendFrameSchema,
  InterruptFrameSchema,
  ToolsUpdateFrameSchema,
  ClientToolProgressFrameSchema,
  ClientToolSayFrameSchema,
  ClientToolHoldFrameSchema,
  ClientToolApprovalFrameSchema,
  ClientToolResultFrameSchema,
  ApprovalDecideFrameSchema,
  PingFrameSchema,
  PongFrameSchema,
]);

/** Every frame a session client may send. */
export type ClientToServerFrame = z.infer<typeof ClientToServerFrameSchema>;

// ---------------------------------------------------------------------------------------------
// Server -> client.
// ---------------------------------------------------------------------------------------------

/**
 * The server's answer to `hello`: the connection is authenticated.
 *
 * @example
 * ```ts
 * { type: "welcome", protocol: 1, connectionId: "k_1", user: { id: "u_1" }, heartbeatIntervalMs: 15000, maxFrameBytes: 5242880 }
 * ```
 */
export const WelcomeFrameSchema = z.object({
  type: z.literal("welcome"),
  protocol: z.number().int().positive(),
  connectionId: IdSchema,
  user: UserSchema.nullable(),
  heartbeatIntervalMs: z.number().int().positive(),
  maxFrameBytes: z.number().int().positive(),
  /** The size limit of a `tool.result` frame. Servers that leave it out take `maxFrameBytes`. */
  maxResultFrameBytes: z.number().int().positive().optional(),
});

/**
 * The answer to `session.create` and `session.resume`: the session is attached to this socket.
 * For a resume, replayed events follow this frame, then live ones.
 *
 * @example
 * ```ts
 * { type: "session.opened", requestId: "r1", session }
 * ```
 */
export const SessionOpenedFrameSchema = z.object({
  type: z.literal("session.opened"),
  requestId: IdSchema,
  session: SessionInfoSchema,
});

/**
 * An error. With `requestId` or `commandId` it answers that request; with `sessionId` it
 * concerns that session; with neither it concerns the connection.
 *
 * @example
 * ```ts
 * { type: "error", code: "invalid_frame", message: "text: Expected string", path: "text" }
 * ```
 */
export const ErrorFrameSchema = z.object({
  type: z.literal("error"),
  ...WireErrorSchema.shape,
  requestId: IdSchema.optional(),
  commandId: IdSchema.optional(),
  sessionId: IdSchema.optional(),
  retryAfterMs: z.number().int().nonnegative().optional(),
});

/**
 * The server's answer to `tool.hold`, to the socket that sent it: whether the call is now held.
 * Refused (`accepted: false`) when a cancel of the call is already under way
 * (`reason: "cancelling"`), the call has ended (`"settled"`), the server does not know it
 * (`"unknown_call"`) or the hold names an older delivery (`"stale_attempt"`).
 *
 * @example
 * ```ts
 * { type: "tool.hold.ack", sessionId: "s_1", callId: "call_1", attempt: 1, accepted: true }
 * ```
 */
export const ToolHoldAckFrameSchema = z.object({
  type: z.literal("tool.hold.ack"),
  sessionId: IdSchema,
  callId: IdSchema,
  attempt: z.number().int().positive(),
  accepted: z.boolean(),
  reason: z.string().max(1_000).optional(),
});

/**
 * How a conditional approval a call asked for ended (see `ApprovalAckOutcomeSchema`): the answer
 * to `tool.approval` / `hosted.approval`, for the delivery `attempt` that asked.
 *
 * @example
 * ```ts
 * ApprovalAckOutcomeSchema.parse("allowed");
 * ```
 */
export const ApprovalAckOutcomeSchema = z.enum(["allowed", "declined", "expired", "cancelled"]);

/**
 * The server's answer to `tool.approval`, to the socket that asked: how the question ended. The
 * call runs only on `allowed`; the model was told already of any other outcome. `reason` says why
 * the server would not ask at all (`settled`, `unknown_call`, `stale_attempt`, outcome
 * `cancelled`).
 *
 * @example
 * ```ts
 * { type: "tool.approval.ack", sessionId: "s_1", callId: "call_1", attempt: 1, outcome: "allowed" }
 * ```
 */
export const ToolApprovalAckFrameSchema = z.object({
  type: z.literal("tool.approval.ack"),
  sessionId: IdSchema,
  callId: IdSchema,
  attempt: z.number().int().positive(),
  outcome: ApprovalAckOutcomeSchema,
  reason: z.string().max(1_000).optional(),
});

const sessionEvent = {
  sessionId: IdSchema,
  /** Per-session sequence number, strictly increasing by one. */
  seq: z.number().int().positive(),
};

/**
 * A user message was added to the conversation.
 *
 * @example
 * ```ts
 * { type: "message.created", sessionId, seq, commandId: "c_1", item }
 * ```
 */
export const MessageCreatedEventSchema = z.object({
  type: z.literal("message.created"),
  ...sessionEvent,
  commandId: IdSchema.optional(),
  item: MessageItemSchema,
});

/**
 * The agent started working on a reply to a message.
 *
 * @example
 * ```ts
 * { type: "response.started", sessionId, seq, responseId: "r_1", commandId: "c_1" }
 * ```
 */
export const ResponseStartedEventSchema = z.object({
  type: z.literal("response.started"),
  ...sessionEvent,
  responseId: IdSchema,
  commandId: IdSchema.optional(),
});

/**
 * The agent is thinking: the message went to a dispatch worker first and the model has not
 * started yet.
 *
 * @example
 * ```ts
 * { type: "response.thinking", sessionId, seq, responseId: "r_1", reason: "dispatch" }
 * ```
 */
export const ResponseThinkingEventSchema = z.object({
  type: z.literal("response.thinking"),
  ...sessionEvent,
  responseId: IdSchema,
  reason: z.enum(["dispatch", "model"]),
});

/**
 * A piece of assistant text as the model streams it.
 *
 * @example
 * ```ts
 * { type: "text.delta", sessionId, seq, responseId: "r_1", itemId: "m_2", delta: "Hel" }
 * ```
 */
export const TextDeltaEventSchema = z.object({
  type: z.literal("text.delta"),
  ...sessionEvent,
  responseId: IdSchema,
  itemId: IdSchema,
  delta: z.string(),
});

/**
 * An assistant message is complete (or was cut short by an interrupt: status `interrupted`).
 *
 * @example
 * ```ts
 * { type: "message.completed", sessionId, seq, item }
 * ```
 */
export const MessageCompletedEventSchema = z.object({
  type: z.literal("message.completed"),
  ...sessionEvent,
  item: MessageItemSchema,
});

/**
 * A conversation item was added or changed (a tool call's status, progress or result). The item
 * is sent whole; the receiver replaces its copy with the same id.
 *
 * @example
 * ```ts
 * { type: "conversation.updated", sessionId, seq, item }
 * ```
 */
export const ConversationUpdatedEventSchema = z.object({
  type: z.literal("conversation.updated"),
  ...sessionEvent,
  item: ConversationItemSchema,
});

/**
 * Run this tool in the page. `attempt` is 1 on first delivery and grows when the same call is
 * delivered again (after a reconnect); the page answers with `tool.result`.
 *
 * @example
 * ```ts
 * { type: "tool.call", sessionId, seq, call: { id: "call_1", name: "get_location", arguments: {} }, attempt: 1, timeoutMs: 30000 }
 * ```
 */
export const ToolCallEventSchema = z.object({
  type: z.literal("tool.call"),
  ...sessionEvent,
  call: z.object({ id: IdSchema, name: z.string().min(1), arguments: JsonObjectSchema }),
  attempt: z.number().int().positive(),
  timeoutMs: z.number().int().positive(),
  user: UserSchema,
});

/**
 * Asks the page to stop a page tool call: the turn was interrupted, the call timed out, or the
 * session ended. A request: the page answers with the `tool.result` of that attempt (cancelled,
 * or its real result when the call finished or is held). `timed_out` stops held calls too.
 *
 * @example
 * ```ts
 * { type: "tool.cancel", sessionId, seq, callId: "call_1", reason: "interrupted", attempt: 1 }
 * ```
 */
export const ToolCancelEventSchema = z.object({
  type: z.literal("tool.cancel"),
  ...sessionEvent,
  callId: IdSchema,
  reason: z.enum(["interrupted", "timed_out", "session_closed"]),
  attempt: z.number().int().positive().optional(),
});

/**
 * Progress of any tool call (page, worker or server), relayed to the page.
 *
 * @example
 * ```ts
 * { type: "tool.progress", sessionId, seq, callId: "call_1", text: "Checking seats" }
 * ```
 */
export const ToolProgressEventSchema = z.object({
  type: z.literal("tool.progress"),
  ...sessionEvent,
  callId: IdSchema,
  text: z.string(),
});

/**
 * Exact words a tool asked to have said.
 *
 * @example
 * ```ts
 * { type: "tool.say", sessionId, seq, callId: "call_1", text: "Your booking is in." }
 * ```
 */
export const ToolSayEventSchema = z.object({
  type: z.literal("tool.say"),
  ...sessionEvent,
  callId: IdSchema,
  text: z.string(),
});

/**
 * A tool call is held: interrupts no longer cancel it.
 *
 * @example
 * ```ts
 * { type: "tool.held", sessionId, seq, callId: "call_1" }
 * ```
 */
export const ToolHeldEventSchema = z.object({
  type: z.literal("tool.held"),
  ...sessionEvent,
  callId: IdSchema,
});

/**
 * A tool wants the user's approval before it runs.
 *
 * @example
 * ```ts
 * { type: "approval.requested", sessionId, seq, approval }
 * ```
 */
export const ApprovalRequestedEventSchema = z.object({
  type: z.literal("approval.requested"),
  ...sessionEvent,
  approval: ApprovalRequestSchema,
});

/**
 * An approval was answered, expired, or cancelled (its turn was interrupted).
 *
 * @example
 * ```ts
 * { type: "approval.resolved", sessionId, seq, approvalId: "ap_1", callId: "call_1", outcome: "allowed" }
 * ```
 */
export const ApprovalResolvedEventSchema = z.object({
  type: z.literal("approval.resolved"),
  ...sessionEvent,
  approvalId: IdSchema,
  callId: IdSchema,
  outcome: ApprovalOutcomeSchema,
});

/**
 * Token usage of a model reply.
 *
 * @example
 * ```ts
 * UsageSchema.parse({ inputTokens: 120, outputTokens: 14 });
 * ```
 */
export const UsageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
});

/** Token usage of a model reply. */
export type Usage = z.infer<typeof UsageSchema>;

/**
 * The agent finished a reply. `reason` says why it stopped; `text` is the final assistant text.
 * `refusal`: the model declined to answer, and `text` is its refusal, meant for the user.
 *
 * @example
 * ```ts
 * { type: "response.completed", sessionId, seq, responseId: "r_1", reason: "stop", text: "Done." }
 * ```
 */
export const ResponseCompletedEventSchema = z.object({
  type: z.literal("response.completed"),
  ...sessionEvent,
  responseId: IdSchema,
  commandId: IdSchema.optional(),
  reason: z.enum(["stop", "interrupted", "max_rounds", "answered_by_worker", "refusal"]),
  text: z.string(),
  usage: UsageSchema.optional(),
});

/**
 * The agent could not finish a reply (a model error, a dropped message). The conversation stays
 * whole and the next message works.
 *
 * @example
 * ```ts
 * { type: "response.failed", sessionId, seq, responseId: "r_1", error: { code: "rate_limited", message: "..." } }
 * ```
 */
export const ResponseFailedEventSchema = z.object({
  type: z.literal("response.failed"),
  ...sessionEvent,
  responseId: IdSchema,
  commandId: IdSchema.optional(),
  error: WireErrorSchema,
});

/**
 * Every event of a session: frames the server sends with a `seq`, stored in the session's event
 * log and replayed on resume.
 *
 * @example
 * ```ts
 * if (frame.type === "text.delta") process.stdout.write(frame.delta);
 * ```
 */
export const SessionEventSchema = z.discriminatedUnion("type", [
  MessageCreatedEventSchema,
  ResponseStartedEventSchema,
  ResponseThinkingEventSchema,
  TextDeltaEventSchema,
  MessageCompletedEventSchema,
  ConversationUpdatedEventSchema,
  ToolCallEventSchema,
  ToolCancelEventSchema,
  ToolProgressEventSchema,
  ToolSayEventSchema,
  ToolHeldEventSchema,
  ApprovalRequestedEventSchema,
  ApprovalResolvedEventSchema,
  ResponseCompletedEventSchema,
  ResponseFailedEventSchema,
]);

/** Every event of a session. */
export type SessionEvent = z.infer<typeof SessionEventSchema>;

/**
 * The session event types, for code that switches on them.
 *
 * @example
 * ```ts
 * SESSION_EVENT_TYPES.includes(frame.type);
 * ```
 */
export const SESSION_EVENT_TYPES = SessionEventSchema.options.map((o) => o.shape.type.value);

/**
 * Every frame the server may send to a session client.
 *
 * @example
 * ```ts
 * const result = decodeFrame(text, { channel: "server-to-client" });
 * ```
 */
export const ServerToClientFrameSchema = z.discriminatedUnion("type", [
  WelcomeFrameSchema,
  SessionOpenedFrameSchema,
  ErrorFrameSchema,
  ToolHoldAckFrameSchema,
  ToolApprovalAckFrameSchema,
  PongFrameSchema,
  PingFrameSchema,
  ...SessionEventSchema.options,
]);

/** Every frame the server may send to a session client. */
export type ServerToClientFrame = z.infer<typeof ServerToClientFrameSchema>;
