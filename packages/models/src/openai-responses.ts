import { normalizeToolCall, type Usage } from "@patchbay/protocol";
import type { AttemptContext, ModelTimeouts } from "./call-timeouts";
import { convertToResponsesInput } from "./convert-to-responses-input";
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
import { OPENAI_BASE_URL } from "./openai";
import { parseEventData, postEventStream, tokenCount } from "./post-event-stream";
import { prepareMessages } from "./prepare-messages";
import { type RetryOptions, streamWithRetries } from "./retry";
import { readSse } from "./sse-parser";

/**
 * Options of {@link openaiResponses}.
 *
 * @example
 * ```ts
 * const options: OpenAIResponsesOptions = { model: "o4-mini", reasoning: { effort: "low", summary: "auto" } };
 * ```
 */
export interface OpenAIResponsesOptions {
  model: string;
  /** Default `https://api.openai.com/v1`; the adapter calls `<baseURL>/responses`. */
  baseURL?: string;
  /** Default: `OPENAI_API_KEY` from `env`. */
  apiKey?: string;
  /** Where the key is read from. Default: the process environment. */
  env?: ModelEnv;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** Sent as `OpenAI-Organization` and `OpenAI-Project`. */
  organization?: string;
  project?: string;
  /** `reasoning` of the request: effort and whether a summary streams (as `reasoning-delta`). */
  reasoning?: { effort?: "minimal" | "low" | "medium" | "high"; summary?: "auto" | "concise" | "detailed" };
  /** Sent as `parallel_tool_calls` when tools are offered; `false` also sets the capability. */
  parallelToolCalls?: boolean;
  /** `max_output_tokens` when the request gives no `maxOutputTokens`. Default: none. */
  maxTokens?: number;
  /** Default: images and parallel tool calls on. */
  capabilities?: Partial<ModelCapabilities>;
  retry?: RetryOptions;
  /** Idle and total timeouts of each call (see {@link ModelTimeouts}). */
  timeouts?: ModelTimeouts;
  fetch?: typeof fetch;
}

interface ResponsesEvent {
  type?: string;
  delta?: string;
  item?: { id?: string; type?: string; call_id?: string; name?: string; arguments?: string } & Record<
    string,
    unknown
  >;
  item_id?: string;
  response?: {
    status?: string;
    incomplete_details?: { reason?: string } | null;
    usage?: { input_tokens?: number; output_tokens?: number } | null;
    error?: unknown;
  };
  code?: unknown;
  message?: unknown;
}

function mapToolChoice(choice: ToolChoice): unknown {
  return typeof choice === "string" ? choice : { type: "function", name: choice.tool };
}

/**
 * A model behind OpenAI's Responses API (`POST /v1/responses`, streamed), stateless: `store:
 * false`, and reasoning items come back with their `encrypted_content` (`include`) so they are
 * sent again, unchanged, before the calls they led to. Text, refusals and reasoning summaries
 * stream as they arrive; each function call is yielded when its item is done; usage and the
 * finish reason come from `response.completed` (`response.incomplete` finishes as `length` or
 * `content_filter`; `response.failed` and `error` events become a `ModelError`).
 *
 * @example
 * ```ts
 * const model = openaiResponses({ model: "o4-mini", reasoning: { effort: "low" } }); // key from OPENAI_API_KEY
 * for await (const event of model.stream({ messages, tools })) console.log(event);
 * ```
 */
