import { z } from "zod";
import { ConversationItemSchema } from "./conversation";
import { ToolOutcomeSchema } from "./tool-call";

// The two frames of every hosted tool call, `hosted.call` (server -> worker) and `hosted.result`
// (worker -> server), checked in place: a frame that is exactly what its zod schema would give
// back (no unknown field anywhere, no default to fill in) is handed on as JSON.parse made it,
// without the copy of every object zod's parse makes. Anything else (an unknown field, a result
// with images, a field that does not fit) is `undefined`, and `decodeFrame` asks zod, whose
// answer (the copy, or the issues naming the wrong field) is then the decoder's. The rules are
// those of `HostedCallFrameSchema` and `HostedResultFrameSchema` (worker-frames.ts, tool-call.ts,
// primitives.ts); hosted-frame-checks.test.ts keeps them in step over the shared vectors and
// their mutations. A conversation that is not empty is parsed by zod alone (its items' schema).

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `IdSchema`: a string of 1 to 256 code units. */
const isId = (value: unknown): boolean =>
  typeof value === "string" && value.length >= 1 && value.length <= 256;

/** `z.number().int().positive()`. */
const isPositive = (value: unknown): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 1;

/** Whether every own key of `value` is one of `keys` (a key zod would drop makes a copy). */
function onlyKeys(value: Json, keys: ReadonlySet<string>): boolean {
  for (const key in value) if (!keys.has(key)) return false;
  return true;
}

const RESULT_FRAME_KEYS = new Set(["type", "callId", "attempt", "result"]);
const RESULT_KEYS = new Set(["outcome", "content", "error", "held"]);
const CONTENT_KEYS = new Set(["text", "images"]);
const ERROR_KEYS = new Set(["code", "message", "path"]);
/** The outcomes as `ToolOutcomeSchema` owns them (this module holds zod already). */
const OUTCOMES = new Set<string>(ToolOutcomeSchema.options);

/** A `ToolResult` without images, as `ToolResultSchema` returns it unchanged. */
function isPlainToolResult(result: unknown): boolean {
  if (!isObject(result) || !onlyKeys(result, RESULT_KEYS)) return false;
  if (typeof result.outcome !== "string" || !OUTCOMES.has(result.outcome)) return false;
  const content = result.content;
  if (!isObject(content) || !onlyKeys(content, CONTENT_KEYS)) return false;
  // Images are left to zod (rarer, and each is one of two shapes); absent ones it fills in.
  if (typeof content.text !== "string" || !Array.isArray(content.images) || content.images.length > 0)
    return false;
  const error = result.error;
  if (error !== undefined) {
    if (!isObject(error) || !onlyKeys(error, ERROR_KEYS)) return false;
    if (typeof error.code !== "string" || error.code.length === 0 || typeof error.message !== "string")
      return false;
    if (error.path !== undefined && typeof error.path !== "string") return false;
  }
  return result.held === undefined || typeof result.held === "boolean";
}

/**
 * The parsed `hosted.result` frame itself when `HostedResultFrameSchema` would return it
 * unchanged, else `undefined` (ask zod).
 */
export function checkedHostedResult(value: Json): Json | undefined {
  if (!onlyKeys(value, RESULT_FRAME_KEYS) || value.type !== "hosted.result") return undefined;
  if (!isId(value.callId) || !isPositive(value.attempt)) return undefined;
  return isPlainToolResult(value.result) ? value : undefined;
}

const CALL_FRAME_KEYS = new Set([
  "type",
  "callId",
  "attempt",
  "agent",
  "sessionId",
  "tool",
  "arguments",
  "user",
  "conversation",
  "timeoutMs",
  "conversationTrimmed",
]);
const USER_KEYS = new Set(["id", "name"]);
const Conversation = z.array(ConversationItemSchema);

/**
 * The parsed `hosted.call` frame itself when `HostedCallFrameSchema` would return it unchanged
 * (its conversation replaced by zod's parse of it when it has items), else `undefined` (ask zod).
 */
export function checkedHostedCall(value: Json): Json | undefined {
  if (!onlyKeys(value, CALL_FRAME_KEYS) || value.type !== "hosted.call") return undefined;
  if (!isId(value.callId) || !isPositive(value.attempt) || !isId(value.sessionId)) return undefined;
  if (typeof value.agent !== "string" || value.agent.length === 0) return undefined;
  if (typeof value.tool !== "string" || value.tool.length === 0) return undefined;
  if (!isPositive(value.timeoutMs)) return undefined;
  const trimmed = value.conversationTrimmed;
  if (trimmed !== undefined && typeof trimmed !== "boolean") return undefined;
  // `JsonObjectSchema` copies the object key by key; `__proto__` is the one key a copy by
  // assignment would not keep as it is.
  const args = value.arguments;
  if (!isObject(args) || Object.hasOwn(args, "__proto__")) return undefined;
  const user = value.user;
  if (!isObject(user) || !onlyKeys(user, USER_KEYS) || !isId(user.id)) return undefined;
  if (user.name !== undefined && typeof user.name !== "string") return undefined;
  const conversation = value.conversation;
  if (!Array.isArray(conversation)) return undefined;
  if (conversation.length > 0) {
    const parsed = Conversation.safeParse(conversation);
    if (!parsed.success) return undefined;
    value.conversation = parsed.data;
  }
  return value;
}
