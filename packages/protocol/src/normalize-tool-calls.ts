import { ToolCallFormatError } from "./errors";
import { kind } from "./guard";
import type { NormalizedToolCall } from "./tool-call";

/**
 * The provider formats {@link normalizeToolCalls} recognises.
 *
 * @example
 * ```ts
 * detectToolCallFormat({ type: "tool_use", id: "t1", name: "x", input: {} }); // "anthropic"
 * ```
 */
export type ToolCallFormat = "openai-chat" | "openai-responses" | "anthropic" | "gemini" | "normalized";

type Entry = Record<string, unknown>;

function isObject(value: unknown): value is Entry {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Which provider format one entry is in, or `null` when the entry is an object that is not a
 * tool call at all (an Anthropic `text` block, a Responses `message` item, a Gemini text part):
 * those are passed over, since they legitimately sit beside tool calls.
 *
 * @example
 * ```ts
 * detectToolCallFormat({ functionCall: { name: "f", args: {} } }); // "gemini"
 * ```
 */
export function detectToolCallFormat(entry: Entry): ToolCallFormat | null {
  if (entry.type === "tool_use") return "anthropic";
  if (entry.type === "function_call") return "openai-responses";
  if (isObject(entry.function)) return "openai-chat";
  if (isObject(entry.functionCall)) return "gemini";
  if ("name" in entry && ("arguments" in entry || "input" in entry || "args" in entry)) return "normalized";
  if (typeof entry.type === "string" && entry.type !== "function") return null;
  if ("name" in entry) return "normalized";
  if (GEMINI_OTHER_PARTS.some((key) => key in entry)) return null;
  return "normalized";
}

// Gemini parts carry no `type`; these are the kinds that sit beside `functionCall` in a model's
// content and are not calls. Anything else without a name is reported, not skipped.
const GEMINI_OTHER_PARTS = [
  "text",
  "inlineData",
  "fileData",
  "executableCode",
  "codeExecutionResult",
  "functionResponse",
  "thought",
  "thoughtSignature",
  "videoMetadata",
];

/**
 * Parses arguments given as JSON text. Text that is not a JSON object keeps `{}` as the parsed
 * arguments and says why in `error`, so the caller can tell the model.
 *
 * @example
 * ```ts
 * parseToolArguments('{"city":"Berlin"}'); // { arguments: { city: "Berlin" }, raw: '{"city":"Berlin"}' }
 * parseToolArguments("{oops"); // { arguments: {}, raw: "{oops", error: "arguments are not valid JSON: ..." }
 * ```
 */
export function parseToolArguments(value: unknown): {
  arguments: Record<string, unknown>;
  raw: string;
  error?: string;
} {
  if (value === undefined || value === null || value === "")
    return { arguments: {}, raw: value === "" ? "" : "{}" };
  if (isObject(value)) {
    // The JSON text of an object is made only if read: most callers never do.
    return {
      arguments: value,
      get raw() {
        return JSON.stringify(value);
      },
    };
  }
  if (typeof value !== "string") {
    return {
      arguments: {},
      raw: JSON.stringify(value),
      error: `arguments must be a JSON object, got ${kind(value)}`,
    };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    return { arguments: {}, raw: value, error: `arguments are not valid JSON: ${(error as Error).message}` };
  }
  if (!isObject(parsed)) {
    return { arguments: {}, raw: value, error: `arguments must be a JSON object, got ${kind(parsed)}` };
  }
  return { arguments: parsed, raw: value };
}

function pick(entry: Entry, format: ToolCallFormat): { id: unknown; name: unknown; args: unknown } {
  switch (format) {
    case "openai-chat": {
      const fn = entry.function as Entry;
      return { id: entry.id, name: fn.name, args: fn.arguments };
    }
    case "openai-responses":
      // `call_id` is what a function_call_output must echo; `id` is the item's own id.
      return { id: entry.call_id ?? entry.id, name: entry.name, args: entry.arguments };
    case "anthropic":
      return { id: entry.id, name: entry.name, args: entry.input };
    case "gemini": {
      const fc = entry.functionCall as Entry;
      return { id: fc.id ?? entry.id, name: fc.name, args: fc.args };
    }
    case "normalized":
      return {
        id: entry.id,
        name: entry.name,
        args: "arguments" in entry ? entry.arguments : (entry.input ?? entry.args),
      };
  }
}

/**
 * Normalizes one provider tool call. `index` is its position in the batch, used for `index` and
 * for the id of a call that came without one (`call_<index>`), so the same batch always gets the
 * same ids.
 *
 * @example
 * ```ts
 * normalizeToolCall({ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }, 0);
 * ```
 */
export function normalizeToolCall(entry: unknown, index: number, position = index): NormalizedToolCall {
  if (!isObject(entry)) {
    throw new ToolCallFormatError(
      `tool call at position ${position} is ${kind(entry)}, expected an object`,
      position,
    );
  }
  const format = detectToolCallFormat(entry) ?? "normalized";
  const { id, name, args } = pick(entry, format);
  if (typeof name !== "string" || name.length === 0) {
    throw new ToolCallFormatError(`tool call at position ${position} (${format}) has no tool name`, position);
  }
  const parsed = alreadyParsed(entry, format) ?? parseToolArguments(args);
  const call: NormalizedToolCall = {
    id: typeof id === "string" && id.length > 0 ? id : `call_${index}`,
    index,
    name,
    arguments: parsed.arguments,
    rawArguments: parsed.raw,
  };
  if (parsed.error !== undefined) call.argumentsError = parsed.error;
  return call;
}

// A call that is already normalized keeps the text the model produced and the reason it did not
// parse, so normalizing twice gives the same result as normalizing once.
function alreadyParsed(entry: Entry, format: ToolCallFormat): ReturnType<typeof parseToolArguments> | null {
  if (format !== "normalized" || !isObject(entry.arguments) || typeof entry.rawArguments !== "string") {
    return null;
  }
  const parsed: ReturnType<typeof parseToolArguments> = {
    arguments: entry.arguments,
    raw: entry.rawArguments,
  };
  if (typeof entry.argumentsError === "string") parsed.error = entry.argumentsError;
  return parsed;
}

function entriesOf(input: unknown): unknown[] {
  // `message.tool_calls` is absent when the model made no calls.
  if (input === undefined || input === null) return [];
  if (Array.isArray(input)) return input;
  if (isObject(input)) {
    // Whole provider messages: an OpenAI assistant message, an Anthropic message, a Gemini
    // candidate content, a Responses API response.
    if (Array.isArray(input.tool_calls)) return input.tool_calls;
    if (Array.isArray(input.content)) return input.content;
    if (Array.isArray(input.parts)) return input.parts;
    if (Array.isArray(input.output)) return input.output;
    // A message that holds no calls (an assistant message with only text).
    if (typeof input.role === "string") return [];
  }
  // A single call, or something that is not one; normalizeToolCall says which.
  return [input];
}

/**
 * Normalizes a batch of tool calls from any provider format a user will meet: OpenAI Chat
 * Completions `tool_calls`, OpenAI Responses `function_call` items, Anthropic `tool_use` blocks,
 * Gemini `functionCall` parts, or calls already in the normalized form. Also accepts the whole
 * message that holds them (an assistant message with only text gives `[]`), and `undefined` or
 * `null` (no calls). Entries that are not tool calls (text blocks, reasoning items, Gemini text
 * parts) are passed over; entries that are not objects, or calls without a tool name, throw a
 * {@link ToolCallFormatError} that names their position.
 *
 * A call without an id gets `call_<index>`, where `index` counts calls only (not the text blocks
 * between them), so the same batch always gets the same ids.
 *
 * @example
 * ```ts
 * const calls = normalizeToolCalls(completion.choices[0].message.tool_calls);
 * for (const call of calls) console.log(call.id, call.name, call.arguments);
 * ```
 */
export function normalizeToolCalls(input: unknown): NormalizedToolCall[] {
  const calls: NormalizedToolCall[] = [];
  const entries = entriesOf(input);
  entries.forEach((entry, position) => {
    if (isObject(entry) && detectToolCallFormat(entry) === null) return;
    calls.push(normalizeToolCall(entry, calls.length, position));
  });
  return calls;
}
