/**
 * The stable codes of errors that travel on the wire (`error` frames, `response.failed`, tool
 * results). Peers switch on these, never on messages.
 *
 * @example
 * ```ts
 * if (frame.type === "error" && frame.code === ErrorCodes.unauthorized) relogin();
 * ```
 */
export const ErrorCodes = {
  unauthorized: "unauthorized",
  forbidden: "forbidden",
  notFound: "not_found",
  /** An HTTP request body or query that does not fit; `path` names the field. */
  invalidRequest: "invalid_request",
  /** An HTTP request body over the size limit (status 413). */
  payloadTooLarge: "payload_too_large",
  invalidFrame: "invalid_frame",
  invalidJson: "invalid_json",
  frameTooLarge: "frame_too_large",
  unknownFrameType: "unknown_frame_type",
  protocolVersion: "protocol_version",
  rateLimited: "rate_limited",
  conflict: "conflict",
  /** A quota was hit (bytes per message or per second, sessions per user, conversation size); the message names the limit. */
  quotaExceeded: "quota_exceeded",
  /** A declared tool whose schema the server does not take (too large, unsafe pattern, remote or looping `$ref`); `path` names it. */
  invalidToolSpec: "invalid_tool_spec",
  noWorker: "no_worker",
  queueFull: "queue_full",
  unsupportedContent: "unsupported_content",
  modelError: "model_error",
  /** A provider tool call that cannot be normalized (see {@link ToolCallFormatError}). */
  invalidToolCall: "invalid_tool_call",
  internal: "internal",
} as const;

/** A stable error code on the wire. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/**
 * The base of every error this package throws; `code` is stable.
 *
 * @example
 * ```ts
 * try { normalizeToolCalls(input); } catch (e) { if (e instanceof ProtocolError) console.log(e.code); }
 * ```
 */
export class ProtocolError extends Error {
  // Fields set by a constructor are `declare`d in this package: no field definitions are emitted,
  // which keeps a page's bundle smaller.
  declare readonly code: string;
  /** The field path that was wrong, dotted (`tools.0.name`), where one is known. */
  declare readonly path: string | undefined;
  constructor(code: string, message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ProtocolError";
    this.code = code;
    this.path = options.path;
  }
}

/**
 * Why a frame could not be decoded. `code` is one of `frame_too_large`, `invalid_json`,
 * `unknown_frame_type`, `invalid_frame`; `path` names the field that was wrong.
 *
 * @example
 * ```ts
 * const r = decodeFrame(text);
 * if (!r.ok) socket.send(JSON.stringify({ type: "error", code: r.error.code, message: r.error.message, path: r.error.path }));
 * ```
 */
export class FrameDecodeError extends ProtocolError {
  /** Every problem found, one line each, as `path: message`. */
  declare readonly issues: string[];
  constructor(code: string, message: string, options: { path?: string; issues?: string[] } = {}) {
    super(code, message, options);
    this.name = "FrameDecodeError";
    this.issues = options.issues ?? [message];
  }
}

/**
 * A tool call in a provider's format that cannot be normalized (not an object, no tool name).
 *
 * @example
 * ```ts
 * try { normalizeToolCalls([42]); } catch (e) { (e as ToolCallFormatError).index; } // 0
 * ```
 */
export class ToolCallFormatError extends ProtocolError {
  /** Position of the offending entry in the input. */
  declare readonly index: number;
  constructor(message: string, index: number) {
    super("invalid_tool_call", message, { path: String(index) });
    this.name = "ToolCallFormatError";
    this.index = index;
  }
}
