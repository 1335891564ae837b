import { formatZodIssues, type NormalizedToolCall, normalizeToolCall, type Usage } from "@patchbay/protocol";
import type {
  LanguageModel,
  ModelCapabilities,
  ModelMessage,
  ModelRequest,
  ModelStreamEvent,
} from "./language-model";
import { ModelError } from "./model-error";
import { sleep } from "./retry";
import {
  type ScriptedModelConfig,
  ScriptedModelConfigSchema,
  type ScriptedRuleSchema,
} from "./scripted-config";

type Rule = ReturnType<typeof ScriptedRuleSchema.parse>;
type Groups = Record<string, string | undefined>;

interface ToolOutcomes {
  /** Every result's text, in call order. */
  all: string[];
  /** Results' text by tool name (several calls of one tool joined with a newline). */
  byTool: Map<string, string>;
  failed: boolean;
}

const PLACEHOLDER = /\{([A-Za-z_][\w.-]*)(?::(string|number|integer|boolean|json))?\}/g;
const WHOLE_PLACEHOLDER = /^\{([A-Za-z_][\w.-]*)(?::(string|number|integer|boolean|json))?\}$/;

/**
 * FNV-1a over UTF-16 code units, 52 bits: enough for call ids to differ, pure JS so it runs in
 * every runtime, and stable so a replayed conversation gets the same ids. The 64-bit state is
 * kept in four 16-bit limbs of plain numbers (the multiply by the prime, 2^40 + 0x1b3, is a
 * multiply by 0x1b3 plus a shift by 40 bits): the same ids as BigInt arithmetic, at a tenth of
 * its cost (a BigInt per step and per character).
 */
function stableHash(text: string): string {
  let h0 = 0x2325;
  let h1 = 0x8422;
  let h2 = 0x9ce4;
  let h3 = 0xcbf2;
  for (let i = 0; i < text.length; i++) {
    h0 ^= text.charCodeAt(i);
    const t0 = h0 * 0x1b3;
    let t1 = h1 * 0x1b3;
    let t2 = h2 * 0x1b3 + (h0 << 8);
    let t3 = h3 * 0x1b3 + (h1 << 8);
    t1 += t0 >>> 16;
    t2 += t1 >>> 16;
    t3 += t2 >>> 16;
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
    h3 = t3 & 0xffff;
  }
  // The top 52 bits (the state shifted right by 12): exact in a double.
  return (h3 * 2 ** 36 + h2 * 2 ** 20 + h1 * 16 + (h0 >>> 12)).toString(36).padStart(10, "0");
}

/** What a result's text parsed to, per text, for one render (see {@link parsedText}). */
type ParsedTexts = Map<string, { value: unknown } | undefined>;

/**
 * The text parsed as JSON (`undefined` when it is not JSON), once per render: a reply that names
 * several fields of one result (`{results.lookup_order.status}`, `{results.lookup_order.eta}`)
 * parses its text once, not once per field. The values are only read, never changed.
 */
function parsedText(text: string, parsed: ParsedTexts): { value: unknown } | undefined {
  if (parsed.has(text)) return parsed.get(text);
  let found: { value: unknown } | undefined;
  try {
    found = { value: JSON.parse(text) };
  } catch {
    found = undefined;
  }
  parsed.set(text, found);
  return found;
}

