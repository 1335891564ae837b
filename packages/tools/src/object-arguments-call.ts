import type { NormalizedToolCall } from "@patchbay/protocol";
import { type ToolCallInput, toCall } from "./tool-call-input";

/**
 * A call whose arguments came as an object (the common case), taken as they are, as the Node
 * entry makes them (`toObjectArgumentsCall`): their JSON text is made only if read. A class, so
 * every such call shares one shape and one getter: the object literal with a getter that
 * tool-call-input.ts makes otherwise has a new getter, and a new hidden class, per call, which
 * leaves every place that reads a call's fields looking at thousands of shapes.
 */
export class ObjectArgumentsCall implements NormalizedToolCall {
  readonly id: string;
  readonly index: number;
  readonly name: string;
  readonly arguments: Record<string, unknown>;
  argumentsError: string | undefined;

  constructor(
    input: { id: string; name: string; arguments: object; argumentsError?: string },
    index: number,
  ) {
    this.id = input.id;
    this.index = index;
    this.name = input.name;
    this.arguments = input.arguments as Record<string, unknown>;
    this.argumentsError = input.argumentsError;
  }

  get rawArguments(): string {
    return JSON.stringify(this.arguments);
  }
}

/**
 * `toCall` as the Node entry installs it (`useFastPaths`): an input that is an id, a name
 * and object arguments (not an array) becomes an {@link ObjectArgumentsCall}; every other input
 * goes to tool-call-input.ts's `toCall`, which also says what is wrong with a bad one.
 */
export function toObjectArgumentsCall(input: ToolCallInput): NormalizedToolCall {
  return objectArgumentsCall(input) ?? toCall(input);
}

/** The call for an input of an id, a name and object arguments, else undefined. */
export function objectArgumentsCall(input: ToolCallInput): ObjectArgumentsCall | undefined {
  if (typeof input !== "object" || input === null || "rawArguments" in input) return undefined;
  const { id, name, arguments: args } = input;
  if (typeof id !== "string" || id === "" || typeof name !== "string" || name === "") return undefined;
  if (typeof args !== "object" || args === null || Array.isArray(args)) return undefined;
  // The index as toCall reads it: 0 unless the input says.
  const index = "index" in input && typeof input.index === "number" ? input.index : 0;
  return new ObjectArgumentsCall(input as { id: string; name: string; arguments: object }, index);
}
