import type { ToolLocation, ToolResult, ToolSpec, User } from "@patchbay/protocol";
import type { HostedToolHandlers } from "./dispatch-seams";

/**
 * One tool call, allowed and validated, handed to the place its tool runs.
 *
 * @example
 * ```ts
 * const call: RoutedToolCall = { callId: "call_1", responseId: "r_1", spec, arguments: {}, user: { id: "u_1" } };
 * ```
 */
export interface RoutedToolCall {
  callId: string;
  responseId: string;
  spec: ToolSpec;
  arguments: Record<string, unknown>;
  user: User;
}

/**
 * Where tools of one kind run (the page, a worker, the server process), as the turn loop sees
 * it: run a call to its result, and cancel it on an interrupt.
 *
 * @example
 * ```ts
 * const result = await backend.run(call, handlers);
 * backend.interrupt(call.callId); // true when it was cancelled
 * ```
 */
export interface ToolBackend {
  readonly location: ToolLocation;
  /** The tools this backend offers the model now. */
  specs(): ToolSpec[];
  has(name: string): boolean;
  /** Runs a call; resolves with its result and never rejects. */
  run(call: RoutedToolCall, handlers: HostedToolHandlers): Promise<ToolResult>;
  /**
   * An interrupt: cancels the call if its tool is interruptible and it is not held. Returns
   * whether it was cancelled; a call that survives goes on to its result.
   */
  interrupt(callId: string): boolean;
  /** Ids of the calls running now (for shutdown). */
  running?(): string[];
}
