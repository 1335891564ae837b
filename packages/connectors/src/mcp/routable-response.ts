import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** What is wrong with a JSON-RPC 2.0 response's `result` or `error`, or undefined. */
function problemOf(message: Record<string, unknown>): string | undefined {
  const hasResult = "result" in message;
  const hasError = "error" in message;
  if (hasResult && hasError) return "it has both result and error";
  if (hasResult) {
    const result = message.result;
    if (!isObject(result)) return "result is not an object";
    if (result._meta !== undefined && !isObject(result._meta)) return "result._meta is not an object";
    return undefined;
  }
  if (hasError) {
    const error = message.error;
    if (!isObject(error)) return "error is not an object";
    if (!Number.isInteger(error.code)) return "error.code is not an integer";
    if (typeof error.message !== "string") return "error.message is not a string";
    return undefined;
  }
  return "it has neither result nor error";
}

/**
 * A message as the SDK's `Protocol` can route it. A JSON-RPC 2.0 response to a request id whose
 * `result` or `error` the SDK's schemas refuse becomes an error response for the same id that
 * says what was wrong; keys JSON-RPC does not define are dropped from a good response (the SDK's
 * response schemas are strict). Anything else (a request, a notification, a message of another
 * version or with no usable id) is returned as it is, for `Protocol` to route or report.
 */
export function routableResponse(message: JSONRPCMessage): JSONRPCMessage {
  const fields = message as unknown;
  if (!isObject(fields) || "method" in fields || fields.jsonrpc !== "2.0") return message;
  const id = fields.id;
  if (typeof id !== "string" && !Number.isInteger(id)) return message;
  const problem = problemOf(fields);
  if (problem !== undefined) {
    const error = { code: ErrorCode.InternalError, message: `its response is malformed: ${problem}` };
    return { jsonrpc: "2.0", id: id as string | number, error };
  }
  for (const key in fields) {
    if (key !== "jsonrpc" && key !== "id" && key !== "result" && key !== "error") {
      const { jsonrpc, result, error } = fields;
      return (result !== undefined ? { jsonrpc, id, result } : { jsonrpc, id, error }) as JSONRPCMessage;
    }
  }
  return message;
}

/**
 * Makes every JSON-RPC 2.0 response to one of the client's requests settle that request. The
 * SDK's `Protocol` reports a response it cannot route (a `result` that is not an object, an
 * `error` without an integer code, a key JSON-RPC does not define) as an unknown message and
 * drops it, so the call it answers would wait for its timeout. Call it after
 * `client.connect(transport)`, which sets the `onmessage` this wraps.
 */
export function settleMalformedResponses(transport: Transport): void {
  const route = transport.onmessage;
  if (!route) return;
  transport.onmessage = (message, extra) => route(routableResponse(message), extra);
}
