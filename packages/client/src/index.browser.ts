export type {
  ApprovalOutcome,
  ApprovalRequest,
  ConversationItem,
  ImageContent,
  MessageItem,
  SessionInfo,
  ToolCallItem,
  ToolCallStatus,
  User,
} from "@patchbay/protocol";
export type {
  IdempotencyStore,
  ToolCallContext,
  ToolDefinition,
  ToolExecutionResult,
} from "@patchbay/tools";
export { CallNotHeld, InMemoryIdempotencyStore, ToolError, ToolOutput, Tools } from "@patchbay/tools";
export type { BackoffOptions } from "./backoff";
export { backoffDelay } from "./backoff";
export { Client } from "./client-browser";
export type {
  AgentHandle,
  AgentSessions,
  ClientCore,
  ClientEvents,
  ClientOptions,
  CreateSessionOptions,
  ReplyOptions,
  ResumeSessionOptions,
} from "./client-core";
export type { ConnectionState, HelloAuth } from "./connection";
export type { ClientErrorCode, ClientErrorOptions } from "./errors";
export {
  AuthError,
  ClientError,
  DisconnectedError,
  errorFromWire,
  NotFoundError,
  ProtocolViolationError,
  RateLimitedError,
  ResponseFailedError,
  ServerError,
  TimeoutError,
} from "./errors";
export type { EventPage, ReplyResult, SessionSnapshot } from "./http-api";
export type { ResponseReason, ResponseResult } from "./response";
export { Response } from "./response";
export type { CreateResponseOptions, SessionEvents } from "./session";
export { Session } from "./session";
export type { UserTokenOptions } from "./user-token";
export { createUserToken, tokenExpiresAt, USER_TOKEN_AUDIENCE } from "./user-token";
export type { WebStorageLike } from "./web-storage-idempotency-store";
export { WebStorageIdempotencyStore } from "./web-storage-idempotency-store";
export type { WebSocketFactory, WebSocketLike } from "./websocket-like";
