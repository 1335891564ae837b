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
  parseRetryAfter,
  toModelError,
} from "./model-error";
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
