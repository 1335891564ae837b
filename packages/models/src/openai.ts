import { type NormalizedToolCall, normalizeToolCall, type ToolSpec, type Usage } from "@patchbay/protocol";
import type { AttemptContext, ModelTimeouts } from "./call-timeouts";
import { convertToOpenAIMessages } from "./convert-to-openai-messages";
import { type ModelEnv, readEnv } from "./env";
import type {
  FinishReason,
  LanguageModel,
  ModelCapabilities,
  ModelRequest,
  ModelStreamEvent,
  ToolChoice,
} from "./language-model";
import { ModelError, modelErrorFromStreamError } from "./model-error";
import { stripStrictNulls, toStrictJsonSchema } from "./openai-strict-schema";
import { parseEventData, postEventStream, tokenCount } from "./post-event-stream";
import { prepareMessages } from "./prepare-messages";
import { type RetryOptions, streamWithRetries } from "./retry";
import { readSse } from "./sse-parser";

/**
 * The default `baseURL` of {@link openai}.
 *
 * @example
 * ```ts
 * openai({ model: "gpt-4o-mini", baseURL: OPENAI_BASE_URL });
 * ```
 */
export const OPENAI_BASE_URL = "https://api.openai.com/v1";

/**
 * Options of {@link openai}.
 *
 * @example
 * ```ts
 * const options: OpenAIOptions = { model: "llama3.1", baseURL: "http://localhost:11434/v1" };
 * ```
 */
export interface OpenAIOptions {
  /** The model name the server knows (`gpt-4o-mini`, `llama3.1`, an Azure deployment's model). */
  model: string;
  /** Any OpenAI-compatible server's `/v1` root. Default `https://api.openai.com/v1`. */
  baseURL?: string;
  /**
   * Default: `OPENAI_API_KEY` from `env` (`AZURE_OPENAI_API_KEY` first with `azure`). Required
   * for OpenAI and Azure; a server at another `baseURL` is called without a key when none is set.
   */
  apiKey?: string;
  /** Where the key is read from. Default: the process environment. */
  env?: ModelEnv;
  /** Extra HTTP headers sent with every request. */
  headers?: Record<string, string>;
  /** Extra query parameters added to the URL (Azure's `api-version`, a proxy's routing key). */
  query?: Record<string, string>;
  /** Sent as `OpenAI-Organization`. */
  organization?: string;
  /** Sent as `OpenAI-Project`. */
  project?: string;
  /**
   * Azure OpenAI: sends the key as `api-key` and adds `api-version` to the URL. Set `baseURL` to
   * `https://<resource>.openai.azure.com/openai/deployments/<deployment>`.
   */
  azure?: { apiVersion: string };
  /** Sends tools with `strict: true` and their schemas rewritten for strict mode. */
  strictTools?: boolean;
  /** Sent as `parallel_tool_calls` when tools are offered; `false` also sets the capability. */
  parallelToolCalls?: boolean;
  /**
   * Sends `stream_options: { include_usage: true }` so the stream ends with token usage. Default
   * true; set false for servers that refuse the field (Mistral, some Azure AI Foundry endpoints
   * answer 422), whose usage then counts as 0 unless they send it anyway.
   */
  includeUsage?: boolean;
  /** Idle and total timeouts of each call (see {@link ModelTimeouts}). */
  timeouts?: ModelTimeouts;
  /**
   * Default: images on for OpenAI and Azure, off for other servers (most local models read text
   * only, and sending them an image part fails the request).
   */
  capabilities?: Partial<ModelCapabilities>;
  /**
   * The body field for `maxOutputTokens`. Default `max_completion_tokens` for OpenAI and Azure
   * (required by reasoning models), `max_tokens` elsewhere (what compatible servers know).
   */
  maxTokensField?: "max_completion_tokens" | "max_tokens";
  /** The cap on each reply's tokens when the request gives no `maxOutputTokens`. Default: none. */
  maxTokens?: number;
  /** Retries of rate limits, 5xx and failed connections. */
  retry?: RetryOptions;
  /** A `fetch` to use instead of the global one (a proxy, a recorder). */
  fetch?: typeof fetch;
}

interface ChatToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
  /** Gemini's OpenAI-compatible API: `{ google: { thought_signature } }`. */
  extra_content?: { google?: { thought_signature?: unknown } };
}

