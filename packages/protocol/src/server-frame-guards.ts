import type { ServerToClientFrame } from "./client-frames";
import type { DecodeResult } from "./decode-frame";
import { FrameDecodeError } from "./errors";
import { envelopeError, readEnvelope } from "./frame-envelope";
import {
  arr,
  bool,
  type Guard,
  GuardIssue,
  int,
  literal,
  nullable,
  obj,
  oneOf,
  opt,
  record,
  str,
  tagged,
} from "./guard";
import { id, image, nonEmpty, positive, toolResult, wireError } from "./tool-result-guards";
import type { ToolApprovalSpec } from "./tool-spec";
import { DEFAULT_MAX_FRAME_BYTES } from "./version";

// The server -> client frames as zod-free guards, field for field in the order of the zod
// schemas in client-frames.ts, conversation.ts, content.ts and tool-call.ts. A change there needs
// the same change here: server-frame-guards.test.ts fails until both agree on every shared
// vector and on every mutation of the valid ones.

const timestamp = int(0);
const user = obj({ id, name: opt(str()) });

const messageItem = obj({
  type: literal("message"),
  id,
  role: oneOf("user", "assistant"),
  text: str(),
  images: opt(arr(image)),
  status: oneOf("in_progress", "completed", "interrupted", "failed"),
  responseId: opt(id),
  createdAt: timestamp,
});

const toolCallItem = obj({
  type: literal("tool_call"),
  id,
  providerCallId: opt(nonEmpty),
  name: nonEmpty,
  arguments: record,
  location: opt(oneOf("page", "worker", "server")),
  displayTitle: opt(str()),
  status: oneOf(
    "pending",
    "awaiting_approval",
    "running",
    "completed",
    "failed",
    "cancelled",
    "declined",
    "timed_out",
    "withdrawn",
  ),
  progress: opt(str()),
  held: bool,
  attempt: positive,
  result: opt(toolResult),
  lateResult: opt(toolResult),
  responseId: opt(id),
  createdAt: timestamp,
});

const event = (type: string, fields: Record<string, Guard>) =>
  obj({ type: literal(type), sessionId: id, seq: positive, ...fields });

const serverFrames: Record<string, Guard> = {
  welcome: obj({
    type: literal("welcome"),
    protocol: positive,
    connectionId: id,
    user: nullable(user),
    heartbeatIntervalMs: positive,
    maxFrameBytes: positive,
    maxResultFrameBytes: opt(positive),
  }),
  "session.opened": obj({
    type: literal("session.opened"),
    requestId: id,
    session: obj({
      id,
      agent: nonEmpty,
      userId: id,
      metadata: record,
      createdAt: timestamp,
      lastSeq: int(0),
    }),
  }),
  error: obj({
    type: literal("error"),
    ...wireError,
    requestId: opt(id),
    commandId: opt(id),
    sessionId: opt(id),
    retryAfterMs: opt(int(0)),
  }),
  pong: obj({ type: literal("pong"), nonce: opt(str(0, 64)) }),
  ping: obj({ type: literal("ping"), nonce: opt(str(0, 64)) }),
  "message.created": event("message.created", { commandId: opt(id), item: messageItem }),
  "response.started": event("response.started", { responseId: id, commandId: opt(id) }),
  "response.thinking": event("response.thinking", { responseId: id, reason: oneOf("dispatch", "model") }),
  "text.delta": event("text.delta", { responseId: id, itemId: id, delta: str() }),
  "message.completed": event("message.completed", { item: messageItem }),
  "conversation.updated": event("conversation.updated", {
    item: tagged("type", { message: messageItem, tool_call: toolCallItem }),
  }),
  "tool.call": event("tool.call", {
    call: obj({ id, name: nonEmpty, arguments: record }),
    attempt: positive,
    timeoutMs: positive,
    user,
  }),
  "tool.cancel": event("tool.cancel", {
    callId: id,
    reason: oneOf("interrupted", "timed_out", "session_closed"),
    attempt: opt(positive),
  }),
  "tool.progress": event("tool.progress", { callId: id, text: str() }),
  "tool.say": event("tool.say", { callId: id, text: str() }),
  "tool.held": event("tool.held", { callId: id }),
  "tool.hold.ack": obj({
    type: literal("tool.hold.ack"),
    sessionId: id,
    callId: id,
    attempt: positive,
    accepted: bool,
    reason: opt(str(0, 1_000)),
  }),
  "tool.approval.ack": obj({
    type: literal("tool.approval.ack"),
    sessionId: id,
    callId: id,
    attempt: positive,
    outcome: oneOf("allowed", "declined", "expired", "cancelled"),
    reason: opt(str(0, 1_000)),
  }),
  "approval.requested": event("approval.requested", {
    approval: obj({
      id,
      callId: id,
      tool: nonEmpty,
      title: str(),
      reason: opt(str()),
      allowTitle: str(),
      declineTitle: str(),
      argumentsHash: str(),
      expiresAt: timestamp,
    }),
  }),
  "approval.resolved": event("approval.resolved", {
    approvalId: id,
    callId: id,
    outcome: oneOf("allowed", "declined", "expired", "cancelled"),
  }),
  "response.completed": event("response.completed", {
    responseId: id,
    commandId: opt(id),
    reason: oneOf("stop", "interrupted", "max_rounds", "answered_by_worker", "refusal"),
    text: str(),
    usage: opt(obj({ inputTokens: int(0), outputTokens: int(0) })),
  }),
  "response.failed": event("response.failed", { responseId: id, commandId: opt(id), error: obj(wireError) }),
};

