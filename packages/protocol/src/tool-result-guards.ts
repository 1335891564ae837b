import { absent, arr, bool, exactlyOne, int, literal, obj, oneOf, opt, str, withDefault } from "./guard";

// The guards of a tool result and what it is made of, field for field as ToolResultSchema
// (tool-call.ts, content.ts) reads them: shared by the server -> client frames
// (server-frame-guards.ts) and a client's `tool.result` (tool-result-frame.ts).

/** An id (`IdSchema`). */
export const id = str(1, 256);
/** A string that is not empty. */
export const nonEmpty = str(1);
/** A positive integer (an attempt, a seq). */
export const positive = int(1);
/** The fields of an error on the wire (`WireErrorSchema`). */
export const wireError = { code: nonEmpty, message: str(), path: opt(str()) };

/** An image of a tool's output or a message: by https URL, or as base64 data. */
export const image = exactlyOne(
  "must be either an image { type, url } or an image { type, mimeType, data }, not both",
  obj({
    type: literal("image"),
    url: str(0, Number.POSITIVE_INFINITY, /^https:\/\/[^\s]+$/, "must be an https URL"),
    data: absent("an image with a url carries no data"),
  }),
  obj({
    type: literal("image"),
    mimeType: oneOf("image/png", "image/jpeg", "image/gif", "image/webp"),
    data: str(0, Number.POSITIVE_INFINITY, /^[A-Za-z0-9+/]*={0,2}$/, "must be base64"),
    url: absent("an image with data has no url"),
  }),
);

/** A tool call's result (`ToolResultSchema`). */
export const toolResult = obj({
  outcome: oneOf(
    "completed",
    "failed",
    "invalid_arguments",
    "unknown_tool",
    "timed_out",
    "cancelled",
    "declined",
    "approval_expired",
  ),
  content: obj({ text: str(), images: withDefault(arr(image), () => []) }),
  error: opt(obj(wireError)),
  held: opt(bool),
});
