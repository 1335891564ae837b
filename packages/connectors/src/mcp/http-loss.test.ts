import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { httpLossOf } from "./http-loss";

const body = (message: string) =>
  `Error POSTing to endpoint: {"jsonrpc":"2.0","error":{"code":-32000,"message":"${message}"},"id":null}`;

describe("httpLossOf", () => {
  it("takes a 404, or a 400 about the session, as a forgotten session whose request never ran", () => {
    expect(httpLossOf(new StreamableHTTPError(404, body("Session not found")))).toEqual({
      reason: "the MCP server no longer knows the session (HTTP 404)",
      neverRan: true,
    });
    for (const message of [
      "Bad Request: No valid session ID provided",
      "Bad Request: Server not initialized",
    ]) {
      expect(httpLossOf(new StreamableHTTPError(400, body(message)))).toMatchObject({ neverRan: true });
    }
  });

  it("takes a failed fetch as a server that cannot be reached, where the request may have run", () => {
    const refused = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") });
    expect(httpLossOf(refused)).toEqual({
      reason: "the MCP server cannot be reached (connect ECONNREFUSED 127.0.0.1:9)",
      neverRan: false,
    });
    expect(httpLossOf(new TypeError("fetch failed"))?.reason).toBe("the MCP server cannot be reached");
  });

  it("leaves any other error alone", () => {
    expect(httpLossOf(new StreamableHTTPError(400, body("Parse error: Invalid JSON")))).toBeUndefined();
    expect(httpLossOf(new StreamableHTTPError(401, "unauthorized"))).toBeUndefined();
    expect(httpLossOf(new StreamableHTTPError(500, body("session store crashed")))).toBeUndefined();
    expect(httpLossOf(new TypeError("x is not a function"))).toBeUndefined();
    expect(httpLossOf("fetch failed")).toBeUndefined();
  });
});
