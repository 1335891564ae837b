import type { NormalizedToolCall } from "@patchbay/protocol";

/**
 * A call whose arguments came as an object (the common case), taken as they are, as the Node
 * entry makes them (`fastPaths.objectCall`): their JSON text is made only if read. A class, so
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

/** The call for `input` when its arguments are an object (not an array), else undefined. */
export function objectArgumentsCall(
  input: { id: string; name: string; arguments?: unknown; argumentsError?: string },
  index: number,
): ObjectArgumentsCall | undefined {
  const args = input.arguments;
  return typeof args === "object" && args !== null && !Array.isArray(args)
    ? new ObjectArgumentsCall(input as { id: string; name: string; arguments: object }, index)
    : undefined;
}
