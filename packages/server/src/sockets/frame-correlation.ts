import type { ClientToServerFrame } from "@patchbay/protocol";

// The ids an error frame carries back so the client can tell which request or command failed.

/** The ids an error frame carries back. */
export type Correlation = { requestId?: string; commandId?: string; sessionId?: string };

export function correlationOf(frame: ClientToServerFrame): Correlation {
  const ids: Correlation = {};
  if ("requestId" in frame && typeof frame.requestId === "string") ids.requestId = frame.requestId;
  if ("commandId" in frame && typeof frame.commandId === "string") ids.commandId = frame.commandId;
  if ("sessionId" in frame && typeof frame.sessionId === "string") ids.sessionId = frame.sessionId;
  return ids;
}

/** Above this a refused frame is not parsed again for its ids: they are read from its head. */
const PARSE_LIMIT = 64 * 1024;
/** How much of a large frame's head is searched for its ids (clients write them before the text). */
const HEAD_BYTES = 4 * 1024;
const ID_FIELD = /"(requestId|commandId|sessionId)"\s*:\s*"([^"\\]{1,256})"/g;

/**
 * The ids of a frame that failed to decode, when it is JSON enough to have them. A frame over
 * 64 KiB (a message over its text limit, a frame over the frame limit) is not parsed again; its
 * ids are taken from the first 4 KiB, where a client writes them before its text, so the sender
 * still learns which command failed. They only route the error back to the socket that sent it.
 */
export function correlation(buffer: Buffer): Correlation {
  if (buffer.byteLength > PARSE_LIMIT) return headCorrelation(buffer.toString("utf8", 0, HEAD_BYTES));
  try {
    const value = JSON.parse(buffer.toString("utf8")) as Record<string, unknown>;
    const ids: Correlation = {};
    for (const key of ["requestId", "commandId", "sessionId"] as const) {
      const id = value?.[key];
      if (typeof id === "string" && id.length > 0 && id.length <= 256) ids[key] = id;
    }
    return ids;
  } catch {
    return {};
  }
}

function headCorrelation(head: string): Correlation {
  const ids: Correlation = {};
  for (const [, key, id] of head.matchAll(ID_FIELD)) {
    const field = key as keyof Correlation;
    ids[field] ??= id;
  }
  return ids;
}
