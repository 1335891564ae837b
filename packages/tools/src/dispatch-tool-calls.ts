import { type NormalizedToolCall, normalizeToolCalls, type ToolOutcome } from "@patchbay/protocol";
import type { ApprovalGate } from "./approval-gate";
import type { DispatchResult, DispatchResultEntry } from "./dispatch-result";
import { redactErrorText, secretValues } from "./error-text";
import { assertPositiveInteger, ToolDispatchError, ToolError, ToolsOptionError } from "./errors";
import { projectToolInput, type ToolInputMapping } from "./project-tool-input";
import { ToolExecutor } from "./tool-executor";
import { ToolOutput } from "./tool-output";
import { Tools } from "./tools";

/**
 * What a dispatch handler receives beside its input: the call and its parts.
 *
 * @example
 * ```ts
 * const handler = (input: { city: string }, meta: ToolCallMeta) => weather(input.city, { signal: meta.signal });
 * ```
 */
export interface ToolCallMeta {
  call: NormalizedToolCall;
  name: string;
  arguments: Record<string, unknown>;
  id: string;
  index: number;
  /** Aborts when the batch stops (fail_fast after a failure, or the dispatch signal). */
  signal: AbortSignal;
}

/**
 * A handler for one tool name: the function, and optionally the mapping that builds its input
 * per call (see `projectToolInput`); without one, the input is the call's arguments.
 *
 * @example
 * ```ts
 * const getWeather: DispatchHandler = { handler: ({ city }) => weather(city), input: { city: "arguments.city" } };
 * ```
 */
export interface DispatchHandler {
  handler: (input: any, meta: ToolCallMeta) => unknown;
  input?: ToolInputMapping;
}

/**
 * Options of {@link dispatchToolCalls}.
 *
 * @example
 * ```ts
 * const options: DispatchToolCallsOptions = { handlers: { get_weather: getWeather }, context: { user }, onError: "ignore" };
 * ```
 */
