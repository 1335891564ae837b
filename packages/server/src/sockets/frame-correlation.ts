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

/** The ids of a frame that failed to decode, when it is JSON enough to have them. */
export function correlation(buffer: Buffer): Correlation {
  if (buffer.byteLength > 64 * 1024) return {};
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