interface ChatChunk {
  choices?: Array<{
    index?: number;
    delta?: {
      content?: string | null;
      refusal?: string | null;
      reasoning_content?: string | null;
      reasoning?: string | null;
      tool_calls?: ChatToolCallDelta[] | null;
    };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: unknown;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
  thoughtSignature?: string;
}

function mapFinishReason(reason: string): FinishReason {
  switch (reason) {
    case "stop":
      return "stop";
    case "tool_calls":
    case "function_call":
      return "tool_calls";
    case "length":
      return "length";
    case "content_filter":
      return "content_filter";
    default:
      return "other";
  }
}

function mapToolChoice(choice: ToolChoice): unknown {
  return typeof choice === "string" ? choice : { type: "function", function: { name: choice.tool } };
}

/**
 * A model behind the OpenAI Chat Completions API, streamed: OpenAI itself, Azure OpenAI, and every
 * compatible server (vLLM, Ollama, llama.cpp's server, LM Studio) through `baseURL`. Tool-call
 * argument deltas are assembled per `index`, the calls are yielded in index order once the reply
 * finishes, and token usage is read from the usage chunk (`stream_options.include_usage`).
 *
 * @example
 * ```ts
 * const model = openai({ model: "gpt-4o-mini" }); // key from OPENAI_API_KEY
 * const local = openai({ model: "llama3.1", baseURL: "http://localhost:11434/v1" });
 * ```
 */
export function openai(options: OpenAIOptions): LanguageModel {
  const baseURL = (options.baseURL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const official = baseURL === OPENAI_BASE_URL;
  const azure = options.azure;
  const apiKey =
    options.apiKey ??
    (azure ? readEnv("AZURE_OPENAI_API_KEY", options.env) : undefined) ??
    readEnv("OPENAI_API_KEY", options.env);
  if (apiKey === undefined && (official || azure)) {
    const variable = azure ? "AZURE_OPENAI_API_KEY" : "OPENAI_API_KEY";
    throw new ModelError("authentication", `openai: no API key: set ${variable} or pass apiKey`);
  }
  const capabilities: ModelCapabilities = {
    images: options.capabilities?.images ?? (official || azure !== undefined),
    parallelToolCalls: options.capabilities?.parallelToolCalls ?? options.parallelToolCalls ?? true,
  };
  const maxTokensField =
    options.maxTokensField ?? (official || azure ? "max_completion_tokens" : "max_tokens");
  const query = new URLSearchParams(options.query);
  if (azure) query.set("api-version", azure.apiVersion);
  const search = query.toString();
  const url = `${baseURL}/chat/completions${search ? `?${search}` : ""}`;
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
  };
  if (apiKey !== undefined) {
    if (azure) headers["api-key"] = apiKey;
    else headers.authorization = `Bearer ${apiKey}`;
  }
  if (options.organization) headers["openai-organization"] = options.organization;
  if (options.project) headers["openai-project"] = options.project;
  Object.assign(headers, options.headers);
  const fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));

  function toolsOf(tools: ToolSpec[]): {
    wire: unknown[];
    strictSchemas: Map<string, Record<string, unknown>>;
  } {
    const strictSchemas = new Map<string, Record<string, unknown>>();
    const wire = tools.map((tool) => {
      const fn: Record<string, unknown> = {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
      };
      const strict = options.strictTools ? toStrictJsonSchema(tool.parameters) : undefined;
      if (strict !== undefined) {
        fn.parameters = strict;
        fn.strict = true;
        strictSchemas.set(tool.name, tool.parameters);
      }
      return { type: "function", function: fn };
    });
    return { wire, strictSchemas };
  }

  async function* attempt(
    body: string,
    strictSchemas: Map<string, Record<string, unknown>>,
    context: AttemptContext,
  ): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const stream = await postEventStream({
      provider: "openai",
      fetch: fetchImpl,
      url,
      headers,
      body,
      ...context,
    });

    const calls = new Map<number, PartialCall>();
    let finishReason: string | undefined;
    let usage: Usage = { inputTokens: 0, outputTokens: 0 };
    let done = false;
    let callsYielded = false;
    let refused = false;
    // The call the latest tool-call delta went to: a continuation with neither index nor id belongs to it.
    let current: number | undefined;

    const completedCalls = (): Array<{ call: NormalizedToolCall; thoughtSignature?: string }> =>
      [...calls.entries()]
        .sort(([a], [b]) => a - b)
        .map(([, partial], position) => {
          const call = normalizeToolCall(
            {
              id: partial.id,
              type: "function",
              function: { name: partial.name, arguments: partial.arguments },
            },
            position,
          );
          const original = strictSchemas.get(call.name);
          if (original !== undefined && call.argumentsError === undefined) {
            call.arguments = stripStrictNulls(call.arguments, original);
          }
          return partial.thoughtSignature === undefined
            ? { call }
            : { call, thoughtSignature: partial.thoughtSignature };
        });
    function* yieldCalls(): Generator<ModelStreamEvent> {
      callsYielded = true;
      for (const { call, thoughtSignature } of completedCalls()) {
        if (thoughtSignature !== undefined) {
          yield {
            type: "reasoning",
            part: { type: "google.thought_signature", toolCallId: call.id, signature: thoughtSignature },
          };
        }
        yield { type: "tool-call", call };
      }
    }

    // A few compatible servers leave out `index`. A piece with an id is the call with that id (a
    // new one if unknown); a piece with neither index nor id continues the call in progress, unless
    // it names a function while that call already has a name (then it starts the next call).
    const indexOf = (piece: ChatToolCallDelta): number => {
      if (piece.index !== undefined) return piece.index;
      if (piece.id) {
        for (const [index, call] of calls) if (call.id === piece.id) return index;
        return nextIndex();
      }
      const inProgress = current === undefined ? undefined : calls.get(current);
      if (inProgress === undefined) return nextIndex();
      if (piece.function?.name && inProgress.name) return nextIndex();
      return current as number;
    };
    const nextIndex = (): number => (calls.size === 0 ? 0 : Math.max(...calls.keys()) + 1);

    for await (const event of readSse(stream)) {
      if (event.data === "[DONE]") {
        done = true;
        break;
      }
      const chunk = parseEventData<ChatChunk>("openai", event.data);
      if (chunk.error !== undefined && chunk.error !== null)
        throw modelErrorFromStreamError("openai", chunk.error);
      if (chunk.usage) {
        usage = {
          inputTokens: tokenCount(chunk.usage.prompt_tokens),
          outputTokens: tokenCount(chunk.usage.completion_tokens),
        };
      }
      const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
      if (choice === undefined) continue;
      const delta = choice.delta;
      const content = delta?.content;
      if (typeof content === "string" && content !== "") yield { type: "text-delta", delta: content };
      if (typeof delta?.refusal === "string" && delta.refusal !== "") {
        refused = true;
        yield { type: "refusal-delta", delta: delta.refusal };
      }
      const thinking = delta?.reasoning_content ?? delta?.reasoning;
      if (typeof thinking === "string" && thinking !== "") yield { type: "reasoning-delta", delta: thinking };
      for (const piece of delta?.tool_calls ?? []) {
        const index = indexOf(piece);
        current = index;
        const partial = calls.get(index) ?? { id: "", name: "", arguments: "" };
        calls.set(index, partial);
        if (piece.id && !partial.id) partial.id = piece.id;
        if (piece.function?.name && !partial.name) partial.name = piece.function.name;
        if (typeof piece.function?.arguments === "string") partial.arguments += piece.function.arguments;
        const signature = piece.extra_content?.google?.thought_signature;
        if (typeof signature === "string" && signature !== "") partial.thoughtSignature = signature;
      }
      if (choice.finish_reason) {
        finishReason = choice.finish_reason;
        if (!callsYielded) yield* yieldCalls();
      }
    }
    // A server that closes without `[DONE]` but after a finish_reason gave a whole reply; without
    // either the connection ended early.
    if (!done && finishReason === undefined) {
      throw new ModelError("unavailable", "openai: the stream ended before the reply was complete");
    }
    if (!callsYielded) yield* yieldCalls();
    let reason = mapFinishReason(finishReason ?? "stop");
    // Some compatible servers (Ollama among them) report "stop" for a reply that called tools.
    if (calls.size > 0 && reason === "stop") reason = "tool_calls";
    // OpenAI ends a refusal with "stop"; the caller needs to know the reply is one.
    if (refused && reason === "stop") reason = "refusal";
    yield { type: "finish", reason, usage };
  }

  return {
    provider: "openai",
    modelId: options.model,
    capabilities,
    stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
      const { wire, strictSchemas } = toolsOf(request.tools);
      const body: Record<string, unknown> = {
        model: options.model,
        messages: convertToOpenAIMessages(prepareMessages(request.messages, capabilities)),
        stream: true,
      };
      if (options.includeUsage !== false) body.stream_options = { include_usage: true };
      if (wire.length > 0) {
        body.tools = wire;
        if (request.toolChoice !== undefined) body.tool_choice = mapToolChoice(request.toolChoice);
        if (options.parallelToolCalls !== undefined) body.parallel_tool_calls = options.parallelToolCalls;
      }
      const maxTokens = request.maxOutputTokens ?? options.maxTokens;
      if (maxTokens !== undefined) body[maxTokensField] = maxTokens;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      const text = JSON.stringify(body);
      return streamWithRetries((context) => attempt(text, strictSchemas, context), {
        provider: "openai",
        signal: request.signal,
        retry: options.retry,
        timeouts: options.timeouts,
      });
    },
  };
}
