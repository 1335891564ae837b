export type {
  IdempotencyStore,
  ToolCallContext,
  ToolDefinition,
  ToolExecutionResult,
} from "@patchbay/tools";
// What hosting tools by name takes (`dispatch.host("support", tools)`), so a worker needs no other import.
export { CallNotHeld, InMemoryIdempotencyStore, ToolError, ToolOutput, Tools } from "@patchbay/tools";
export type { BackoffPolicy } from "./backoff";
export { DEFAULT_BACKOFF } from "./backoff";
export type { ChannelSessionOptions, SessionFactory, SessionSource } from "./channel-sessions";
export type { ConversationCacheOptions } from "./conversation-cache";
export { DEFAULT_CONVERSATION_CACHE } from "./conversation-cache";
export { Dispatch, REFUSAL_CODES } from "./dispatch";
export type { DispatchErrorCode } from "./dispatch-error";
export { DispatchError, DispatchErrorCodes } from "./dispatch-error";
export type {
  CallHandler,
  DispatchClient,
  DispatchEvents,
  DispatchLogger,
  DispatchOptions,
  DispatchState,
  MessageHandler,
  StopOptions,
  StopResult,
  WorkContext,
} from "./dispatch-options";
export type { HostableAgent, HostOptions } from "./hosted-tools";
export type { ConnectionState } from "./worker-connection";
export type { ConnectOptions } from "./worker-connectors";
export { WORKER_PATH, workerSocketUrl } from "./worker-url";
