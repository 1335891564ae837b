import type { DispatchResult, DispatchResultEntry } from "./dispatch-result";

/**
 * The base of every error `@patchbay/tools` throws. `code` is stable; switch on it, never on the
 * message.
 *
 * @example
 * ```ts
 * try { tools.register(def); } catch (e) { if (e instanceof ToolsError) console.log(e.code); }
 * ```
 */
export class ToolsError extends Error {
  // Fields set by a constructor are `declare`d in this package: no field definitions are emitted,
  // which keeps a page's bundle smaller.
  declare readonly code: string;
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ToolsError";
    this.code = code;
  }
}

/**
 * A tool definition that cannot be registered: empty or invalid name, duplicate name, missing
 * description, a schema that is not an object schema, a bad limit. `field` names what was wrong.
 *
 * @example
 * ```ts
 * try { tools.register({ name: "x", description: "", run }); }
 * catch (e) { (e as ToolDefinitionError).field; } // "description"
 * ```
 */
export class ToolDefinitionError extends ToolsError {
  /** The tool's name as given (may be the invalid one). */
  declare readonly tool: string;
  /** The definition field that was wrong (`name`, `parameters`, `approval.title`, ...). */
  declare readonly field: string;
  constructor(tool: string, field: string, message: string) {
    super("invalid_tool_definition", `tool ${JSON.stringify(tool)}: ${field}: ${message}`);
    this.name = "ToolDefinitionError";
    this.tool = tool;
    this.field = field;
  }
}

/**
 * Throw it from a tool's `run` to tell the model what went wrong in words meant for it. The
 * message becomes the tool result's text as is; `code` travels in the result's `error`.
 *
 * @example
 * ```ts
 * run: async ({ order_id }) => {
 *   const order = await orders.find(order_id);
 *   if (!order) throw new ToolError(`No order ${order_id}. Ask the caller to read the number again.`);
 *   return order;
 * }
 * ```
 */
export class ToolError extends ToolsError {
  constructor(message: string, options: { code?: string; cause?: unknown } = {}) {
    super(options.code ?? "tool_error", message, options);
    this.name = "ToolError";
  }
}

/**
 * `ctx.disallowInterruptions()` was called on a call that was already interrupted, cancelled or
 * timed out: the change must not start.
 *
 * @example
 * ```ts
 * const held = await ctx.disallowInterruptions(); // rejects with CallNotHeld after an interrupt
 * return airline.book({ flightId, signal: held });
 * ```
 */
export class CallNotHeld extends ToolsError {
  /** The id of the call that could not be held. */
  declare readonly callId: string;
  /**
   * Why: how the call had ended (`interrupted`, `cancelled`, `timed out`, `finished`), or that
   * the server refused the hold (`refused by the server (cancelling)`).
   */
  declare readonly reason: string;
  constructor(callId: string, reason: string) {
    super(
      "call_not_held",
      reason.startsWith("refused") || reason.startsWith("not confirmed")
        ? `tool call ${callId} cannot be held: the hold was ${reason}`
        : `tool call ${callId} cannot be held: it was ${reason} before it disallowed interruptions`,
    );
    this.name = "CallNotHeld";
    this.callId = callId;
    this.reason = reason;
  }
}

/**
 * A tool returned something that cannot become a tool result: an image that is not an https URL
 * or inline data of a known type, an image over 5 MB, a value with no JSON form.
 *
 * @example
 * ```ts
 * try { toToolOutputContent(value); } catch (e) { if (e instanceof ToolOutputError) console.log(e.path, e.message); }
 * ```
 */
export class ToolOutputError extends ToolsError {
  /** Where in the output the problem is (`images.0`), when known. */
  declare readonly path: string | undefined;
  constructor(message: string, options: { path?: string; cause?: unknown } = {}) {
    super("invalid_tool_output", message, options);
    this.name = "ToolOutputError";
    this.path = options.path;
  }
}

/**
 * An option given to `ToolExecutor`, `ToolLimiter`, an idempotency store or `dispatchToolCalls`
 * is out of range (`maxConcurrentCalls: 0`), or a batch has more calls than `maxCalls` allows.
 *
 * @example
 * ```ts
 * try { await dispatchToolCalls(calls, { handlers, maxCalls: 4 }); }
 * catch (e) { if (e instanceof ToolsOptionError) console.log(e.option); } // "maxCalls"
 * ```
 */
export class ToolsOptionError extends ToolsError {
  /** The option that was wrong. */
  declare readonly option: string;
  constructor(option: string, message: string, code = "invalid_option") {
    super(code, `${option}: ${message}`);
    this.name = "ToolsOptionError";
    this.option = option;
  }
}

/** Throws a {@link ToolsOptionError} unless `value` is a positive integer (or undefined). */
export function assertPositiveInteger(option: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ToolsOptionError(option, `must be a positive integer, got ${describeValue(value)}`);
  }
}

/** A short description of a value for error messages: `"abc"`, `1.5`, `an array`, `null`. */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value === "undefined") return "undefined";
  return `a ${typeof value}`;
}

/**
 * `dispatchToolCalls` under `onError: "fail_fast"` (the default): a call failed (or the dispatch
 * was aborted), so the batch stopped and the dispatch rejects. `result` holds every entry so far,
 * in call order: the failure, calls cancelled because of it and calls never started, each with
 * its tool message. `failed` is the entry that stopped the batch (the first failed one when the
 * signal aborted it). Code `tool_dispatch_failed`.
 *
 * @example
 * ```ts
 * try { await dispatchToolCalls(calls, { handlers }); }
 * catch (e) { if (e instanceof ToolDispatchError) history.push(...e.result.messages); }
 * ```
 */
export class ToolDispatchError extends ToolsError {
  /** The partial results, in call order. */
  declare readonly result: DispatchResult;
  /** The entry that stopped the batch. */
  declare readonly failed: DispatchResultEntry;
  /** `failed`: a tool call failed; `aborted`: the dispatch's signal aborted. */
  declare readonly reason: "failed" | "aborted";
  constructor(result: DispatchResult, failed: DispatchResultEntry, reason: "failed" | "aborted") {
    super(
      "tool_dispatch_failed",
      reason === "aborted"
        ? `the tool dispatch was aborted; ${result.errors} of ${result.count} calls did not succeed`
        : `tool call ${failed.id} (${failed.name}) failed: ${failed.error ?? failed.outcome}`,
    );
    this.name = "ToolDispatchError";
    this.result = result;
    this.failed = failed;
    this.reason = reason;
  }
}
