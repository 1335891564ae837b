import type { z } from "zod";
import { ClientToServerFrameSchema, ServerToClientFrameSchema } from "./client-frames";
import { FrameDecodeError } from "./errors";
import { flattenZodIssues, formatZodIssues, issuePath } from "./format-issues";
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
}

/** The frame types that carry a tool result, and so may be as large as `maxResultBytes`. */
export const RESULT_FRAME_TYPES: ReadonlySet<string> = new Set(["tool.result", "hosted.result"]);
const RESULT_TYPE_NAMES = [...RESULT_FRAME_TYPES].map((type) => `"${type}"`);

const encoder = /* @__PURE__ */ new TextEncoder();

/**
 * The UTF-8 size of `text`, or `null` when it is surely within `limit`. A string of n UTF-16
 * code units takes between n and 3n bytes, so most frames are judged without encoding them.
 */
function sizeOver(text: string, limit: number): number | null {
  if (text.length > limit) return text.length;
  if (text.length * 3 <= limit) return null;
  const size = encoder.encode(text).byteLength;
  return size > limit ? size : null;
}

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
  const maxResultBytes = Math.max(
    maxBytes,
    options.maxResultBytes ?? (options.maxBytes === undefined ? DEFAULT_MAX_RESULT_FRAME_BYTES : maxBytes),
  );
  // Set when the frame is over maxBytes but within maxResultBytes: only a result may be that big.
  let resultSized: number | undefined;
  let text: string;
  if (typeof data === "string") {
    const size = sizeOver(data, maxResultBytes);
    if (size !== null) return tooLarge(size, maxResultBytes, data.length > maxResultBytes);
    if (maxResultBytes > maxBytes && data.length > maxBytes) {
      const bytes = data.length * 3 <= maxBytes ? data.length : encoder.encode(data).byteLength;
      if (bytes > maxBytes) resultSized = bytes;
    }
    text = data;
  } else {
    if (data.byteLength > maxResultBytes) return tooLarge(data.byteLength, maxResultBytes, false);
    if (data.byteLength > maxBytes) resultSized = data.byteLength;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(data);
    } catch {
      return fail("invalid_json", "frame is not valid UTF-8");
    }
  }

  // Only a result may be this big; anything that does not even name a result type is refused
  // before it is parsed, like every other oversized frame.
  if (resultSized !== undefined && !RESULT_TYPE_NAMES.some((name) => text.includes(name))) {
    return tooLarge(resultSized, maxBytes, false);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return fail("invalid_json", `frame is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return fail("invalid_frame", "frame must be a JSON object");
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string") {
    return fail("invalid_frame", "type: frame has no string 'type'", "type");
  }
  if (resultSized !== undefined && !RESULT_FRAME_TYPES.has(type)) {
    return tooLarge(resultSized, maxBytes, false);
  }
  const schema = schemas[options.channel];
  if (!knownTypes(options.channel).has(type)) {
    return fail("unknown_frame_type", `type: unknown frame type '${type}' on ${options.channel}`, "type");
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

function tooLarge(size: number, limit: number, atLeast: boolean): { ok: false; error: FrameDecodeError } {
  const measured = atLeast ? `at least ${size}` : `${size}`;
  return fail("frame_too_large", `frame is ${measured} bytes, over the limit of ${limit} bytes`);
}

function fail(code: string, message: string, path?: string): { ok: false; error: FrameDecodeError } {
  return { ok: false, error: new FrameDecodeError(code, message, path === undefined ? {} : { path }) };
}
