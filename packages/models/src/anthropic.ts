import { normalizeToolCall, type Usage } from "@patchbay/protocol";
import type { AttemptContext, ModelTimeouts } from "./call-timeouts";
import { convertToAnthropicMessages } from "./convert-to-anthropic-messages";
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
import { parseEventData, postEventStream, tokenCount } from "./post-event-stream";
import { prepareMessages } from "./prepare-messages";
import { type RetryOptions, streamWithRetries } from "./retry";
import { readSse } from "./sse-parser";

/**
 * The default `baseURL` of {@link anthropic}.
 *
 * @example
 * ```ts
 * anthropic({ model: "claude-sonnet-4-5", baseURL: ANTHROPIC_BASE_URL });
 * ```
 */
export const ANTHROPIC_BASE_URL = "https://api.anthropic.com";

/**
 * Options of {@link anthropic}.
 *
 * @example
 * ```ts
 * const options: AnthropicOptions = { model: "claude-sonnet-4-5", maxTokens: 2048 };
 * ```
 */
export interface AnthropicOptions {
  model: string;
  /** Default `https://api.anthropic.com`; the adapter calls `<baseURL>/v1/messages`. */
  baseURL?: string;
  /** Default: `ANTHROPIC_API_KEY` from `env`. */
  apiKey?: string;
  /** Where the key is read from. Default: the process environment. */
  env?: ModelEnv;
  /** `max_tokens` when the request gives no `maxOutputTokens` (the API requires one). Default 4096. */
  maxTokens?: number;
  /** Sent as `anthropic-version`. Default `2023-06-01`. */
  anthropicVersion?: string;
  /** Extra HTTP headers (`anthropic-beta`, a gateway's auth). */
  headers?: Record<string, string>;
  /** `false` sets `disable_parallel_tool_use` and the capability. */
  parallelToolCalls?: boolean;
  /** Default: images and parallel tool calls on. */
  capabilities?: Partial<ModelCapabilities>;
  /** Retries of rate limits, overload, 5xx and failed connections. */
  retry?: RetryOptions;
  /**
   * Extended thinking: sent as `thinking: { type: "enabled", budget_tokens }`. The thinking blocks
   * (with their signatures) are yielded as `reasoning` parts and sent back in the tool loop.
   */
  thinking?: { budgetTokens: number };
  /** Idle and total timeouts of each call (see {@link ModelTimeouts}). */
  timeouts?: ModelTimeouts;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

interface StreamEvent {
  type?: string;
  index?: number;
  message?: { usage?: Record<string, unknown> };
  content_block?: {
    type?: string;
    id?: string;
    name?: string;
    input?: unknown;
    thinking?: string;
    signature?: string;
    data?: string;
  };
  delta?: {
    type?: string;
    text?: string;
    partial_json?: string;
    thinking?: string;
    signature?: string;
    stop_reason?: string | null;
  };
  usage?: Record<string, unknown>;
  error?: unknown;
}

function mapStopReason(reason: string | undefined): FinishReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "stop";
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "refusal":
      return "refusal";
    default:
      return "other";
  }
}

function mapToolChoice(choice: ToolChoice, disableParallel: boolean): Record<string, unknown> {
  const mapped: Record<string, unknown> =
    choice === "auto"
      ? { type: "auto" }
      : choice === "none"
        ? { type: "none" }
        : choice === "required"
          ? { type: "any" }
          : { type: "tool", name: choice.tool };
  if (disableParallel && mapped.type !== "none") mapped.disable_parallel_tool_use = true;
  return mapped;
}

/**
 * A Claude model behind the Anthropic Messages API, streamed. Text deltas are yielded as they
 * arrive; each `tool_use` block's `input_json_delta` partials are assembled and the call is
 * yielded when its block stops; thinking and redacted-thinking blocks are yielded as `reasoning`
 * parts (with their signatures) to send back in the tool loop; usage is the latest of
 * `message_start` and the cumulative `message_delta` (input includes cached tokens); a `refusal`
 * stop reason finishes with `refusal`; an `error` event mid-stream becomes a `ModelError`.
 *
 * @example
 * ```ts
 * const model = anthropic({ model: "claude-sonnet-4-5" }); // key from ANTHROPIC_API_KEY
 * for await (const event of model.stream({ messages, tools })) console.log(event);
 * ```
 */
