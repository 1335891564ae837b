// The public surface of @patchbay/server: createServer with its options and config types, the
// Store interface and the stores a user constructs, the extension seams (dispatch, HTTP routes,
// hosted tools, message routing), user tokens and the typed errors. Everything else (sessions,
// turns, tool backends, sockets, workers' internals) is the server's own and may change.

// Users and their tokens.
export type { HelloAuth, Principal, ServerCredentials } from "./auth/auth";
export type { VerifiedUserToken } from "./auth/user-token";
export { createUserToken, USER_TOKEN_AUDIENCE, verifyUserToken } from "./auth/user-token";
// The server and its options.
// Cluster mode (docs/cluster.md): the bus between nodes and a node's view of the cluster.
export type { Bus, BusMessage, BusStatus } from "./cluster/bus";
export type { ClusterNode, NodeHeartbeat } from "./cluster/cluster-node";
export type { ClusterOptions } from "./cluster/cluster-options";
export { DEFAULT_LEASE_TTL_MS } from "./cluster/cluster-options";
export type { DirectAddress, DirectLink, DirectLinks } from "./cluster/direct-links";
export { MemoryBus, MemoryBusHub } from "./cluster/memory-bus";
export type { NatsBusOptions } from "./cluster/nats-bus";
export { NatsBus } from "./cluster/nats-bus";
export type {
  AgentConfig,
  AgentConfigIssue,
  AgentConfigLoadOptions,
  AgentFileInput,
} from "./config/agent-config";
export { AgentConfigError, defineAgent, loadAgentConfigs, parseAgentConfig } from "./config/agent-config";
export type { ServerLimits } from "./config/limits";
export { DEFAULT_SERVER_LIMITS, QuotaError, resolveLimits } from "./config/limits";
export type { CreateServerOptions, PatchbayServer } from "./create-server";
export { createServer } from "./create-server";
// Typed errors, each with a stable `code`.
export type { AuthFailureReason } from "./errors";
export {
  AuthError,
  BusTimeoutError,
  HTTP_STATUS_BY_CODE,
  LeaseLostError,
  NotFoundError,
  ServerError,
  StoreLockedError,
  StoreLockLostError,
  StoreVersionError,
  toWireError,
} from "./errors";
// Extension seams: the dispatch module (workers on /v1/worker) and what it plugs into.
export type { DispatchContext, DispatchExtension } from "./extensions/dispatch-extension";
export type {
  CancelReason,
  DispatchWork,
  DispatchWorkReceipt,
  HoldAnswer,
  HostedToolRequest,
  HostedToolRouter,
  MessageRouteOutcome,
  MessageRouteRequest,
  MessageRouter,
  ToolCallHandlers,
  WorkElsewhere,
  WorkerRoom,
} from "./extensions/dispatch-seams";
export type { CorsOptions } from "./http/cors";
export type { HttpApiLimits, HttpRouteExtension } from "./http/http-api";
export { DEFAULT_HTTP_LIMITS } from "./http/http-api";
export type { Logger, LoggerOptions, LogLevel } from "./observability/logger";
export { createLogger, LOG_LEVELS, silentLogger } from "./observability/logger";
export { TRACER_NAME } from "./observability/tracing";
export type { ClientSocketLimits } from "./sockets/client-socket";
export { DEFAULT_CLIENT_SOCKET_LIMITS } from "./sockets/client-socket";
export type { LockHolder } from "./store/data-dir-lock";
export { DataDirLockedError } from "./store/data-dir-lock";
export { MemoryStore } from "./store/memory-store";
export type { PostgresStoreOptions } from "./store/postgres-store";
export { PostgresStore } from "./store/postgres-store";
export type { SqliteStoreOptions } from "./store/sqlite-store";
export { SqliteStore } from "./store/sqlite-store";
// Persistence: the Store interface and the stores a user constructs.
export type {
  ApprovalRecord,
  CommitResult,
  EventDraft,
  GroupedWrite,
  GroupedWriteResult,
  LeaseAttempt,
  PendingToolCallRecord,
  SessionChange,
  SessionLease,
  SessionLeases,
  SessionRecord,
  Store,
  TurnRecord,
} from "./store/store";
export type { DispatchModule, DispatchServerOptions } from "./workers";
export { createDispatch, WORKER_SOCKET_PATH } from "./workers";
