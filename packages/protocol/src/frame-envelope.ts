import { FrameDecodeError } from "./errors";

// What every decoder does before it looks at a frame's fields: the size limit in UTF-8 bytes,
// then JSON, then an object with a string `type`. Shared by `decodeFrame` (zod) and
// `decodeServerFrame` (zod-free), so both refuse the same frames the same way.

/** The frame as a JSON object with its type, or the error that refused it. */
export type Envelope =
  | { ok: true; value: Record<string, unknown>; type: string }
  | { ok: false; error: FrameDecodeError };

const encoder = /* @__PURE__ */ new TextEncoder();
/** One strict decoder for every frame: making one per frame cost more than decoding a small frame. */
let utf8: TextDecoder | undefined;

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

/** The limits {@link readEnvelope} applies. */
export interface EnvelopeLimits {
  /** Frames larger than this many UTF-8 bytes are refused before parsing. */
  maxBytes: number;
  /**
   * The limit of a result frame (`tool.result`, `hosted.result`), at least `maxBytes`. A frame
   * between the two limits is parsed to read its `type`, then refused unless it is a result.
   * Only {@link readEnvelopeWithResults} reads it.
   */
  maxResultBytes?: number;
  /** Deepest nesting of objects and arrays allowed (default {@link DEFAULT_MAX_JSON_DEPTH}). */
  maxDepth?: number;
}

/**
 * The default nesting limit of a decoded frame: far deeper than any frame needs, shallow enough
 * that checking a frame's fields cannot run out of stack.
 *
 * @example
 * ```ts
 * decodeFrame(text, { channel: "client-to-server", maxDepth: DEFAULT_MAX_JSON_DEPTH });
 * ```
 */
export const DEFAULT_MAX_JSON_DEPTH = 64;

/** The frame types that carry a tool result, and so may be as large as `maxResultBytes`. */
export const RESULT_FRAME_TYPES: ReadonlySet<string> = new Set(["tool.result", "hosted.result"]);

/**
 * Whether an object or array in `value` sits `max` or more levels below the top: the check every
 * frame pays, without the allocations of {@link tooDeep} (which then names the path).
 */
function deeperThan(value: object, depth: number, max: number): boolean {
  if (depth >= max) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child: unknown = value[i];
      if (typeof child === "object" && child !== null && deeperThan(child, depth + 1, max)) return true;
    }
    return false;
  }
  for (const key in value) {
    const child: unknown = (value as Record<string, unknown>)[key];
    if (typeof child === "object" && child !== null && deeperThan(child, depth + 1, max)) return true;
  }
  return false;
}

/** The path of the first value nested deeper than `max`, or `undefined` when none is. */
function tooDeep(value: unknown, max: number): string[] | undefined {
  const stack: { value: unknown; path: string[] }[] = [{ value, path: [] }];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (typeof node.value !== "object" || node.value === null) continue;
    if (node.path.length >= max) return node.path;
    // An array's entries are its indices as strings, as a path names them.
    for (const [key, child] of Object.entries(node.value)) {
      if (typeof child === "object" && child !== null)
        stack.push({ value: child, path: [...node.path, key] });
    }
  }
  return undefined;
}

// Callers in plain JavaScript pass whatever their socket gave them (null, an ArrayBuffer).
function notAFrame(data: unknown): { ok: false; error: FrameDecodeError } {
  return envelopeError(
    "invalid_frame",
    `a frame is text (a string) or its UTF-8 bytes (a Uint8Array), not ${data === null ? "null" : typeof data}`,
  );
}

function decodeUtf8(data: Uint8Array): string | undefined {
  try {
    utf8 ??= new TextDecoder("utf-8", { fatal: true });
    return utf8.decode(data);
  } catch {
    return undefined;
  }
}

const NOT_UTF8 = "frame is not valid UTF-8";

/**
 * Size, JSON, nesting and `type` checks of one frame, in the order the shared vectors pin down,
 * with one size limit for every frame (`maxResultBytes` is not read: see
 * {@link readEnvelopeWithResults}).
 */
