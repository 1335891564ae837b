import type { ToolResult } from "./tool-call";
import { failedResult } from "./tool-results";

const encoder = /* @__PURE__ */ new TextEncoder();

/** The two frames that carry a tool result to the server. */
type ResultFrame =
  | { type: "tool.result"; sessionId: string; callId: string; attempt?: number; result: ToolResult }
  | { type: "hosted.result"; callId: string; attempt: number; result: ToolResult };

/**
 * The failed result that replaces one too large to send: `outcome: "failed"`, code
 * `result_too_large`, and a sentence the model can act on.
 *
 * @example
 * ```ts
 * resultTooLarge(9_000_000, 8_388_608).error?.code; // "result_too_large"
 * ```
 */
export function resultTooLarge(bytes: number, limit: number): ToolResult {
  const text =
    `The tool's result was ${bytes} bytes, over the limit of ${limit} bytes for one result, so it ` +
    "could not be delivered. Return fewer or smaller images, or images as https URLs.";
  return failedResult("failed", "result_too_large", text);
}

/**
 * The text of a result frame, within `maxBytes` UTF-8 bytes: the frame itself when it fits,
 * else the same frame carrying {@link resultTooLarge} instead of the result. A peer sends this,
 * so an oversized result fails its call once instead of being refused by the server.
 *
 * @example
 * ```ts
 * socket.send(encodeResultFrame({ type: "hosted.result", callId, attempt, result }, ready.maxResultFrameBytes));
 * ```
 */
export function encodeResultFrame(frame: ResultFrame, maxBytes: number): string {
  const text = JSON.stringify(frame);
  // A UTF-16 code unit is at most 3 UTF-8 bytes, so short frames are judged without encoding.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = encoder.encode(text).byteLength;
  if (bytes <= maxBytes) return text;
  return JSON.stringify({ ...frame, result: resultTooLarge(bytes, maxBytes) });
}