/**
 * The frame types a server sends to a session client, as {@link decodeServerFrame} knows them.
 *
 * @example
 * ```ts
 * SERVER_FRAME_TYPES.includes("text.delta"); // true
 * ```
 */
export const SERVER_FRAME_TYPES: readonly string[] = Object.keys(serverFrames);

/**
 * Options of {@link decodeServerFrame}.
 *
 * @example
 * ```ts
 * decodeServerFrame(text, { maxBytes: 1 << 20 });
 * ```
 */
export interface DecodeServerFrameOptions {
  /** Frames larger than this many UTF-8 bytes are refused before parsing. Default 5 MiB. */
  maxBytes?: number;
}

/**
 * Decodes one server -> client frame without zod, with the same result as
 * `decodeFrame(data, { channel: "server-to-client" })` (from the `@patchbay/protocol` entry):
 * the frame with unknown fields dropped and defaults filled in, or a {@link FrameDecodeError}
 * with the code and the path of the first wrong field. Never throws. Import it from
 * `@patchbay/protocol/lite`, which a browser page can load without zod.
 *
 * @example
 * ```ts
 * import { decodeServerFrame } from "@patchbay/protocol/lite";
 * const r = decodeServerFrame(event.data);
 * if (!r.ok) console.error(r.error.code, r.error.path, r.error.message);
 * ```
 */
export function decodeServerFrame(
  data: string | Uint8Array,
  options: DecodeServerFrameOptions = {},
): DecodeResult<"server-to-client"> {
  const envelope = readEnvelope(data, { maxBytes: options.maxBytes ?? DEFAULT_MAX_FRAME_BYTES });
  if (!envelope.ok) return envelope;
  const guard = Object.hasOwn(serverFrames, envelope.type) ? serverFrames[envelope.type] : undefined;
  if (!guard) {
    return envelopeError(
      "unknown_frame_type",
      `type: unknown frame type '${envelope.type}' on server-to-client`,
      "type",
    );
  }
  try {
    return { ok: true, frame: guard(envelope.value) as ServerToClientFrame };
  } catch (error) {
    if (!(error instanceof GuardIssue)) throw error;
    const issue = error.path === "" ? error.message : `${error.path}: ${error.message}`;
    return {
      ok: false,
      error: new FrameDecodeError("invalid_frame", `invalid '${envelope.type}' frame: ${issue}`, {
        path: error.path,
        issues: [issue],
      }),
    };
  }
}

const approvalSpec = obj({
  title: nonEmpty,
  reasonArgument: opt(nonEmpty),
  allowTitle: opt(nonEmpty),
  declineTitle: opt(nonEmpty),
  expiresInMs: opt(positive),
  conditional: opt(bool),
});

/**
 * Checks a tool's `approval` the way `ToolApprovalSpecSchema` does, without zod: the spec with
 * unknown fields dropped, or the path and reason of the first wrong field.
 *
 * @example
 * ```ts
 * checkToolApprovalSpec({ title: "" }); // { ok: false, path: "title", message: "must not be empty" }
 * ```
 */
export function checkToolApprovalSpec(
  value: unknown,
): { ok: true; value: ToolApprovalSpec } | { ok: false; path: string; message: string } {
  try {
    return { ok: true, value: approvalSpec(value) as ToolApprovalSpec };
  } catch (error) {
    if (!(error instanceof GuardIssue)) throw error;
    return { ok: false, path: error.path, message: error.message };
  }
}