export function openaiResponses(options: OpenAIResponsesOptions): LanguageModel {
  const baseURL = (options.baseURL ?? OPENAI_BASE_URL).replace(/\/+$/, "");
  const apiKey = options.apiKey ?? readEnv("OPENAI_API_KEY", options.env);
  if (apiKey === undefined && baseURL === OPENAI_BASE_URL) {
    throw new ModelError("authentication", "openai: no API key: set OPENAI_API_KEY or pass apiKey");
  }
  const capabilities: ModelCapabilities = {
    images: options.capabilities?.images ?? true,
    parallelToolCalls: options.capabilities?.parallelToolCalls ?? options.parallelToolCalls ?? true,
  };
  const url = `${baseURL}/responses`;
  const headers: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
  if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
  if (options.organization) headers["openai-organization"] = options.organization;
  if (options.project) headers["openai-project"] = options.project;
  Object.assign(headers, options.headers);
  const fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));

  async function* attempt(
    body: string,
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
    const args = new Map<string, string>();
    let calls = 0;
    let refused = false;
    for await (const sse of readSse(stream)) {
      const event = parseEventData<ResponsesEvent>("openai", sse.data);
      switch (event.type ?? sse.event) {
        case "response.output_text.delta":
          if (event.delta) yield { type: "text-delta", delta: event.delta };
          break;
        case "response.refusal.delta":
          if (event.delta) {
            refused = true;
            yield { type: "refusal-delta", delta: event.delta };
          }
          break;
        case "response.reasoning_summary_text.delta":
          if (event.delta) yield { type: "reasoning-delta", delta: event.delta };
          break;
        case "response.function_call_arguments.delta":
          if (event.item_id) args.set(event.item_id, (args.get(event.item_id) ?? "") + (event.delta ?? ""));
          break;
        case "response.output_item.done": {
          const item = event.item;
          if (item?.type === "function_call") {
            const raw = typeof item.arguments === "string" ? item.arguments : (args.get(item.id ?? "") ?? "");
            yield {
              type: "tool-call",
              call: normalizeToolCall(
                { id: item.call_id, type: "function", function: { name: item.name, arguments: raw } },
                calls,
              ),
            };
            calls++;
          } else if (item?.type === "reasoning") {
            const { status: _status, ...kept } = item;
            yield { type: "reasoning", part: { type: "openai.reasoning", item: kept } };
          }
          break;
        }
        case "response.completed":
        case "response.incomplete": {
          const response = event.response ?? {};
          const usage: Usage = {
            inputTokens: tokenCount(response.usage?.input_tokens),
            outputTokens: tokenCount(response.usage?.output_tokens),
          };
          let reason: FinishReason = calls > 0 ? "tool_calls" : refused ? "refusal" : "stop";
          if (event.type === "response.incomplete") {
            reason = response.incomplete_details?.reason === "content_filter" ? "content_filter" : "length";
          }
          yield { type: "finish", reason, usage };
          return;
        }
        case "response.failed":
          throw modelErrorFromStreamError(
            "openai",
            event.response?.error ?? { message: "the response failed" },
          );
        case "error":
          throw modelErrorFromStreamError("openai", event);
        default:
          break;
      }
    }
    throw new ModelError("unavailable", "openai: the stream ended before the reply was complete");
  }

  return {
    provider: "openai",
    modelId: options.model,
    capabilities,
    stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
      const body: Record<string, unknown> = {
        model: options.model,
        input: convertToResponsesInput(prepareMessages(request.messages, capabilities)),
        stream: true,
        store: false,
        include: ["reasoning.encrypted_content"],
      };
      if (request.tools.length > 0) {
        body.tools = request.tools.map((tool) => ({
          type: "function",
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          strict: false,
        }));
        if (request.toolChoice !== undefined) body.tool_choice = mapToolChoice(request.toolChoice);
        if (options.parallelToolCalls !== undefined) body.parallel_tool_calls = options.parallelToolCalls;
      }
      if (options.reasoning !== undefined) body.reasoning = options.reasoning;
      const maxTokens = request.maxOutputTokens ?? options.maxTokens;
      if (maxTokens !== undefined) body.max_output_tokens = maxTokens;
      if (request.temperature !== undefined) body.temperature = request.temperature;
      const text = JSON.stringify(body);
      return streamWithRetries((context) => attempt(text, context), {
        provider: "openai",
        signal: request.signal,
        retry: options.retry,
        timeouts: options.timeouts,
      });
    },
  };
}
