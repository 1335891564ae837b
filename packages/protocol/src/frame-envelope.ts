import { FrameDecodeError } from "./errors";

// What every decoder does before it looks at a frame's fields: the size limit in UTF-8 bytes,
// then JSON, then an object with a string `type`. Shared by `decodeFrame` (zod) and
// `decodeServerFrame` (zod-free), so both refuse the same frames the same way.

/** The frame as a JSON object with its type, or the error that refused it. */
export type Envelope =
  | { ok: true; value: Record<string, unknown>; type: string }
  | { ok: false; error: FrameDecodeError };

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

/** Size, JSON and `type` checks of one frame, in the order the shared vectors pin down. */
export function readEnvelope(data: string | Uint8Array, maxBytes: number): Envelope {
  let text: string;
  if (typeof data === "string") {
    const size = sizeOver(data, maxBytes);
    if (size !== null) return tooLarge(size, maxBytes, data.length > maxBytes);
    text = data;
  } else {
    if (data.byteLength > maxBytes) return tooLarge(data.byteLength, maxBytes, false);
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(data);
    } catch {
      return envelopeError("invalid_json", "frame is not valid UTF-8");
    }
  }

  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return envelopeError("invalid_json", `frame is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return envelopeError("invalid_frame", "frame must be a JSON object");
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
