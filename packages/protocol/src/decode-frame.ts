import type { z } from "zod";
import { ClientToServerFrameSchema, ServerToClientFrameSchema } from "./client-frames";
import { FrameDecodeError } from "./errors";
import { flattenZodIssues, formatZodIssues, issuePath } from "./format-issues";
import {
  DEFAULT_MAX_JSON_DEPTH,
  envelopeError,
  RESULT_FRAME_TYPES,
  readEnvelopeWithResults,
} from "./frame-envelope";
import { checkedHostedCall, checkedHostedResult } from "./hosted-frame-checks";
import { guardedToolResult } from "./tool-result-frame";
import { DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_RESULT_FRAME_BYTES } from "./version";
import { ServerToWorkerFrameSchema, WorkerToServerFrameSchema } from "./worker-frames";

const schemas = {
  "client-to-server": ClientToServerFrameSchema,
  "server-to-client": ServerToClientFrameSchema,
  "worker-to-server": WorkerToServerFrameSchema,
  "server-to-worker": ServerToWorkerFrameSchema,
} as const;

/**
 * The four directions a frame travels in. Each has its own set of frame types.
 *
 * @example
 * ```ts
 * const channel: FrameChannel = "client-to-server";
 * ```
 */
export type FrameChannel = keyof typeof schemas;

/** The frame type of each channel. */
export type FrameOf<C extends FrameChannel> = z.infer<(typeof schemas)[C]>;

/**
 * The result of {@link decodeFrame}: a typed frame, or a typed error that names what was wrong.
 *
 * @example
 * ```ts
 * const r: DecodeResult<"client-to-server"> = decodeFrame(text, { channel: "client-to-server" });
 * ```
 */
export type DecodeResult<C extends FrameChannel> =
  | { ok: true; frame: FrameOf<C> }
  | { ok: false; error: FrameDecodeError };

/**
 * Options of {@link decodeFrame}.
 *
 * @example
 * ```ts
 * decodeFrame(text, { channel: "worker-to-server", maxBytes: 1 << 20 });
 * ```
 */
export interface DecodeFrameOptions<C extends FrameChannel> {
  /** Which direction the frame travels in; decides which frame types are allowed. */
  channel: C;
  /** Frames larger than this many UTF-8 bytes are refused before parsing. Default 5 MiB. */
  maxBytes?: number;
  /**
   * The limit of a result frame (`tool.result`, `hosted.result`), which may carry an image of
   * 5 MiB as base64. Default 8 MiB when `maxBytes` is left out, else `maxBytes`. A frame between
   * the two limits is parsed to read its `type`, then refused unless it is a result.
   */
  maxResultBytes?: number;
  /**
   * Deepest nesting of objects and arrays allowed; a deeper frame is `invalid_frame` with the
   * path where it goes too deep. Default {@link DEFAULT_MAX_JSON_DEPTH}.
   */
  maxDepth?: number;
}

export { DEFAULT_MAX_JSON_DEPTH, RESULT_FRAME_TYPES };

/**
 * Decodes one frame of a channel. Never throws: a frame over the size limit, text that is not
 * JSON, an unknown `type` or a field that does not fit all come back as a {@link FrameDecodeError}
 * whose `path` names the offending field (`tools.0.name`) and whose `issues` list every problem.
 *
 * @example
 * ```ts
 * const r = decodeFrame('{"type":"ping"}', { channel: "client-to-server" });
 * if (r.ok) console.log(r.frame.type); // "ping"
 * else console.log(r.error.code, r.error.path, r.error.message);
 * ```
 */
export function decodeFrame<C extends FrameChannel>(
  data: string | Uint8Array,
  options: DecodeFrameOptions<C>,
): DecodeResult<C> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const envelope = readEnvelopeWithResults(data, {
    maxBytes,
    maxResultBytes:
      options.maxResultBytes ?? (options.maxBytes === undefined ? DEFAULT_MAX_RESULT_FRAME_BYTES : maxBytes),
    ...(options.maxDepth === undefined ? {} : { maxDepth: options.maxDepth }),
  });
  if (!envelope.ok) return envelope;
  const { value, type } = envelope;
  const schema = schemas[options.channel];
  if (!knownTypes(options.channel).has(type)) {
    return envelopeError(
      "unknown_frame_type",
      `type: unknown frame type '${type}' on ${options.channel}`,
      "type",
    );
  }
  if (type === "tool.result" && options.channel === "client-to-server") {
    // The answers a server reads at call rates: without zod when valid (tool-result-frame.ts).
    const frame = guardedToolResult(value);
    if (frame !== undefined) return { ok: true, frame: frame as FrameOf<C> };
  }
  // The frames of every hosted call: as parsed when zod would return them unchanged
  // (hosted-frame-checks.ts).
  if (type === "hosted.result" && options.channel === "worker-to-server") {
    const frame = checkedHostedResult(value);
    if (frame !== undefined) return { ok: true, frame: frame as FrameOf<C> };
  } else if (type === "hosted.call" && options.channel === "server-to-worker") {
    const frame = checkedHostedCall(value);
    if (frame !== undefined) return { ok: true, frame: frame as FrameOf<C> };
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = formatZodIssues(parsed.error, value);
    const first = flattenZodIssues(parsed.error.issues, value)[0];
    return {
      ok: false,
      error: new FrameDecodeError("invalid_frame", `invalid '${type}' frame: ${issues.join("; ")}`, {
        path: first ? issuePath(first.path) : undefined,
        issues,
      }),
    };
  }
  return { ok: true, frame: parsed.data as FrameOf<C> };
}

const typeCache = new Map<FrameChannel, Set<string>>();

/**
 * The frame types allowed on a channel.
 *
 * @example
 * ```ts
 * knownTypes("server-to-worker").has("hosted.call"); // true
 * ```
 */
export function knownTypes(channel: FrameChannel): ReadonlySet<string> {
  let set = typeCache.get(channel);
  if (!set) {
    set = new Set(schemas[channel].options.map((option) => option.shape.type.value as string));
    typeCache.set(channel, set);
  }
  return set;
}

/**
 * The zod schema of a channel's frames, for code that generates documentation or JSON Schema.
 *
 * @example
 * ```ts
 * frameSchema("client-to-server").options.length;
 * ```
 */
export function frameSchema<C extends FrameChannel>(channel: C): (typeof schemas)[C] {
  return schemas[channel];
}