export interface DispatchToolCallsOptions {
  /** A `Tools` registry (run through a `ToolExecutor`), or handlers by tool name. */
  handlers: Tools | Record<string, DispatchHandler | DispatchHandler["handler"]>;
  /** What `ctx.*` references and bare context keys in input mappings read. */
  context?: Record<string, unknown>;
  /**
   * `fail_fast` (default): the first failure stops the batch, cancels what runs, and the dispatch
   * rejects with a `ToolDispatchError` carrying the partial results. `ignore`: every call runs and
   * the dispatch resolves with failures recorded in their entries.
   */
  onError?: "fail_fast" | "ignore";
  /**
   * Values to redact from error text, beside the string values under secret-looking keys of
   * `context` (`password`, `token`, `apiKey`, `authorization`, ...), which are redacted anyway.
   */
  redact?: readonly string[];
  /** More calls than this is an error and nothing runs. Default 32. */
  maxCalls?: number;
  /** How many calls run at once. Default 8. */
  concurrency?: number;
  /** Aborting it stops the batch like a failure under `fail_fast`. */
  signal?: AbortSignal;
  /** For a `Tools` registry: the executor to run with (default: a new one with `approvalGate`). */
  executor?: ToolExecutor;
  /** For a `Tools` registry without `executor`: asks before tools with `approval` run (default: they are declined). */
  approvalGate?: ApprovalGate;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** Top-level `_`-prefixed keys of an object result are private to the handler. */
function publicPart(value: unknown): unknown {
  if (!isPlainObject(value)) return value === undefined ? null : value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    if (key.startsWith("_")) continue;
    Object.defineProperty(out, key, {
      value: value[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function contentOf(value: unknown, original: unknown): string {
  if (typeof value === "string") return value;
  if (original === undefined) return "";
  if (original instanceof ToolOutput) return original.text;
  const text = JSON.stringify(value);
  if (text === undefined)
    throw new ToolError(`the handler returned a ${typeof original}, which has no JSON form`);
  return text;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs a batch of tool calls a model made and collects their results. Accepts the calls as the
 * provider sent them (OpenAI Chat or Responses, Anthropic, Gemini) or normalized. Each call goes
 * to the handler of its tool: a `Tools` registry runs it through a `ToolExecutor` (arguments
 * checked, approval, timeouts), a handler map calls the function with the input its mapping
 * projects. Calls to tools with no handler are recorded as unsupported, and a mapped call whose
 * arguments are not valid JSON fails (`invalid_arguments`) without running. More than `maxCalls`
 * calls throws a `ToolsOptionError` (code `too_many_tool_calls`) and nothing runs. Under
 * `fail_fast` (the default) a failure rejects with a `ToolDispatchError` holding the partial
 * results. Error text is redacted and cut to `MAX_ERROR_TEXT` characters.
 *
 * @example
 * ```ts
 * const dispatched = await dispatchToolCalls(completion.choices[0].message.tool_calls, {
 *   handlers: { get_weather: { handler: ({ city, user_id }) => weather(city, user_id), input: { city: "arguments.city", user_id: "ctx.user.id" } } },
 *   context: { user: { id: "u_1" } },
 * });
 * messages.push(...dispatched.messages);
 * ```
 */
export async function dispatchToolCalls(
  calls: unknown,
  options: DispatchToolCallsOptions,
): Promise<DispatchResult> {
  const onError = options.onError ?? "fail_fast";
  if (onError !== "fail_fast" && onError !== "ignore") {
    throw new ToolsOptionError("onError", `must be "fail_fast" or "ignore", got ${JSON.stringify(onError)}`);
  }
  assertPositiveInteger("maxCalls", options.maxCalls);
  assertPositiveInteger("concurrency", options.concurrency);
  if (!options.handlers || typeof options.handlers !== "object") {
    throw new ToolsOptionError("handlers", "must be a Tools registry or an object of handlers by tool name");
  }
  const maxCalls = options.maxCalls ?? 32;
  const normalized = normalizeToolCalls(calls);
  if (normalized.length > maxCalls) {
    throw new ToolsOptionError(
      "maxCalls",
      `the model made ${normalized.length} tool calls, more than maxCalls (${maxCalls}); none were run`,
      "too_many_tool_calls",
    );
  }

  const registry = options.handlers instanceof Tools ? options.handlers : undefined;
  const executor =
    registry &&
    (options.executor ?? new ToolExecutor({ tools: registry, approvalGate: options.approvalGate }));
  const handlers = registry
    ? undefined
    : (options.handlers as Record<string, DispatchHandler | DispatchHandler["handler"]>);

  const batch = new AbortController();
  const entries: (DispatchResultEntry | undefined)[] = new Array(normalized.length);
  const onAbort = () => batch.abort(options.signal?.reason);
  if (options.signal?.aborted) batch.abort(options.signal.reason);
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  const base = (call: NormalizedToolCall, handler: string | null) => ({
    id: call.id,
    name: call.name,
    arguments: call.arguments,
    handler,
  });
  // Error text reaches results, tool messages and ToolDispatchError redacted and bounded.
  const secrets = [...secretValues(options.context), ...(options.redact ?? [])];
  const failed = (
    call: NormalizedToolCall,
    handler: string | null,
    outcome: ToolOutcome,
    error: string,
    content = `Error: ${error}`,
  ): DispatchResultEntry => ({
    success: false,
    ...base(call, handler),
    outcome,
    result: null,
    content: redactErrorText(content, secrets),
    error: redactErrorText(error, secrets),
  });

  const stopReason = () =>
    options.signal?.aborted ? "the dispatch was aborted" : "an earlier tool call failed";

  const runOne = async (call: NormalizedToolCall): Promise<DispatchResultEntry> => {
    const stopped = new Promise<"stopped">((resolve) => {
      if (batch.signal.aborted) resolve("stopped");
      batch.signal.addEventListener("abort", () => resolve("stopped"), { once: true });
    });
    if (executor && registry) {
      if (!registry.has(call.name))
        return failed(call, null, "unknown_tool", `unsupported tool "${call.name}"`);
      const execution = executor.execute(call, { signal: batch.signal });
      const result = await execution;
      if (result.outcome === "completed") {
        const value = publicPart(result.value);
        // Same privacy rule as a mapped handler: the model never sees top-level `_` keys.
        const content = isPlainObject(result.value) ? contentOf(value, result.value) : result.content.text;
        return { success: true, ...base(call, call.name), outcome: "completed", result: value, content };
      }
      const reason =
        result.outcome === "cancelled" && batch.signal.aborted
          ? `cancelled: ${stopReason()}`
          : (result.error?.message ?? result.outcome);
      return failed(call, call.name, result.outcome, reason, result.content.text);
    }
    const entry = handlers && Object.hasOwn(handlers, call.name) ? handlers[call.name] : undefined;
    if (!entry) return failed(call, null, "unknown_tool", `unsupported tool "${call.name}"`);
    const handler = typeof entry === "function" ? entry : entry.handler;
    if (typeof handler !== "function") {
      return failed(call, call.name, "failed", `the handler of "${call.name}" is not a function`);
    }
    // Arguments the model wrote as broken JSON are not `{}`: the handler would run on nulls.
    if (call.argumentsError !== undefined) {
      return failed(
        call,
        call.name,
        "invalid_arguments",
        call.argumentsError,
        `Error: invalid arguments for ${call.name}: ${call.argumentsError}`,
      );
    }
    const controller = new AbortController();
    const relay = () => controller.abort(batch.signal.reason);
    batch.signal.addEventListener("abort", relay, { once: true });
    const meta: ToolCallMeta = {
      call,
      name: call.name,
      arguments: call.arguments,
      id: call.id,
      index: call.index,
      signal: controller.signal,
    };
    try {
      const input =
        typeof entry === "object" && entry.input !== undefined
          ? projectToolInput(entry.input, { call, context: options.context })
          : projectToolInput("arguments", { call });
      const outcome = await Promise.race([Promise.resolve().then(() => handler(input, meta)), stopped]);
      if (outcome === "stopped" && controller.signal.aborted) {
        return failed(call, call.name, "cancelled", `cancelled: ${stopReason()}`);
      }
      const result = publicPart(outcome);
      return {
        success: true,
        ...base(call, call.name),
        outcome: "completed",
        result,
        content: contentOf(result, outcome),
      };
    } catch (error) {
      return failed(call, call.name, "failed", errorMessage(error));
    } finally {
      batch.signal.removeEventListener("abort", relay);
    }
  };

  let stoppedBy: DispatchResultEntry | undefined;
  let next = 0;
  const worker = async () => {
    while (next < normalized.length) {
      const index = next++;
      const call = normalized[index]!;
      if (batch.signal.aborted) {
        entries[index] = failed(call, null, "cancelled", `not run: ${stopReason()}`);
        continue;
      }
      const entry = await runOne(call);
      entries[index] = entry;
      if (!entry.success && onError === "fail_fast" && !batch.signal.aborted) {
        stoppedBy = entry;
        batch.abort(new ToolError(`tool call ${call.id} (${call.name}) failed: ${entry.error}`));
      }
    }
  };
  const width = Math.min(options.concurrency ?? 8, Math.max(1, normalized.length));
  try {
    await Promise.all(Array.from({ length: width }, worker));
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
  }

  const results = entries as DispatchResultEntry[];
  const byId = Object.create(null) as Record<string, DispatchResultEntry>;
  for (const entry of results) byId[entry.id] = entry;
  const errors = results.filter((entry) => !entry.success).length;
  const result: DispatchResult = {
    results,
    count: results.length,
    errors,
    allSucceeded: errors === 0,
    messages: results.map((entry) => ({
      role: "tool" as const,
      tool_call_id: entry.id,
      content: entry.content,
    })),
    byId,
  };
  if (onError === "fail_fast" && errors > 0) {
    const first = stoppedBy ?? results.find((entry) => !entry.success)!;
    throw new ToolDispatchError(result, first, stoppedBy ? "failed" : "aborted");
  }
  return result;
}
