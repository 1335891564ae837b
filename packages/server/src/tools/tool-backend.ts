import type { JsonObject, ToolLocation, ToolResult, ToolSpec, User } from "@patchbay/protocol";
import type { CancelReason, ToolCallHandlers } from "../extensions/dispatch-seams";

/**
 * One tool call, allowed and validated, handed to the place its tool runs, with the timeout the
 * runner decided.
 */
export interface RoutedToolCall {
  callId: string;
  responseId: string;
  spec: ToolSpec;
  arguments: Record<string, unknown>;
  user: User;
  /** How long the call may run (the runner times it out and calls `cancel(callId, "timed_out")`). */
  timeoutMs: number;
  /** The delivery to start from, for a call another node sent before (cluster takeover); default 1. */
  attempt?: number;
  /** What the backend's own `checkArguments` made of the arguments, when it has one. */
  checked?: { value: unknown };
}

/** The result of a backend's own argument check (see {@link ToolBackend.checkArguments}). */
export type ArgumentCheck = { ok: true; value: unknown } | { ok: false; issues: string[] };

/**
 * Where tools of one kind run (the page, a worker, the server process), as the tool-call runner
 * sees it. A backend runs calls and carries cancels; it decides nothing about them. The runner
 * decides when a call is cancelled (an interrupt, the timeout, the session closing), whether a
 * hold is accepted, and what the model is told.
 */
export interface ToolBackend {
  readonly location: ToolLocation;
  /**
   * Whether a cancel crosses a link (a page, a worker): the runner then waits a short grace for
   * the far side to say what happened before it tells the model.
   */
  readonly remote: boolean;
  /** The tools this backend offers the model now. */
  specs(): ToolSpec[];
  has(name: string): boolean;
  /** The longest a call of this tool may run here (the host's or agent's setting). */
  timeoutCeilingMs(spec: ToolSpec): number;
  /**
   * Checks the arguments with the tool's own schema, for a backend that can (in-process tools
   * parse with their zod schema, defaults and transforms included). Without it the runner checks
   * them against the spec's JSON Schema. Either way a call is checked once.
   */
  checkArguments?(spec: ToolSpec, args: JsonObject): Promise<ArgumentCheck>;
  /**
   * Runs a call; resolves with its result as the place it ran reports it, and never rejects. After
   * a `cancel` it still resolves with the far side's answer (a cancelled result, or the real one).
   */
  run(call: RoutedToolCall, handlers: ToolCallHandlers): Promise<ToolResult>;
  /** Asks the place the call runs to stop it; `run` resolves with what happened. */
  cancel(callId: string, reason: CancelReason): void;
}
