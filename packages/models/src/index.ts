export type { AnthropicOptions } from "./anthropic";
export { ANTHROPIC_BASE_URL, anthropic } from "./anthropic";
export type {
  AnthropicContentBlock,
  AnthropicImageBlock,
  AnthropicMessage,
} from "./convert-to-anthropic-messages";
export { convertToAnthropicMessages } from "./convert-to-anthropic-messages";
export type { OpenAIChatMessage, OpenAIContentPart } from "./convert-to-openai-messages";
export { convertToOpenAIMessages } from "./convert-to-openai-messages";
export type { ModelConfig } from "./create-model";
export {
  AnthropicModelConfigSchema,
  createModel,
  DEFAULT_ANTHROPIC_MODEL,
  DEFAULT_OPENAI_MODEL,
  defaultModelFromEnv,
  describeModelFromEnv,
  ModelConfigSchema,
  OpenAIModelConfigSchema,
} from "./create-model";
export type { ModelEnv } from "./env";
export { defaultEnv, readEnv } from "./env";
export type {
  FinishReason,
  LanguageModel,
  ModelCapabilities,
  ModelMessage,
  ModelRequest,
  ModelStreamEvent,
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
export { stripStrictNulls, toStrictJsonSchema } from "./openai-strict-schema";
export { postEventStream } from "./post-event-stream";
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
