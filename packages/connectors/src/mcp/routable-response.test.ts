import {
  isJSONRPCErrorResponse,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
} from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { routableResponse } from "./routable-response";

const routed = (message: unknown) => routableResponse(message as JSONRPCMessage);
const settles = (message: JSONRPCMessage) =>
  isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);

describe("routableResponse", () => {
  it("passes good responses, requests, notifications and other versions through as they are", () => {
    for (const message of [
      { jsonrpc: "2.0", id: 1, result: { content: [] } },
      { jsonrpc: "2.0", id: "a", result: { _meta: { progressToken: 1 } } },
      { jsonrpc: "2.0", id: 2, error: { code: -32602, message: "bad params", data: { x: 1 } } },
      { jsonrpc: "2.0", id: 3, method: "tools/call", params: {} },
      { jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: 1 } },
      { jsonrpc: "1.0", id: 4, result: "not ours to settle" },
      { jsonrpc: "2.0", id: 1.5, result: "no request has this id" },
      { jsonrpc: "2.0", result: "no id" },
    ])
      expect(routed(message)).toBe(message);
  });

  it("turns each response the SDK would drop into an error for its id that says what was wrong", () => {
    const cases: Array<[unknown, string]> = [
      [{ jsonrpc: "2.0", id: 1, result: "text" }, "result is not an object"],
      [{ jsonrpc: "2.0", id: 1, result: [1] }, "result is not an object"],
      [{ jsonrpc: "2.0", id: 1, result: null }, "result is not an object"],
      [{ jsonrpc: "2.0", id: 1, result: { _meta: 3 } }, "result._meta is not an object"],
      [{ jsonrpc: "2.0", id: 1, error: "broken" }, "error is not an object"],
      [{ jsonrpc: "2.0", id: 1, error: { code: "E1", message: "x" } }, "error.code is not an integer"],
      [{ jsonrpc: "2.0", id: 1, error: { code: 1 } }, "error.message is not a string"],
      [
        { jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "x" } },
        "it has both result and error",
      ],
      [{ jsonrpc: "2.0", id: 1 }, "it has neither result nor error"],
    ];
    for (const [message, problem] of cases) {
      // The SDK's own check refuses each: without this, the request would never settle.
      expect(settles(message as JSONRPCMessage)).toBe(false);
      const answer = routed(message);
      expect(answer).toEqual({
        jsonrpc: "2.0",
        id: 1,
        error: { code: -32603, message: `its response is malformed: ${problem}` },
      });
      expect(settles(answer)).toBe(true);
    }
  });

  it("drops keys JSON-RPC does not define from a good response, which the SDK's strict schemas refuse", () => {
    const result = { jsonrpc: "2.0", id: 7, result: { content: [] }, trace: "t" };
    const error = { jsonrpc: "2.0", id: "e", error: { code: 1, message: "m" }, trace: "t" };
    expect(settles(result as JSONRPCMessage)).toBe(false);
    expect(routed(result)).toEqual({ jsonrpc: "2.0", id: 7, result: { content: [] } });
    expect(routed(error)).toEqual({ jsonrpc: "2.0", id: "e", error: { code: 1, message: "m" } });
    expect(settles(routed(result)) && settles(routed(error))).toBe(true);
  });
});