export function readEnvelope(data: string | Uint8Array, limits: EnvelopeLimits): Envelope {
  const { maxBytes } = limits;
  if (typeof data === "string") {
    const size = sizeOver(data, maxBytes);
    if (size !== null) return tooLarge(size, maxBytes, data.length > maxBytes);
    return parseEnvelope(data, limits.maxDepth);
  }
  if (!(data instanceof Uint8Array)) return notAFrame(data);
  if (data.byteLength > maxBytes) return tooLarge(data.byteLength, maxBytes, false);
  const text = decodeUtf8(data);
  return text === undefined ? envelopeError("invalid_json", NOT_UTF8) : parseEnvelope(text, limits.maxDepth);
}

/**
 * {@link readEnvelope} for a channel whose result frames may be larger than the others: a frame
 * over `maxBytes` and within `maxResultBytes` is refused before parsing unless its text names a
 * result type, and after it unless its `type` is one.
 */
export function readEnvelopeWithResults(data: string | Uint8Array, limits: EnvelopeLimits): Envelope {
  const { maxBytes } = limits;
  const maxResultBytes = Math.max(maxBytes, limits.maxResultBytes ?? maxBytes);
  if (maxResultBytes === maxBytes) return readEnvelope(data, limits);
  // Set when the frame is over maxBytes but within maxResultBytes: only a result may be that big.
  let resultSized: number | undefined;
  let text: string;
  if (typeof data === "string") {
    const size = sizeOver(data, maxResultBytes);
    if (size !== null) return tooLarge(size, maxResultBytes, data.length > maxResultBytes);
    if (data.length > maxBytes) {
      const bytes = encoder.encode(data).byteLength;
      if (bytes > maxBytes) resultSized = bytes;
    }
    text = data;
  } else {
    if (!(data instanceof Uint8Array)) return notAFrame(data);
    if (data.byteLength > maxResultBytes) return tooLarge(data.byteLength, maxResultBytes, false);
    if (data.byteLength > maxBytes) resultSized = data.byteLength;
    const decoded = decodeUtf8(data);
    if (decoded === undefined) return envelopeError("invalid_json", NOT_UTF8);
    text = decoded;
  }
  if (resultSized === undefined) return parseEnvelope(text, limits.maxDepth);
  // Anything that does not even name a result type is refused before it is parsed, like every
  // other oversized frame.
  if (![...RESULT_FRAME_TYPES].some((type) => text.includes(`"${type}"`))) {
    return tooLarge(resultSized, maxBytes, false);
  }
  const envelope = parseEnvelope(text, limits.maxDepth);
  return envelope.ok && !RESULT_FRAME_TYPES.has(envelope.type)
    ? tooLarge(resultSized, maxBytes, false)
    : envelope;
}

/** JSON, nesting and `type` of a frame's text, once its size passed. */
function parseEnvelope(text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): Envelope {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return envelopeError("invalid_json", `frame is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return envelopeError("invalid_frame", "frame must be a JSON object");
  }
  // deeperThan recurses once per level: past a few hundred levels the walk with its own stack decides.
  const deep = maxDepth > 256 || deeperThan(value, 0, maxDepth) ? tooDeep(value, maxDepth) : undefined;
  if (deep !== undefined) {
    const path = deep.slice(0, 8).join(".") + (deep.length > 8 ? ".…" : "");
    return envelopeError(
      "invalid_frame",
      `${path}: nested deeper than ${maxDepth} levels`,
      deep.slice(0, 8).join("."),
    );
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== "string") {
    return envelopeError("invalid_frame", "type: frame has no string 'type'", "type");
  }
  return { ok: true, value: value as Record<string, unknown>, type };
}

function tooLarge(size: number, limit: number, atLeast: boolean): { ok: false; error: FrameDecodeError } {
  const measured = atLeast ? `at least ${size}` : `${size}`;
  return envelopeError("frame_too_large", `frame is ${measured} bytes, over the limit of ${limit} bytes`);
}

/** A decode failure with its code, message and the path of the wrong field. */
export function envelopeError(
  code: string,
  message: string,
  path?: string,
  issues?: string[],
): { ok: false; error: FrameDecodeError } {
  return {
    ok: false,
    error: new FrameDecodeError(code, message, {
      ...(path === undefined ? {} : { path }),
      ...(issues === undefined ? {} : { issues }),
    }),
  };
}
