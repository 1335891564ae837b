import { normalizeToolCall, type ToolSpec, type Usage } from "@patchbay/protocol";
import type { AttemptContext, ModelTimeouts } from "./call-timeouts";
import { convertToGeminiContents } from "./convert-to-gemini-contents";
import { type ModelEnv, readEnv } from "./env";
import { toGeminiSchema } from "./gemini-schema";
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
 * The default `baseURL` of {@link gemini}.
 *
 * @example
 * ```ts
 * gemini({ model: "gemini-2.5-flash", baseURL: GEMINI_BASE_URL });
 * ```
 */
export const GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta";

/**
 * Options of {@link gemini}.
 *
 * @example
 * ```ts
 * const options: GeminiOptions = { model: "gemini-2.5-flash", thinking: { budgetTokens: 1024 } };
 * ```
 */
export interface GeminiOptions {
  /** `gemini-2.5-flash`, `gemini-3-pro-preview`, ... */
  model: string;
  /** Default `https://generativelanguage.googleapis.com/v1beta`; the adapter calls `<baseURL>/models/<model>:streamGenerateContent?alt=sse`. */
  baseURL?: string;
  /** Default: `GEMINI_API_KEY`, then `GOOGLE_API_KEY`, from `env`. Sent as `x-goog-api-key`. */
  apiKey?: string;
  /** Where the key is read from. Default: the process environment. */
  env?: ModelEnv;
  /** Extra HTTP headers. */
  headers?: Record<string, string>;
  /** `generationConfig.maxOutputTokens` when the request gives no `maxOutputTokens`. Default: none. */
  maxTokens?: number;
  /**
   * `thinkingConfig.thinkingBudget` (`0` turns thinking off where the model allows it, `-1` lets
   * the model decide); `includeThoughts` streams thought summaries as `reasoning-delta`.
   */
  thinking?: { budgetTokens?: number; includeThoughts?: boolean };
  /** Default: images and parallel tool calls on. */
  capabilities?: Partial<ModelCapabilities>;
  /** Retries of rate limits, 5xx and failed connections. */
  retry?: RetryOptions;
  /** Idle and total timeouts of each call (see {@link ModelTimeouts}). */
  timeouts?: ModelTimeouts;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

interface GeminiStreamPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { id?: string; name?: string; args?: Record<string, unknown> };
}

interface GeminiChunk {
  candidates?: Array<{
    content?: { parts?: GeminiStreamPart[] };
    finishReason?: string;
    index?: number;
  }>;
  promptFeedback?: { blockReason?: string };
  usageMetadata?: {
    promptTokenCount?: number;
    candidatesTokenCount?: number;
    thoughtsTokenCount?: number;
  };
  error?: unknown;
}

function mapFinishReason(reason: string | undefined, calls: number): FinishReason {
  if (calls > 0 && (reason === undefined || reason === "STOP")) return "tool_calls";
  switch (reason) {
    case undefined:
    case "STOP":
      return "stop";
    case "MAX_TOKENS":
      return "length";
    case "SAFETY":
    case "RECITATION":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
      return "content_filter";
    default:
      return "other";
  }
}

function mapToolChoice(choice: ToolChoice): Record<string, unknown> {
  if (choice === "auto") return { functionCallingConfig: { mode: "AUTO" } };
  if (choice === "none") return { functionCallingConfig: { mode: "NONE" } };
  if (choice === "required") return { functionCallingConfig: { mode: "ANY" } };
  return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.tool] } };
}

function declarations(tools: ToolSpec[]): unknown[] {
  return [
    {
      functionDeclarations: tools.map((tool) => {
        // JSON Schema keys Gemini does not know fail the whole request (see gemini-schema.ts).
        const parameters = toGeminiSchema(tool.parameters);
        return {
          name: tool.name,
          description: tool.description,
          ...(parameters === undefined ? {} : { parameters }),
        };
      }),
    },
  ];
}

/**
 * A Gemini model behind Google's Gemini API (`streamGenerateContent` with server-sent events).
 * Text streams as it arrives (thought summaries as `reasoning-delta`); each function call is
 * yielded with its `thoughtSignature` as a `google.thought_signature` reasoning part, which goes
 * back on that call in the next request, as Gemini 3 requires in a tool loop; usage counts
 * thinking tokens as output; a blocked prompt finishes as `content_filter`.
 *
 * @example
 * ```ts
 * const model = gemini({ model: "gemini-2.5-flash" }); // key from GEMINI_API_KEY
 * for await (const event of model.stream({ messages, tools })) console.log(event);
 * ```
 */
