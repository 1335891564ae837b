/**
 * A result frame (`tool.result`, `hosted.result`) over the result size limit: which call it
 * answers, so the server can fail that call once instead of waiting out its timeout.
 */
export interface OversizedResult {
  callId: string;
  /** Set for `tool.result`. */
  sessionId?: string;
  attempt?: number;
  /** The frame's size in UTF-8 bytes. */
  bytes: number;
}

const ID_MAX = 256;
const isId = (value: unknown): value is string =>
  typeof value === "string" && value.length > 0 && value.length <= ID_MAX;

/**
 * Reads the call a refused oversized frame answers, when it is a result frame that parses. The
 * socket's receive limit bounds what is parsed here (the result limit plus 1 MiB of headroom).
 */
export function oversizedResult(
  data: Buffer,
  type: "tool.result" | "hosted.result",
): OversizedResult | undefined {
  let value: unknown;
  try {
    value = JSON.parse(data.toString("utf8"));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const frame = value as Record<string, unknown>;
  if (frame.type !== type || !isId(frame.callId)) return undefined;
  const found: OversizedResult = { callId: frame.callId, bytes: data.byteLength };
  if (isId(frame.sessionId)) found.sessionId = frame.sessionId;
  if (typeof frame.attempt === "number" && Number.isInteger(frame.attempt) && frame.attempt > 0)
    found.attempt = frame.attempt;
  return found;
}
