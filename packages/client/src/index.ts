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
// The audience of a user token is the protocol's; a page reads it here.
export { USER_TOKEN_AUDIENCE } from "@patchbay/protocol/lite";
export type { BackoffOptions, WebSocketFactory, WebSocketLike } from "@patchbay/protocol/runtime";
export { backoffDelay } from "@patchbay/protocol/runtime";
export type {
  IdempotencyStore,
  ToolCallContext,
  ToolDefinition,
  ToolExecutionResult,
} from "@patchbay/tools";
export { CallNotHeld, InMemoryIdempotencyStore, ToolError, ToolOutput, Tools } from "@patchbay/tools";
export type { ClientCore } from "./client-core";
export type { ClientCredentials } from "./client-node";
export { Client } from "./client-node";
export type {
  AgentHandle,
  AgentSessions,
  ClientEvents,
  ClientOptions,
  CreateSessionOptions,
  ReplyOptions,
  ResumeSessionOptions,
} from "./client-options";
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
export { createUserToken, tokenExpiresAt } from "./user-token";
export type { WebStorageLike } from "./web-storage-idempotency-store";
export { WebStorageIdempotencyStore } from "./web-storage-idempotency-store";