export function gemini(options: GeminiOptions): LanguageModel {
  const apiKey =
    options.apiKey ?? readEnv("GEMINI_API_KEY", options.env) ?? readEnv("GOOGLE_API_KEY", options.env);
  if (apiKey === undefined) {
    throw new ModelError("authentication", "gemini: no API key: set GEMINI_API_KEY or pass apiKey");
  }
  const baseURL = (options.baseURL ?? GEMINI_BASE_URL).replace(/\/+$/, "");
  const url = `${baseURL}/models/${encodeURIComponent(options.model)}:streamGenerateContent?alt=sse`;
  const capabilities: ModelCapabilities = {
    images: options.capabilities?.images ?? true,
    parallelToolCalls: options.capabilities?.parallelToolCalls ?? true,
  };
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "text/event-stream",
    "x-goog-api-key": apiKey,
    ...options.headers,
  };
  const fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));

  async function* attempt(
    body: string,
    context: AttemptContext,
  ): AsyncGenerator<ModelStreamEvent, void, undefined> {
    const stream = await postEventStream({
      provider: "gemini",
      fetch: fetchImpl,
      url,
      headers,
      body,
      ...context,
    });
    let finishReason: string | undefined;
    let blocked = false;
    let calls = 0;
    const usage: Usage = { inputTokens: 0, outputTokens: 0 };
    for await (const sse of readSse(stream)) {
      const chunk = parseEventData<GeminiChunk>("gemini", sse.data);
      if (chunk.error !== undefined && chunk.error !== null)
        throw modelErrorFromStreamError("gemini", chunk.error);
      if (chunk.usageMetadata) {
        // Usage is cumulative in every chunk; thinking tokens are billed as output.
        usage.inputTokens = tokenCount(chunk.usageMetadata.promptTokenCount);
        usage.outputTokens =
          tokenCount(chunk.usageMetadata.candidatesTokenCount) +
          tokenCount(chunk.usageMetadata.thoughtsTokenCount);
      }
      if (chunk.promptFeedback?.blockReason) blocked = true;
      const candidate = chunk.candidates?.find((c) => (c.index ?? 0) === 0);
      for (const part of candidate?.content?.parts ?? []) {
        if (typeof part.text === "string" && part.text !== "") {
          yield part.thought
            ? { type: "reasoning-delta", delta: part.text }
            : { type: "text-delta", delta: part.text };
        }
        if (part.functionCall) {
          // The Gemini API gives calls no id; a unique one keeps the calls of different rounds apart
          // (their signatures and results are matched by it).
          const id =
            part.functionCall.id || `call_${globalThis.crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`;
          const call = normalizeToolCall(
            { id, name: part.functionCall.name ?? "", arguments: part.functionCall.args ?? {} },
            calls,
          );
          calls++;
          if (part.thoughtSignature) {
            yield {
              type: "reasoning",
              part: {
                type: "google.thought_signature",
                toolCallId: call.id,
                signature: part.thoughtSignature,
              },
            };
          }
          yield { type: "tool-call", call };
        }
      }
      if (candidate?.finishReason) finishReason = candidate.finishReason;
    }
    if (finishReason === undefined && !blocked) {
      throw new ModelError("unavailable", "gemini: the stream ended before the reply was complete");
    }
    yield {
      type: "finish",
      reason: blocked ? "content_filter" : mapFinishReason(finishReason, calls),
      usage,
    };
  }

  return {
    provider: "gemini",
    modelId: options.model,
    capabilities,
    stream(request: ModelRequest): AsyncIterable<ModelStreamEvent> {
      const { systemInstruction, contents } = convertToGeminiContents(
        prepareMessages(request.messages, capabilities),
      );
      const body: Record<string, unknown> = { contents };
      if (systemInstruction !== undefined) body.systemInstruction = systemInstruction;
      if (request.tools.length > 0) {
        body.tools = declarations(request.tools);
        if (request.toolChoice !== undefined) body.toolConfig = mapToolChoice(request.toolChoice);
      }
      const generationConfig: Record<string, unknown> = {};
      const maxTokens = request.maxOutputTokens ?? options.maxTokens;
      if (maxTokens !== undefined) generationConfig.maxOutputTokens = maxTokens;
      if (request.temperature !== undefined) generationConfig.temperature = request.temperature;
      if (options.thinking !== undefined) {
        const thinkingConfig: Record<string, unknown> = {};
        if (options.thinking.budgetTokens !== undefined)
          thinkingConfig.thinkingBudget = options.thinking.budgetTokens;
        if (options.thinking.includeThoughts) thinkingConfig.includeThoughts = true;
        generationConfig.thinkingConfig = thinkingConfig;
      }
      if (Object.keys(generationConfig).length > 0) body.generationConfig = generationConfig;
      const text = JSON.stringify(body);
      return streamWithRetries((context) => attempt(text, context), {
        provider: "gemini",
        signal: request.signal,
        retry: options.retry,
        timeouts: options.timeouts,
      });
    },
  };
}
