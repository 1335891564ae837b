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
  // One object of a fixed shape per frame (no spread of the optional depth).
  const envelope = readEnvelopeWithResults(data, {
    maxBytes,
    maxResultBytes:
      options.maxResultBytes ?? (options.maxBytes === undefined ? DEFAULT_MAX_RESULT_FRAME_BYTES : maxBytes),
    maxDepth: options.maxDepth ?? DEFAULT_MAX_JSON_DEPTH,
  });
  if (!envelope.ok) return envelope;
  const { value, type } = envelope;
  // The frames of every tool call, read at call rates, come first: a type a check takes is known
  // on its channel, so the set of known types is asked only of the other frames.
  const checked = checkedInPlace(options.channel, type, value);
  if (checked !== undefined) return { ok: true, frame: checked as FrameOf<C> };
  if (!knownTypes(options.channel).has(type)) {
    return envelopeError(
      "unknown_frame_type",
      `type: unknown frame type '${type}' on ${options.channel}`,
      "type",
    );
  }
  const schema = schemas[options.channel];
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

/**
 * The frame as parsed when a check in place takes it (zod would return it unchanged), else
 * `undefined` (ask zod): a client's `tool.result` (tool-result-frame.ts), a worker's
 * `hosted.result` and a server's `hosted.call` (hosted-frame-checks.ts).
 */
function checkedInPlace(
  channel: FrameChannel,
  type: string,
  value: Record<string, unknown>,
): object | undefined {
  switch (type) {
    case "tool.result":
      return channel === "client-to-server" ? guardedToolResult(value) : undefined;
    case "hosted.result":
      return channel === "worker-to-server" ? checkedHostedResult(value) : undefined;
    case "hosted.call":
      return channel === "server-to-worker" ? checkedHostedCall(value) : undefined;
    default:
      return undefined;
  }
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
