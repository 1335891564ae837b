export type { AgentConfig, AgentConfigIssue, AgentFileInput } from "./agent-config";
export {
  AgentConfigError,
  AgentFileSchema,
  defineAgent,
  loadAgentConfigs,
  parseAgentConfig,
} from "./agent-config";
export type { ApprovalQuestion } from "./approval-flow";
export { ApprovalFlow } from "./approval-flow";
export type { HelloAuth, Principal, ServerCredentials } from "./auth";
export { Authenticator, assertCanAccess, sessionOwner } from "./auth";
export type { ClientSocketLimits } from "./client-socket";
export { ClientSocketServer, DEFAULT_CLIENT_SOCKET_LIMITS } from "./client-socket";
export type { CorsOptions } from "./cors";
export { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CorsPolicy, parseCorsOrigins } from "./cors";
export type { CreateServerOptions, PatchbayServer } from "./create-server";
export { createServer } from "./create-server";
export type { DispatchModule, DispatchServerOptions } from "./dispatch";
export { createDispatch, WORKER_SOCKET_PATH } from "./dispatch";
export type { DispatchContext, DispatchExtension } from "./dispatch-extension";
export type {
  CancelReason,
  HoldAnswer,
  HostedToolHandlers,
  HostedToolRequest,
  HostedToolRouter,
  MessageRouteOutcome,
  MessageRouteRequest,
  MessageRouter,
} from "./dispatch-seams";
export type { AuthFailureReason } from "./errors";
export {
  AuthError,
  HTTP_STATUS_BY_CODE,
  NotFoundError,
  ServerError,
  StoreVersionError,
  toWireError,
} from "./errors";
export type { HttpApiLimits, HttpApiOptions, HttpRouteExtension } from "./http-api";
export { createHttpApi, DEFAULT_HTTP_LIMITS } from "./http-api";
export type { LiveSessionDeps, SendMessageInput } from "./live-session";
export { LiveSession } from "./live-session";
export type { Logger, LoggerOptions, LogLevel } from "./logger";
export { createLogger, LOG_LEVELS, silentLogger } from "./logger";
export { MemoryStore } from "./memory-store";
export { ServerMetrics } from "./metrics";
export { toModelMessages } from "./model-messages";
export type { PageToolCall } from "./page-tool-router";
export { PageToolRouter } from "./page-tool-router";
export type { PostgresMigration } from "./postgres-migrations";
export { migratePostgres, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from "./postgres-migrations";
export type { PostgresStoreOptions } from "./postgres-store";
export { PostgresStore, redactUrl } from "./postgres-store";
export { ProgressCoalescer } from "./progress-coalescer";
export type { TokenBucketOptions } from "./rate-limit";
export { TokenBucket } from "./rate-limit";
export { recoverInterruptedTurns } from "./recovery";
export type { SessionManagerOptions } from "./session-manager";
export { SessionManager } from "./session-manager";
export type { SessionRuntimeEvents, SessionSubscriber } from "./session-runtime";
export { SessionRuntime } from "./session-runtime";
export type { SqliteStoreOptions } from "./sqlite-store";
export { SqliteStore } from "./sqlite-store";
export type {
  ApprovalRecord,
  CommitResult,
  EventDraft,
  PendingToolCallRecord,
  SessionChange,
  SessionRecord,
  Store,
  TurnRecord,
} from "./store";
export type { RoutedToolCall, ToolBackend } from "./tool-location";
export { failedResult } from "./tool-results";
export type { TurnOptions, TurnOutcome } from "./turn-loop";
export { Turn } from "./turn-loop";
export type { VerifiedUserToken } from "./user-token";
export { createUserToken, USER_TOKEN_AUDIENCE, verifyUserToken } from "./user-token";
