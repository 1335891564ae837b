import { type NormalizedToolCall, normalizeToolCall, type ToolSpec, type Usage } from "@patchbay/protocol";
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
import { postEventStream } from "./post-event-stream";
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
   * Default: images on for OpenAI and Azure, off for other servers (most local models read text
   * only, and sending them an image part fails the request).
   */
  capabilities?: Partial<ModelCapabilities>;
  /**
   * The body field for `maxOutputTokens`. Default `max_completion_tokens` for OpenAI and Azure
   * (required by reasoning models), `max_tokens` elsewhere (what compatible servers know).
   */
  maxTokensField?: "max_completion_tokens" | "max_tokens";
  /** Retries of rate limits, 5xx and failed connections. */
  retry?: RetryOptions;
  /** A `fetch` to use instead of the global one (a proxy, a recorder). */
  fetch?: typeof fetch;
}

interface ChatToolCallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface ChatChunk {
  choices?: Array<{
    index?: number;
    delta?: { content?: string | null; tool_calls?: ChatToolCallDelta[] };
    finish_reason?: string | null;
  }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: unknown;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
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

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
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
    signal: AbortSignal | undefined,
  ): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const stream = await postEventStream({
      provider: "openai",
      fetch: fetchImpl,
      url,
      headers,
      body,
      signal,
    });

    const calls = new Map<number, PartialCall>();
    let finishReason: string | undefined;
    let usage: Usage = { inputTokens: 0, outputTokens: 0 };
    let done = false;
    let callsYielded = false;

    const completedCalls = (): NormalizedToolCall[] =>
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
          return call;
        });

    for await (const event of readSse(stream)) {
      if (event.data === "[DONE]") {
        done = true;
        break;
      }
      let chunk: ChatChunk;
      try {
        chunk = JSON.parse(event.data) as ChatChunk;
      } catch {
        throw new ModelError(
          "unavailable",
          `openai: the stream sent data that is not JSON: ${event.data.slice(0, 200)}`,
        );
      }
      if (chunk.error !== undefined && chunk.error !== null)
        throw modelErrorFromStreamError("openai", chunk.error);
      if (chunk.usage) {
        usage = {
          inputTokens: count(chunk.usage.prompt_tokens),
          outputTokens: count(chunk.usage.completion_tokens),
        };
      }
      const choice = chunk.choices?.find((c) => (c.index ?? 0) === 0);
      if (choice === undefined) continue;
      const content = choice.delta?.content;
      if (typeof content === "string" && content !== "") yield { type: "text-delta", delta: content };
      for (const [position, delta] of (choice.delta?.tool_calls ?? []).entries()) {
        // A few compatible servers leave out `index`; the id, or the position in the chunk, stands in.
        let index = delta.index;
        if (index === undefined) {
          const known = [...calls.entries()].find(([, c]) => delta.id !== undefined && c.id === delta.id);
          index = known ? known[0] : delta.id !== undefined ? calls.size : position;
        }
        const partial = calls.get(index) ?? { id: "", name: "", arguments: "" };
        calls.set(index, partial);
        if (delta.id && !partial.id) partial.id = delta.id;
        if (delta.function?.name && !partial.name) partial.name = delta.function.name;
        if (typeof delta.function?.arguments === "string") partial.arguments += delta.function.arguments;
      }
      if (choice.finish_reason) {
        finishReason = choice.finish_reason;
        if (!callsYielded) {
          callsYielded = true;
          for (const call of completedCalls()) yield { type: "tool-call", call };
        }
      }
    }
    // A server that closes without `[DONE]` but after a finish_reason gave a whole reply; without
    // either the connection ended early.
    if (!done && finishReason === undefined) {
      throw new ModelError("unavailable", "openai: the stream ended before the reply was complete");
    }
    if (!callsYielded) {
      for (const call of completedCalls()) yield { type: "tool-call", call };
    }
    let reason = mapFinishReason(finishReason ?? "stop");
    // Some compatible servers (Ollama among them) report "stop" for a reply that called tools.
    if (calls.size > 0 && reason === "stop") reason = "tool_calls";
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
        stream_options: { include_usage: true },
      };
      if (wire.length > 0) {
        body.tools = wire;
        if (request.toolChoice !== undefined) body.tool_choice = mapToolChoice(request.toolChoice);
        if (options.parallelToolCalls !== undefined) body.parallel_tool_calls = options.parallelToolCalls;
      }
      if (request.maxOutputTokens !== undefined) body[maxTokensField] = request.maxOutputTokens;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      const text = JSON.stringify(body);
      return streamWithRetries(() => attempt(text, strictSchemas, request.signal), {
        provider: "openai",
        signal: request.signal,
        retry: options.retry,
      });
    },
  };
}
