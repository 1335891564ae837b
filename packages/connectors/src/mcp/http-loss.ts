import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/**
 * A Streamable HTTP connection that is gone: the server forgot the session (it restarted), or it
 * cannot be reached.
 */
export interface HttpLoss {
  /** Why, for `/readyz`, the log and the failed call's error. */
  reason: string;
  /**
   * The server refused the request for its session id, so the request never ran: it is safe to
   * send it once more on a new session. False when the request may have reached the server.
   */
  neverRan: boolean;
}

/**
 * Whether this error of a Streamable HTTP request means the connection is gone, and how. The MCP
 * spec has a server answer a session id it does not know with 404 (the client must then open a
 * new session); some answer 400 and say so ("Bad Request: No valid session ID provided", or "Server
 * not initialized" from a fresh SDK transport). A fetch that fails (connection refused or cut)
 * means the server cannot be reached, and the request may or may not have reached it. Any other
 * error (a tool error, a refused credential, a malformed response) is not a loss: `undefined`.
 *
 * @example
 * ```ts
 * httpLossOf(new StreamableHTTPError(404, "Session not found"));
 * // { reason: "the MCP server no longer knows the session (HTTP 404)", neverRan: true }
 * ```
 */
export function httpLossOf(error: unknown): HttpLoss | undefined {
  if (error instanceof StreamableHTTPError) {
    const forgotten =
      error.code === 404 || (error.code === 400 && /session|not initialized/i.test(error.message));
    if (!forgotten) return undefined;
    return { reason: `the MCP server no longer knows the session (HTTP ${error.code})`, neverRan: true };
  }
  if (error instanceof TypeError && error.message === "fetch failed") {
    const cause = error.cause instanceof Error && error.cause.message ? ` (${error.cause.message})` : "";
    return { reason: `the MCP server cannot be reached${cause}`, neverRan: false };
  }
  return undefined;
}