function pathValue(text: string, path: string[], parsed: ParsedTexts): unknown {
  if (path.length === 0) return text;
  const found = parsedText(text, parsed);
  if (found === undefined) return undefined;
  let value = found.value;
  for (const segment of path) {
    if (typeof value !== "object" || value === null) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** `undefined` means the name is not one the template language knows, so it stays as written. */
function lookup(
  name: string,
  groups: Groups,
  outcomes: ToolOutcomes,
  parsed: ParsedTexts,
): { value: unknown } | undefined {
  const [head, ...rest] = name.split(".");
  if (head === "result") return { value: pathValue(outcomes.all.join("\n"), rest, parsed) };
  if (head === "results" && rest.length > 0) {
    const text = outcomes.byTool.get(rest[0]!);
    return { value: text === undefined ? undefined : pathValue(text, rest.slice(1), parsed) };
  }
  if (rest.length === 0 && head !== undefined && head in groups) return { value: groups[head] };
  return undefined;
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function renderText(template: string, groups: Groups, outcomes: ToolOutcomes): string {
  const parsed: ParsedTexts = new Map();
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    const found = lookup(name, groups, outcomes, parsed);
    return found === undefined ? whole : asText(found.value);
  });
}

function convert(value: string, type: string | undefined): unknown {
  switch (type) {
    case "number":
    case "integer": {
      const number = Number(value);
      if (Number.isNaN(number)) return value;
      return type === "integer" ? Math.trunc(number) : number;
    }
    case "boolean":
      return /^(true|yes|on|1)$/i.test(value.trim());
    case "json":
      try {
        return JSON.parse(value);
      } catch {
        return value;
      }
    default:
      return value;
  }
}

const OMIT = Symbol("omit");
const NO_RESULTS: ToolOutcomes = { all: [], byTool: new Map(), failed: false };

/** A step of a paced reply: wait `delayMs` before the next word. */
const PAUSE = Symbol("pause");

/**
 * A stream of steps that never wait (no {@link PAUSE} among them): each `next` takes the next step
 * at once, as an async generator's body would run up to its next `yield`, and a step that throws
 * rejects that `next` and ends the stream. Breaking out of the reader's loop ends it too.
 */
class ImmediateStream implements AsyncIterableIterator<ModelStreamEvent> {
  private done = false;

  constructor(private readonly steps: Iterator<ModelStreamEvent | typeof PAUSE, void, undefined>) {}

  next(): Promise<IteratorResult<ModelStreamEvent, void>> {
    if (this.done) return Promise.resolve({ done: true, value: undefined });
    try {
      const step = this.steps.next();
      if (step.done) this.done = true;
      return Promise.resolve(step as IteratorResult<ModelStreamEvent, void>);
    } catch (error) {
      this.done = true;
      return Promise.reject(error);
    }
  }

  return(): Promise<IteratorResult<ModelStreamEvent, void>> {
    this.done = true;
    this.steps.return?.();
    return Promise.resolve({ done: true, value: undefined });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

function fillArguments(value: unknown, groups: Groups, depth = 0): unknown {
  if (depth > 32) return value;
  if (typeof value === "string") {
    const whole = WHOLE_PLACEHOLDER.exec(value);
    if (whole && whole[1]! in groups) {
      const group = groups[whole[1]!];
      return group === undefined ? OMIT : convert(group, whole[2]);
    }
    return renderText(value, groups, NO_RESULTS);
  }
  if (Array.isArray(value)) {
    return value.map((item) => fillArguments(item, groups, depth + 1)).filter((item) => item !== OMIT);
  }
  if (typeof value === "object" && value !== null) {
    const filled: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const result = fillArguments(item, groups, depth + 1);
      if (result !== OMIT) filled[key] = result;
    }
    return filled;
  }
  return value;
}

/**
 * A match's named groups as a plain object, as `{ ...match.groups }` makes it: the key by key copy
 * is about twice as fast (the groups object has no prototype, which sends a spread to V8's slow path).
 */
function ownGroups(groups: Groups | undefined): Groups {
  const copy: Groups = {};
  if (groups) for (const name in groups) copy[name] = groups[name];
  return copy;
}

/** Words with their trailing space, the way a real model's tokens arrive. */
function deltas(text: string): string[] {
  return text.match(/\s+|\S+\s*/g) ?? [];
}

function estimateTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

function messageChars(message: ModelMessage): number {
  if (message.role === "tool") return message.content.text.length;
  if (message.role === "assistant") {
    return message.content.length + (message.toolCalls ?? []).reduce((n, c) => n + c.rawArguments.length, 0);
  }
  return message.content.length;
}

/**
 * The offline model: a rule-based stand-in, never a language model. It matches the latest user
 * message against its rules in order; the first matching rule makes its tool calls (arguments
 * filled from the regex's named groups) and, once their results are in the conversation, sends
 * its reply templated from them. When no rule matches it sends the fallback. It is deterministic:
 * the same conversation always gives the same text, the same calls and the same call ids (a hash
 * of the user message and its position), so demos, tests and CI run with no API key.
 *
 * @example
 * ```ts
 * const model = scripted({
 *   rules: [{
 *     match: "where is order (?<order_id>[A-Z0-9]+)",
 *     toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{order_id}" } }],
 *     reply: "Order {order_id} is {results.lookup_order.status}.",
 *   }],
 *   fallback: "I can only look up orders.",
 * });
 * ```
 */
export function scripted(config: ScriptedModelConfig = {}): LanguageModel {
  const parsed = ScriptedModelConfigSchema.safeParse(config);
  if (!parsed.success) {
    throw new ModelError(
      "bad_request",
      `scripted: invalid config: ${formatZodIssues(parsed.error).join("; ")}`,
    );
  }
  const settings = parsed.data;
  const rules = settings.rules.map((rule) => ({ rule, regex: new RegExp(rule.match, rule.flags) }));
  const capabilities: ModelCapabilities = {
    images: settings.capabilities?.images ?? true,
    parallelToolCalls: settings.capabilities?.parallelToolCalls ?? true,
  };

  /**
   * The reply as steps, computed as they are taken: its events, and before each word after the
   * first a {@link PAUSE} when `delayMs` is set. The abort checks are where the stream makes them.
   */
  function* steps(request: ModelRequest): Generator<ModelStreamEvent | typeof PAUSE, void, undefined> {
    const { messages, signal } = request;
    const aborted = () => new ModelError("aborted", "scripted: the request was aborted");
    if (signal?.aborted) throw aborted();
    const inputTokens = estimateTokens(messages.reduce((n, m) => n + messageChars(m), 0));

    let userIndex = -1;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i]!.role === "user") {
        userIndex = i;
        break;
      }
    }
    const userMessage = messages[userIndex];
    const userText = userMessage?.role === "user" ? userMessage.content : "";
    let chosen: { rule: Rule; groups: Groups } | undefined;
    for (const { rule, regex } of rules) {
      const match = regex.exec(userText);
      if (match) {
        chosen = { rule, groups: ownGroups(match.groups) };
        break;
      }
    }

    const later = messages.slice(userIndex + 1);
    const callsMade = later.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []) : []));
    if (chosen && request.toolChoice !== "none" && callsMade.length < chosen.rule.toolCalls.length) {
      const pending = chosen.rule.toolCalls.slice(callsMade.length);
      const batch = capabilities.parallelToolCalls ? pending : pending.slice(0, 1);
      let outputChars = 0;
      for (const [index, planned] of batch.entries()) {
        const position = callsMade.length + index;
        const call: NormalizedToolCall = normalizeToolCall(
          {
            id: `call_${stableHash(`${userIndex}\u0000${userText}\u0000${position}`)}`,
            name: planned.tool,
            arguments: fillArguments(planned.arguments, chosen.groups),
          },
          index,
        );
        outputChars += call.rawArguments.length;
        if (signal?.aborted) throw aborted();
        yield { type: "tool-call", call };
      }
      yield {
        type: "finish",
        reason: "tool_calls",
        usage: { inputTokens, outputTokens: estimateTokens(outputChars) },
      };
      return;
    }

    const outcomes: ToolOutcomes = { all: [], byTool: new Map(), failed: false };
    const madeIds = new Set(callsMade.map((call) => call.id));
    for (const message of later) {
      if (message.role !== "tool" || !madeIds.has(message.toolCallId)) continue;
      outcomes.all.push(message.content.text);
      const previous = outcomes.byTool.get(message.toolName);
      outcomes.byTool.set(
        message.toolName,
        previous === undefined ? message.content.text : `${previous}\n${message.content.text}`,
      );
      if (message.isError) outcomes.failed = true;
    }
    let template = settings.fallback;
    if (chosen) {
      const { rule } = chosen;
      template = (outcomes.failed ? (rule.errorReply ?? rule.reply) : rule.reply) ?? "{result}";
    }
    const text = renderText(template, chosen?.groups ?? {}, outcomes);
    for (const [i, delta] of deltas(text).entries()) {
      if (i > 0 && settings.delayMs > 0) yield PAUSE;
      if (signal?.aborted) throw aborted();
      yield { type: "text-delta", delta };
    }
    const usage: Usage = { inputTokens, outputTokens: estimateTokens(text.length) };
    yield { type: "finish", reason: "stop", usage };
  }

  /** With `delayMs`: each pause waits that long (and ends with `aborted` when the signal aborts). */
  async function* paced(request: ModelRequest): AsyncGenerator<ModelStreamEvent, void, undefined> {
    for (const step of steps(request)) {
      if (step === PAUSE) await sleep(settings.delayMs, request.signal, "scripted");
      else yield step;
    }
  }

  function stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
    // Without a delay nothing waits: the steps are handed out as taken, with no async generator
    // (its every event costs a few promises and microtask hops more than the reader's await).
    return settings.delayMs > 0 ? paced(request) : new ImmediateStream(steps(request));
  }

  return {
    provider: "scripted",
    modelId: settings.model,
    capabilities,
    stream,
  };
}
