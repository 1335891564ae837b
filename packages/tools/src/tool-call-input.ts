import type { NormalizedToolCall } from "@patchbay/protocol";
import { parseToolArguments } from "@patchbay/protocol/lite";
import { ToolsError } from "./errors";

/**
 * A call to execute: a normalized call, or just its id, name and arguments (an object or the
 * JSON text the model produced).
 *
 * @example
 * ```ts
 * const call: ToolCallInput = { id: "call_1", name: "get_weather", arguments: { city: "Berlin" } };
 * ```
 */
export type ToolCallInput =
  | NormalizedToolCall
  | { id: string; name: string; arguments?: Record<string, unknown> | string; argumentsError?: string };

/**
 * The call as the executor runs it: a normalized call is taken as it is; otherwise its arguments
 * (an object or the model's JSON text) are parsed, and an unreadable text becomes
 * `argumentsError` (the call then ends as `invalid_arguments`, it is not thrown). Throws only
 * for a call without an id or a name.
 */
export function toCall(input: ToolCallInput): NormalizedToolCall {
  if (typeof input !== "object" || input === null) {
    throw new ToolsError("invalid_tool_call", "a tool call must be an object with an id and a name");
  }
  if (typeof input.id !== "string" || input.id === "") {
    throw new ToolsError("invalid_tool_call", "id: a tool call needs a non-empty string id");
  }
  if (typeof input.name !== "string" || input.name === "") {
    throw new ToolsError("invalid_tool_call", `name: tool call ${input.id} needs a non-empty tool name`);
  }
  if (
    "rawArguments" in input &&
    typeof input.rawArguments === "string" &&
    typeof input.arguments === "object"
  ) {
    return input as NormalizedToolCall;
  }
  const parsed = parseToolArguments(input.arguments);
  const call: NormalizedToolCall = {
    id: input.id,
    index: "index" in input && typeof input.index === "number" ? input.index : 0,
    name: input.name,
    arguments: parsed.arguments,
    // Made only if read: for arguments given as an object it is their JSON text.
    get rawArguments() {
      return parsed.raw;
    },
  };
  const argumentsError = input.argumentsError ?? parsed.error;
  if (argumentsError !== undefined) call.argumentsError = argumentsError;
  return call;
}
