export type { AnthropicOptions } from "./anthropic";
export { ANTHROPIC_BASE_URL, anthropic } from "./anthropic";
export type { AttemptContext, ModelTimeouts } from "./call-timeouts";
export { DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_TOTAL_TIMEOUT_MS } from "./call-timeouts";
export type {
  AnthropicContentBlock,
  AnthropicImageBlock,
  AnthropicMessage,
} from "./convert-to-anthropic-messages";
export { convertToAnthropicMessages } from "./convert-to-anthropic-messages";
export type { GeminiContent, GeminiPart } from "./convert-to-gemini-contents";
export { convertToGeminiContents } from "./convert-to-gemini-contents";
export type { OpenAIChatMessage, OpenAIContentPart } from "./convert-to-openai-messages";
export { convertToOpenAIMessages } from "./convert-to-openai-messages";
export type { ResponsesInputItem } from "./convert-to-responses-input";
export { convertToResponsesInput } from "./convert-to-responses-input";
export type { ModelConfig } from "./create-model";
export {
  AnthropicModelConfigSchema,
  createModel,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_OPENAI_MODEL,
  defaultModelFromEnv,
  describeModelFromEnv,
  GeminiModelConfigSchema,
  ModelConfigSchema,
  OpenAIModelConfigSchema,
} from "./create-model";
export type { ModelEnv } from "./env";
export { defaultEnv, readEnv } from "./env";
export type { GeminiOptions } from "./gemini";
export { GEMINI_BASE_URL, gemini } from "./gemini";
export type {
  FinishReason,
  LanguageModel,
  ModelCapabilities,
  ModelMessage,
  ModelRequest,
  ModelStreamEvent,
  ReasoningPart,
  ToolChoice,
} from "./language-model";
export type { ModelErrorCode, ModelErrorOptions } from "./model-error";
export {
  isContextTooLong,
  ModelError,
  ModelErrorCodes,
  modelErrorFromResponse,
  modelErrorFromStreamError,
  parseRetryAfter,
  toModelError,
} from "./model-error";
export type { OpenAIOptions } from "./openai";
export { OPENAI_BASE_URL, openai } from "./openai";
export type { OpenAIResponsesOptions } from "./openai-responses";
export { openaiResponses } from "./openai-responses";
export { stripStrictNulls, toStrictJsonSchema } from "./openai-strict-schema";
export { parseEventData, postEventStream, tokenCount } from "./post-event-stream";
export { IMAGE_OMITTED_NOTE, prepareMessages } from "./prepare-messages";
export type { RetryOptions } from "./retry";
export { retryDelay, sleep, streamWithRetries } from "./retry";
export { scripted } from "./scripted";
export type { ScriptedModelConfig, ScriptedRule } from "./scripted-config";
export {
  DEFAULT_SCRIPTED_FALLBACK,
  ScriptedModelConfigSchema,
  ScriptedRuleSchema,
  ScriptedToolCallSchema,
} from "./scripted-config";
export type { SseEvent } from "./sse-parser";
export { readSse, SseParser } from "./sse-parser";
