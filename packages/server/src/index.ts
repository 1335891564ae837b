export type { HelloAuth, Principal, ServerCredentials } from "./auth/auth";
export { Authenticator, assertCanAccess, sessionOwner } from "./auth/auth";
export type { VerifiedUserToken } from "./auth/user-token";
export { createUserToken, USER_TOKEN_AUDIENCE, verifyUserToken } from "./auth/user-token";
export type {
  AgentConfig,
  AgentConfigIssue,
  AgentConfigLoadOptions,
  AgentFileInput,
} from "./config/agent-config";
export {
  AgentConfigError,
  AgentFileSchema,
  defineAgent,
  loadAgentConfigs,
  parseAgentConfig,
} from "./config/agent-config";
export type { ServerLimits } from "./config/limits";
export { DEFAULT_SERVER_LIMITS, parseLimitFlags, QuotaError, resolveLimits } from "./config/limits";
export type { CreateServerOptions, PatchbayServer } from "./create-server";
export { createServer } from "./create-server";
export type { AuthFailureReason } from "./errors";
export {
  AuthError,
  HTTP_STATUS_BY_CODE,
  NotFoundError,
  ServerError,
  StoreLockedError,
  StoreVersionError,
  toWireError,
} from "./errors";
export type { DispatchContext, DispatchExtension } from "./extensions/dispatch-extension";
export type {
  CancelReason,
  HoldAnswer,
  HostedToolRequest,
  HostedToolRouter,
  MessageRouteOutcome,
  MessageRouteRequest,
  MessageRouter,
  ToolCallHandlers,
} from "./extensions/dispatch-seams";
export type { CorsOptions } from "./http/cors";
export { CORS_ALLOWED_HEADERS, CORS_ALLOWED_METHODS, CorsPolicy, parseCorsOrigins } from "./http/cors";
export type { HttpApiLimits, HttpApiOptions, HttpRouteExtension } from "./http/http-api";
export { createHttpApi, DEFAULT_HTTP_LIMITS } from "./http/http-api";
export type { Logger, LoggerOptions, LogLevel } from "./observability/logger";
export { createLogger, LOG_LEVELS, silentLogger } from "./observability/logger";
export { ServerMetrics } from "./observability/metrics";
export { TRACER_NAME } from "./observability/tracing";
export type { LiveSessionDeps, SendMessageInput } from "./sessions/live-session";
export { LiveSession } from "./sessions/live-session";
export { recoverInterruptedTurns } from "./sessions/recovery";
export type { SessionDirectoryOptions } from "./sessions/session-directory";
export { SessionDirectory } from "./sessions/session-directory";
export type { SessionLogEvents, SessionSubscriber } from "./sessions/session-log";
export { SessionLog } from "./sessions/session-log";
export type { ClientSocketLimits } from "./sockets/client-socket";
export { ClientSocketServer, DEFAULT_CLIENT_SOCKET_LIMITS } from "./sockets/client-socket";
export type { TokenBucketOptions } from "./sockets/rate-limit";
export { TokenBucket } from "./sockets/rate-limit";
export type { LockHolder } from "./store/data-dir-lock";
export { DataDirLockedError } from "./store/data-dir-lock";
export { MemoryStore } from "./store/memory-store";
export type { PostgresMigration } from "./store/postgres-migrations";
export { migratePostgres, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from "./store/postgres-migrations";
export type { PostgresStoreOptions } from "./store/postgres-store";
export { PostgresStore, redactUrl } from "./store/postgres-store";
export type { SqliteStoreOptions } from "./store/sqlite-store";
export { SqliteStore } from "./store/sqlite-store";
export type {
  ApprovalRecord,
  CommitResult,
  EventDraft,
  PendingToolCallRecord,
  SessionChange,
  SessionRecord,
  Store,
  TurnRecord,
} from "./store/store";
export type { PageToolCall } from "./tools/page-tool-backend";
export { PageToolBackend } from "./tools/page-tool-backend";
export type { RoutedToolCall, ToolBackend } from "./tools/tool-backend";
export type { ApprovalQuestion } from "./turns/approval-flow";
export { ApprovalFlow } from "./turns/approval-flow";
export { toModelMessages } from "./turns/model-messages";
export { ProgressCoalescer } from "./turns/progress-coalescer";
export { failedResult } from "./turns/tool-results";
export type { TurnOptions, TurnOutcome } from "./turns/turn-loop";
export { Turn } from "./turns/turn-loop";
export type { DispatchModule, DispatchServerOptions } from "./workers";
export { createDispatch, WORKER_SOCKET_PATH } from "./workers";
