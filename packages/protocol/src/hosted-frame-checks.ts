import {
  ConversationItemSchema,
  MessageItemSchema,
  ToolCallStatusSchema,
  ToolLocationSchema,
} from "./conversation";
import { ToolOutcomeSchema } from "./tool-call";

// The two frames of every hosted tool call, `hosted.call` (server -> worker) and `hosted.result`
// (worker -> server), checked in place: a frame that is exactly what its zod schema would give
// back (no unknown field anywhere, no default to fill in) is handed on as JSON.parse made it,
// without the copy of every object zod's parse makes. Anything else (an unknown field, a result
// with images, a field that does not fit) is `undefined`, and `decodeFrame` asks zod, whose
// answer (the copy, or the issues naming the wrong field) is then the decoder's. The rules are
// those of `HostedCallFrameSchema` and `HostedResultFrameSchema` (worker-frames.ts, tool-call.ts,
// primitives.ts); hosted-frame-checks.test.ts keeps them in step over the shared vectors and
// their mutations. The conversation's items are checked the same way, one by one
// (`ConversationItemSchema`, conversation.ts); an item the checks do not take (an image, a field
// zod drops) is parsed by zod alone, and when zod refuses it the whole frame goes to zod, whose
// issues name the item's wrong field.

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** `IdSchema`: a string of 1 to 256 code units. */
const isId = (value: unknown): boolean =>
  typeof value === "string" && value.length >= 1 && value.length <= 256;

/** `z.array(IdSchema)`. */
function isIdList(value: unknown): boolean {
  if (!Array.isArray(value)) return false;
  for (const id of value) if (!isId(id)) return false;
  return true;
}

/** `z.number().int().positive()`. */
const isPositive = (value: unknown): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 1;

/** `TimestampSchema`: `z.number().int().nonnegative()`. */
const isTimestamp = (value: unknown): boolean =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0;

/**
 * `JsonObjectSchema`, which copies the object key by key; `__proto__` is the one key a copy by
 * assignment would not keep as it is.
 */
const isJsonObject = (value: unknown): boolean => isObject(value) && !Object.hasOwn(value, "__proto__");

/** A string of at least one code unit (`z.string().min(1)`). */
const isFilled = (value: unknown): boolean => typeof value === "string" && value.length > 0;

/** An optional string field. */
const isOptionalString = (value: unknown): boolean => value === undefined || typeof value === "string";

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
  "conversationIds",
  "forgetSessions",
]);
const USER_KEYS = new Set(["id", "name"]);

const MESSAGE_KEYS = new Set(["type", "id", "role", "text", "images", "status", "responseId", "createdAt"]);
const TOOL_CALL_KEYS = new Set([
  "type",
  "id",
  "providerCallId",
  "name",
  "arguments",
  "location",
  "displayTitle",
  "status",
  "progress",
  "held",
  "attempt",
  "result",
  "lateResult",
  "responseId",
  "createdAt",
]);
/** The enums of the two kinds of item, as their schemas own them. */
const ROLES = new Set<string>(MessageItemSchema.shape.role.options);
const MESSAGE_STATUSES = new Set<string>(MessageItemSchema.shape.status.options);
const TOOL_CALL_STATUSES = new Set<string>(ToolCallStatusSchema.options);
const LOCATIONS = new Set<string>(ToolLocationSchema.options);

/** A message item without images, as `MessageItemSchema` returns it unchanged. */
function isPlainMessage(item: Json): boolean {
  if (!onlyKeys(item, MESSAGE_KEYS) || !isId(item.id) || typeof item.text !== "string") return false;
  if (!ROLES.has(item.role as string) || !MESSAGE_STATUSES.has(item.status as string)) return false;
  // Images are left to zod (each is one of two shapes); an empty list is kept as it is.
  const images = item.images;
  if (images !== undefined && (!Array.isArray(images) || images.length > 0)) return false;
  return (item.responseId === undefined || isId(item.responseId)) && isTimestamp(item.createdAt);
}

/** A tool call item whose results have no images, as `ToolCallItemSchema` returns it unchanged. */
function isPlainToolCall(item: Json): boolean {
  if (!onlyKeys(item, TOOL_CALL_KEYS) || !isId(item.id) || !isFilled(item.name)) return false;
  if (item.providerCallId !== undefined && !isFilled(item.providerCallId)) return false;
  if (!isJsonObject(item.arguments) || !TOOL_CALL_STATUSES.has(item.status as string)) return false;
  if (item.location !== undefined && !LOCATIONS.has(item.location as string)) return false;
  if (!isOptionalString(item.displayTitle) || !isOptionalString(item.progress)) return false;
  if (typeof item.held !== "boolean" || !isPositive(item.attempt)) return false;
  if (item.result !== undefined && !isPlainToolResult(item.result)) return false;
  if (item.lateResult !== undefined && !isPlainToolResult(item.lateResult)) return false;
  return (item.responseId === undefined || isId(item.responseId)) && isTimestamp(item.createdAt);
}

/** A conversation item as `ConversationItemSchema` returns it unchanged. */
function isPlainItem(item: unknown): boolean {
  if (!isObject(item)) return false;
  if (item.type === "message") return isPlainMessage(item);
  return item.type === "tool_call" && isPlainToolCall(item);
}

/**
 * The conversation as `z.array(ConversationItemSchema)` returns it: the parsed array itself when
 * every item is plain, else a copy with zod's parse of each item that is not; `undefined` when
 * zod refuses an item.
 */
function checkedConversation(items: unknown[]): unknown[] | undefined {
  let out: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = items[i];
    if (isPlainItem(item)) {
      if (out) out.push(item);
      continue;
    }
    const parsed = ConversationItemSchema.safeParse(item);
    if (!parsed.success) return undefined;
    out ??= items.slice(0, i);
    out.push(parsed.data);
  }
  return out ?? items;
}

/**
 * The parsed `hosted.call` frame itself when `HostedCallFrameSchema` would return it unchanged
 * (with zod's parse of any conversation item the checks leave to it), else `undefined` (ask zod).
 */
export function checkedHostedCall(value: Json): Json | undefined {
  if (!onlyKeys(value, CALL_FRAME_KEYS) || value.type !== "hosted.call") return undefined;
  if (!isId(value.callId) || !isPositive(value.attempt) || !isId(value.sessionId)) return undefined;
  if (typeof value.agent !== "string" || value.agent.length === 0) return undefined;
  if (typeof value.tool !== "string" || value.tool.length === 0) return undefined;
  if (!isPositive(value.timeoutMs)) return undefined;
  const trimmed = value.conversationTrimmed;
  if (trimmed !== undefined && typeof trimmed !== "boolean") return undefined;
  if (!isJsonObject(value.arguments)) return undefined;
  if (value.conversationIds !== undefined && !isIdList(value.conversationIds)) return undefined;
  if (value.forgetSessions !== undefined && !isIdList(value.forgetSessions)) return undefined;
  const user = value.user;
  if (!isObject(user) || !onlyKeys(user, USER_KEYS) || !isId(user.id)) return undefined;
  if (user.name !== undefined && typeof user.name !== "string") return undefined;
  const conversation = value.conversation;
  if (!Array.isArray(conversation)) return undefined;
  const items = checkedConversation(conversation);
  if (items === undefined) return undefined;
  value.conversation = items;
  return value;
}