export function anthropic(options: AnthropicOptions): LanguageModel {
  const apiKey = options.apiKey ?? readEnv("ANTHROPIC_API_KEY", options.env);
  if (apiKey === undefined) {
    throw new ModelError("authentication", "anthropic: no API key: set ANTHROPIC_API_KEY or pass apiKey");
  }
  const baseURL = (options.baseURL ?? ANTHROPIC_BASE_URL).replace(/\/+$/, "");
  const url = `${baseURL}/v1/messages`;
  const capabilities: ModelCapabilities = {
    images: options.capabilities?.images ?? true,
    parallelToolCalls: options.capabilities?.parallelToolCalls ?? options.parallelToolCalls ?? true,
  };
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    "x-api-key": apiKey,
    "anthropic-version": options.anthropicVersion ?? "2023-06-01",
    ...options.headers,
  };
  const fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));

  async function* attempt(
    body: string,
    context: AttemptContext,
  ): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const stream = await postEventStream({
      provider: "anthropic",
      fetch: fetchImpl,
      url,
      headers,
      body,
      ...context,
    });

    const toolBlocks = new Map<number, { id: string; name: string; json: string }>();
    const thinkingBlocks = new Map<number, { thinking: string; signature: string }>();
    let callCount = 0;
    let stopReason: string | undefined;
    // The latest value of each usage field: `message_delta` carries cumulative counts that are
    // larger than `message_start`'s with prompt caching, server tools and pause_turn.
    const counts: Record<string, number> = {};
    const readUsage = (u: Record<string, unknown> | undefined) => {
      for (const [key, value] of Object.entries(u ?? {})) {
        if (typeof value === "number") counts[key] = tokenCount(value);
      }
    };
    const usage = (): Usage => ({
      // Cached prompt tokens are input the model read too; the caller sees the whole prompt.
      inputTokens:
        (counts.input_tokens ?? 0) +
        (counts.cache_creation_input_tokens ?? 0) +
        (counts.cache_read_input_tokens ?? 0),
      outputTokens: counts.output_tokens ?? 0,
    });

    for await (const sse of readSse(stream)) {
      const event = parseEventData<StreamEvent>("anthropic", sse.data);
      switch (event.type ?? sse.event) {
        case "message_start":
          readUsage(event.message?.usage);
          break;
        case "content_block_start": {
          const block = event.content_block;
          if (event.index === undefined) break;
          if (block?.type === "tool_use") {
            toolBlocks.set(event.index, { id: block.id ?? "", name: block.name ?? "", json: "" });
          } else if (block?.type === "thinking") {
            thinkingBlocks.set(event.index, {
              thinking: block.thinking ?? "",
              signature: block.signature ?? "",
            });
          } else if (block?.type === "redacted_thinking" && typeof block.data === "string") {
            yield { type: "reasoning", part: { type: "anthropic.redacted_thinking", data: block.data } };
          }
          break;
        }
        case "content_block_delta": {
          const delta = event.delta;
          if (delta?.type === "text_delta" && typeof delta.text === "string" && delta.text !== "") {
            yield { type: "text-delta", delta: delta.text };
          } else if (delta?.type === "input_json_delta" && event.index !== undefined) {
            const block = toolBlocks.get(event.index);
            if (block !== undefined) block.json += delta.partial_json ?? "";
          } else if (delta?.type === "thinking_delta" && event.index !== undefined) {
            const block = thinkingBlocks.get(event.index);
            if (block !== undefined && typeof delta.thinking === "string") {
              block.thinking += delta.thinking;
              if (delta.thinking !== "") yield { type: "reasoning-delta", delta: delta.thinking };
            }
          } else if (delta?.type === "signature_delta" && event.index !== undefined) {
            const block = thinkingBlocks.get(event.index);
            if (block !== undefined) block.signature += delta.signature ?? "";
          }
          break;
        }
        case "content_block_stop": {
          const thinking = event.index === undefined ? undefined : thinkingBlocks.get(event.index);
          if (thinking !== undefined) {
            thinkingBlocks.delete(event.index!);
            yield { type: "reasoning", part: { type: "anthropic.thinking", ...thinking } };
            break;
          }
          const block = event.index === undefined ? undefined : toolBlocks.get(event.index);
          if (block === undefined) break;
          toolBlocks.delete(event.index!);
          // A tool without parameters streams no partial JSON at all.
          const call = normalizeToolCall(
            { type: "tool_use", id: block.id, name: block.name, input: block.json === "" ? {} : block.json },
            callCount,
          );
          callCount++;
          yield { type: "tool-call", call };
          break;
        }
        case "message_delta": {
          if (event.delta?.stop_reason) stopReason = event.delta.stop_reason;
          readUsage(event.usage);
          break;
        }
        case "message_stop":
          yield { type: "finish", reason: mapStopReason(stopReason), usage: usage() };
          return;
        case "error":
          throw modelErrorFromStreamError("anthropic", event.error);
        default:
          // `ping` and event types added later are not part of the reply.
          break;
      }
    }
    // A `message_stop` without the blank line that ends an event is dropped by the SSE parser;
    // once `message_delta` gave the stop reason the reply was whole.
    if (stopReason !== undefined) {
      yield { type: "finish", reason: mapStopReason(stopReason), usage: usage() };
      return;
    }
    throw new ModelError("unavailable", "anthropic: the stream ended before the reply was complete");
  }

  return {
    provider: "anthropic",
    modelId: options.model,
    capabilities,
    stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
      const { system, messages } = convertToAnthropicMessages(
        prepareMessages(request.messages, capabilities),
      );
      const body: Record<string, unknown> = {
        model: options.model,
        max_tokens: request.maxOutputTokens ?? options.maxTokens ?? 4096,
        messages,
        stream: true,
      };
      if (system !== undefined) body.system = system;
      if (request.tools.length > 0) {
        body.tools = request.tools.map((tool) => ({
          name: tool.name,
          description: tool.description,
          input_schema: tool.parameters,
        }));
        const disableParallel = options.parallelToolCalls === false;
        if (request.toolChoice !== undefined || disableParallel) {
          body.tool_choice = mapToolChoice(request.toolChoice ?? "auto", disableParallel);
        }
      }
      if (request.temperature !== undefined) body.temperature = request.temperature;
      if (options.thinking !== undefined) {
        body.thinking = { type: "enabled", budget_tokens: options.thinking.budgetTokens };
      }
      const text = JSON.stringify(body);
      return streamWithRetries((context) => attempt(text, context), {
        provider: "anthropic",
        signal: request.signal,
        retry: options.retry,
        timeouts: options.timeouts,
      });
    },
  };
}
