import type {
  ImageContent,
  NormalizedToolCall,
  ToolOutputContent,
  ToolSpec,
  Usage,
} from "@patchbay/protocol";

/**
 * One message of the conversation as a model adapter receives it. Adapters translate these into
 * their provider's format; the server builds them from the session's conversation.
 *
 * @example
 * ```ts
 * const messages: ModelMessage[] = [
 *   { role: "system", content: "You are a support agent." },
 *   { role: "user", content: "Where is order A1?" },
 * ];
 * ```
 */
export type ModelMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string; images?: ImageContent[] }
  | {
      role: "assistant";
      content: string;
      toolCalls?: NormalizedToolCall[];
      /**
       * The provider's reasoning state of this reply (thinking blocks, thought signatures), as the
       * adapter yielded it in `reasoning` events; sent back so a reasoning model accepts the next
       * request of a tool loop. Adapters ignore parts of other providers.
       */
      reasoning?: ReasoningPart[];
    }
  | {
      role: "tool";
      toolCallId: string;
      toolName: string;
      content: ToolOutputContent;
      /** The call did not complete (failed, timed out, declined...); `content.text` says why. */
      isError?: boolean;
    };

/**
 * Whether and how the model must call tools.
 *
 * @example
 * ```ts
 * const choice: ToolChoice = { tool: "lookup_order" };
 * ```
 */
export type ToolChoice = "auto" | "none" | "required" | { tool: string };

/**
 * What one model call is given.
 *
 * @example
 * ```ts
 * for await (const event of model.stream({ messages, tools, signal })) { ... }
 * ```
 */
export interface ModelRequest {
  messages: ModelMessage[];
  /** The tools offered. The server hands every round of a session the same frozen list: read it, never change it. */
  tools: ToolSpec[];
  toolChoice?: ToolChoice;
  signal?: AbortSignal;
  maxOutputTokens?: number;
  temperature?: number;
}

/**
 * Why a model reply ended.
 *
 * @example
 * ```ts
 * if (event.type === "finish" && event.reason === "tool_calls") runTools();
 * ```
 */
export type FinishReason = "stop" | "tool_calls" | "length" | "content_filter" | "refusal" | "other";

/**
 * Reasoning state a provider needs back on the next request of a tool loop. Opaque to the
 * server: it is stored with the conversation and handed back to the adapter that made it.
 *
 * - `anthropic.thinking` / `anthropic.redacted_thinking`: Claude's extended-thinking blocks with
 *   their signature, sent back as the assistant message's first blocks.
 * - `google.thought_signature`: the signature Gemini attaches to a function call
 *   (`extra_content.google.thought_signature` in its OpenAI-compatible API, `thoughtSignature`
 *   natively), sent back on the same call.
 * - `openai.reasoning`: a reasoning item of OpenAI's Responses API (with its `encrypted_content`),
 *   sent back before the calls it led to.
 *
 * @example
 * ```ts
 * const part: ReasoningPart = { type: "anthropic.thinking", thinking: "Check the order.", signature: "EqQB..." };
 * ```
 */
export type ReasoningPart =
  | { type: "anthropic.thinking"; thinking: string; signature: string }
  | { type: "anthropic.redacted_thinking"; data: string }
  | { type: "google.thought_signature"; toolCallId: string; signature: string }
  | { type: "openai.reasoning"; item: Record<string, unknown> };

/**
 * What a model adapter streams: text as it arrives, each tool call once it is complete (already
 * normalized), reasoning state to keep, and exactly one `finish` at the end. A refusal streams as
 * `refusal-delta` and finishes with reason `refusal`.
 *
 * @example
 * ```ts
 * if (event.type === "text-delta") process.stdout.write(event.delta);
 * ```
 */
export type ModelStreamEvent =
  | { type: "text-delta"; delta: string }
  /** The model declined to answer (OpenAI `refusal`); the text is meant for the user. */
  | { type: "refusal-delta"; delta: string }
  /** Readable reasoning as it streams (Claude's thinking). Not part of the reply. */
  | { type: "reasoning-delta"; delta: string }
  /** A complete piece of reasoning state to keep with the reply (see {@link ReasoningPart}). */
  | { type: "reasoning"; part: ReasoningPart }
  | { type: "tool-call"; call: NormalizedToolCall }
  | { type: "finish"; reason: FinishReason; usage: Usage };

/**
 * What a model can do. For a model that reads only text, the server replaces images in user
 * messages with a short note and tells the model an image tool result failed.
 *
 * @example
 * ```ts
 * if (!model.capabilities.images) { ... }
 * ```
 */
export interface ModelCapabilities {
  /** Reads images in user messages and tool results. */
  images: boolean;
  /** May return several tool calls in one reply. */
  parallelToolCalls: boolean;
}

/**
 * The one interface the server's turn loop talks to, for every provider.
 *
 * @example
 * ```ts
 * const model: LanguageModel = openai({ model: "gpt-4o-mini" });
 * for await (const event of model.stream({ messages, tools: [] })) console.log(event);
 * ```
 */
export interface LanguageModel {
  /** `openai`, `anthropic`, `scripted`, ... */
  readonly provider: string;
  readonly modelId: string;
  readonly capabilities: ModelCapabilities;
  /** Streams one reply. Throws a `ModelError` (typed, with a stable `code`) on failure. */
  stream(request: ModelRequest): AsyncIterable<ModelStreamEvent>;
}
