import { z } from "zod";
import { ImageContentSchema } from "./content";
import { IdSchema, JsonObjectSchema } from "./primitives";
import { ToolResultSchema } from "./tool-call";

/**
 * Timestamps on the wire are milliseconds since the Unix epoch.
 *
 * @example
 * ```ts
 * TimestampSchema.parse(Date.now());
 * ```
 */
export const TimestampSchema = z.number().int().nonnegative();

/**
 * A message in the conversation. An assistant message cut short by an interrupt keeps the text
 * that was streamed and has status `interrupted`.
 *
 * @example
 * ```ts
 * MessageItemSchema.parse({ type: "message", id: "m_1", role: "user", text: "Hi", createdAt: 0, status: "completed" });
 * ```
 */
export const MessageItemSchema = z.object({
  type: z.literal("message"),
  id: IdSchema,
  role: z.enum(["user", "assistant"]),
  text: z.string(),
  images: z.array(ImageContentSchema).optional(),
  status: z.enum(["in_progress", "completed", "interrupted", "failed"]),
  responseId: IdSchema.optional(),
  createdAt: TimestampSchema,
});

/** A message in the conversation. */
export type MessageItem = z.infer<typeof MessageItemSchema>;

/**
 * Where a tool runs: in the page that holds the session, in a dispatch worker that hosts the
 * agent's tools, or in the server process itself.
 *
 * @example
 * ```ts
 * ToolLocationSchema.parse("page");
 * ```
 */
export const ToolLocationSchema = z.enum(["page", "worker", "server"]);

/** Where a tool runs. */
export type ToolLocation = z.infer<typeof ToolLocationSchema>;

/**
 * The life of a tool call in the conversation. `withdrawn` is a call the model made that will
 * not run after all (its turn was interrupted before it started).
 *
 * @example
 * ```ts
 * ToolCallStatusSchema.parse("awaiting_approval");
 * ```
 */
export const ToolCallStatusSchema = z.enum([
  "pending",
  "awaiting_approval",
  "running",
  "completed",
  "failed",
  "cancelled",
  "declined",
  "timed_out",
  "withdrawn",
]);

/** The life of a tool call in the conversation. */
export type ToolCallStatus = z.infer<typeof ToolCallStatusSchema>;

/**
 * A tool call in the conversation, kept current as it runs.
 *
 * @example
 * ```ts
 * const item: ToolCallItem = {
 *   type: "tool_call", id: "call_V1StGXR8Z5jdHi6B", providerCallId: "call_0", name: "get_location", arguments: { reason: "weather" },
 *   location: "page", status: "running", held: false, attempt: 1, createdAt: 0,
 * };
 * ```
 */
export const ToolCallItemSchema = z.object({
  type: z.literal("tool_call"),
  /**
   * The call's id, minted by the server and unique across sessions: the idempotency key
   * everywhere (`tool.call`, `hosted.call`, a tool's `ctx.id`).
   */
  id: IdSchema,
  /**
   * The id the model provider gave the call, which only it needs back (tool results echo it).
   * Not unique: a provider may repeat it across sessions or turns, or leave it out (`call_<n>`).
   */
  providerCallId: z.string().min(1).optional(),
  name: z.string().min(1),
  arguments: JsonObjectSchema,
  location: ToolLocationSchema.optional(),
  displayTitle: z.string().optional(),
  status: ToolCallStatusSchema,
  progress: z.string().optional(),
  held: z.boolean(),
  attempt: z.number().int().positive(),
  result: ToolResultSchema.optional(),
  /**
   * A result that arrived after the call was settled without it: the place it ran did not
   * confirm a cancel within the grace (`result.error.code` is `cancel_unconfirmed`), or it
   * answered after the timeout. Recorded so the conversation shows what happened; the call is
   * never run again.
   */
  lateResult: ToolResultSchema.optional(),
  responseId: IdSchema.optional(),
  createdAt: TimestampSchema,
});

/** A tool call in the conversation, kept current as it runs. */
export type ToolCallItem = z.infer<typeof ToolCallItemSchema>;

/**
 * One item of a session's conversation.
 *
 * @example
 * ```ts
 * if (item.type === "tool_call") console.log(item.status);
 * ```
 */
export const ConversationItemSchema = z.discriminatedUnion("type", [MessageItemSchema, ToolCallItemSchema]);

/** One item of a session's conversation. */
export type ConversationItem = z.infer<typeof ConversationItemSchema>;

/**
 * A pending question to the user before a tool runs. `title` has its `{argument}` placeholders
 * filled; `reason` is the value of the tool's `reasonArgument`. `argumentsHash` binds the
 * approval to the exact arguments it was asked for.
 *
 * @example
 * ```ts
 * const request: ApprovalRequest = session.approvals[0]!;
 * session.decide(request.id, { allowed: true });
 * ```
 */
export const ApprovalRequestSchema = z.object({
  id: IdSchema,
  callId: IdSchema,
  tool: z.string().min(1),
  title: z.string(),
  reason: z.string().optional(),
  allowTitle: z.string(),
  declineTitle: z.string(),
  argumentsHash: z.string(),
  expiresAt: TimestampSchema,
});

/** A pending question to the user before a tool runs. */
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

/**
 * How an approval ended.
 *
 * @example
 * ```ts
 * ApprovalOutcomeSchema.parse("expired");
 * ```
 */
export const ApprovalOutcomeSchema = z.enum(["allowed", "declined", "expired", "cancelled"]);

/** How an approval ended. */
export type ApprovalOutcome = z.infer<typeof ApprovalOutcomeSchema>;

/**
 * A session as the server describes it.
 *
 * @example
 * ```ts
 * SessionInfoSchema.parse({ id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 });
 * ```
 */
export const SessionInfoSchema = z.object({
  id: IdSchema,
  agent: z.string().min(1),
  userId: IdSchema,
  metadata: JsonObjectSchema,
  createdAt: TimestampSchema,
  lastSeq: z.number().int().nonnegative(),
});

/** A session as the server describes it. */
export type SessionInfo = z.infer<typeof SessionInfoSchema>;
