// A little over 400 lines: createServer wires every part in the one order that works (options,
// store, cluster, recovery, connectors, sessions, dispatch, sockets, HTTP, listen, close), and
// its option and result types document the public surface beside it.
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Connector, ConnectorSet } from "@patchbay/connectors";
import { createModel, type LanguageModel } from "@patchbay/models";
import { type IdempotencyStore, InMemoryIdempotencyStore, type Tools } from "@patchbay/tools";
import { Authenticator } from "./auth/auth";
import { ClusterHttp } from "./cluster/cluster-http";
import { ClusterMessageRouter } from "./cluster/cluster-message-router";
import type { LeaseEvent } from "./cluster/cluster-metrics";
import type { ClusterNode } from "./cluster/cluster-node";
import { type ClusterOptions, clusterWanted, joinCluster } from "./cluster/cluster-options";
import { ClusterToolRouter } from "./cluster/cluster-tool-router";
import { ClusterWork } from "./cluster/cluster-work";
import { type AgentConfig, type AgentFileInput, defineAgent, loadAgentConfigs } from "./config/agent-config";
import { resolveLimits, type ServerLimits } from "./config/limits";
import { resolveServerCredentials, type ServerMode, serverMode } from "./config/server-credentials";
import { checkServerOptions } from "./config/server-options";
import { ServerError } from "./errors";
import type { DispatchContext, DispatchExtension } from "./extensions/dispatch-extension";
import type { HostedToolRouter, MessageRouter } from "./extensions/dispatch-seams";
import { type CorsOptions, CorsPolicy, parseCorsOrigins } from "./http/cors";
import { createHttpApi, type HttpApiLimits } from "./http/http-api";
import { DATABASE_CHECK_INTERVAL_MS, DatabaseCheck } from "./observability/database-check";
import { createLogger, type Logger, type LogLevel } from "./observability/logger";
import { ServerMetrics } from "./observability/metrics";
import { type ReplyOptions, replyOnce, type ServerReply } from "./server-reply";
import type { LiveSessionDeps } from "./sessions/live-session";
import { recoverInterruptedTurns } from "./sessions/recovery";
import { SessionDirectory } from "./sessions/session-directory";
import { ClientRelay } from "./sockets/client-relay";
import {
  type ClientSocketLimits,
  ClientSocketServer,
  DEFAULT_CLIENT_SOCKET_LIMITS,
} from "./sockets/client-socket";
import { SocketGuards } from "./sockets/socket-guards";
import { MemoryStore } from "./store/memory-store";
import { describeStore, openStore } from "./store/open-store";
import { PostgresStore } from "./store/postgres-store";
import type { Store } from "./store/store";
import {
  ChainedToolBackend,
  connectorReadiness,
  prepareAgentConnectors,
  startAgentConnectors,
} from "./tools/agent-connectors";
import { useLinearPatterns } from "./tools/declared-tools";
import { ServerToolBackend } from "./tools/server-tool-backend";
import { forEndUsers } from "./turns/reasoning-state";
import { createDispatch } from "./workers";

/**
 * Options of {@link createServer}. Everything has a default. In production the credentials
 * (options or `PATCHBAY_API_KEY` / `PATCHBAY_API_SECRET`, a secret of 32 bytes or more) and a place
 * for data (`dataDir`, `databaseUrl` or `store`) are required; in development (`mode`) the
 * credentials are made up and printed once, and sessions are kept in memory when no place for
 * data is given.
 *
 * @example
 * ```ts
 * const options: CreateServerOptions = { port: 0, dataDir: "./data", configDir: "./config", apiKey, secret };
 * ```
 */
export interface CreateServerOptions {
  /**
   * `development` or `production` (see {@link ServerMode}). Default `PATCHBAY_MODE`, else
   * `production` when `NODE_ENV` is `production`, else `development`. `patchbay serve` passes
   * `production` unless `--dev`.
   */
  mode?: ServerMode;
  /** Port to listen on; 0 picks a free one. Default 8787. */
  port?: number;
  /** Interface to bind. Default `127.0.0.1` (put a reverse proxy in front for the outside). */
  host?: string;
  /** Directory of the SQLite store. Ignored when `store` or `databaseUrl` is given. */
  dataDir?: string;
  /**
   * A PostgreSQL connection string (`postgres://user:pass@host/db`): sessions live in Postgres
   * instead of SQLite (see {@link PostgresStore}). Default `PATCHBAY_DATABASE_URL`. Ignored when
   * `store` is given.
   */
  databaseUrl?: string;
  /** A store of your own: a {@link MemoryStore}, a {@link PostgresStore} you opened, or your own. */
  store?: Store;
  /** Directory holding `agents/<name>.yaml`. */
  configDir?: string;
  /** Agents given in code, by id, in the same shape as an agent file. */
  agents?: Record<string, AgentFileInput>;
  apiKey?: string;
  secret?: string;
  /** Tools that run in the server process for every session (until workers host them). */
  tools?: Tools;
  /** Builds an agent's model; default `createModel(agent.model, env)`. */
  createModel?: (agent: AgentConfig) => LanguageModel;
  /** Environment for API keys; default `process.env`. */
  env?: Record<string, string | undefined>;
  logger?: Logger;
  logLevel?: LogLevel;
  clientSocket?: Partial<ClientSocketLimits>;
  /**
   * Quotas and limits against abuse (schema sizes, bytes per message and per second, sessions
   * per user, conversation size, sockets before authentication). Over the environment
   * (`PATCHBAY_LIMIT_*`) and `<configDir>/patchbay.yaml`'s `limits:`; defaults in
   * {@link DEFAULT_SERVER_LIMITS} and docs/security.md.
   */
  limits?: Partial<ServerLimits>;
  http?: Partial<HttpApiLimits>;
  /** Quiet period of the progress coalescing rule. Default 250 ms. */
  progressIntervalMs?: number;
  /** How long a shutdown waits for running turns. Default 10 s. */
  shutdownGraceMs?: number;
  /**
   * Where in-process tools (`tools`, connectors) keep finished results by call, so a call
   * delivered again is answered without running twice. Default: in memory (1,000 results). Pass
   * a store shared by your server processes (Redis, a database) to share it between them.
   */
  idempotencyStore?: IdempotencyStore;
  /**
   * The dispatch module (workers on `/v1/worker`, routing of messages and hosted tools, the
   * inbound endpoints). Default {@link createDispatch} with its defaults, so an embedded server
   * takes workers the way `patchbay serve` does; pass your own to tune it, or `false` for a
   * server without workers (`/v1/worker` then answers 404).
   */
  dispatch?: ((context: DispatchContext) => DispatchExtension) | false;
  /** Adds Node's process metrics to `/metrics`. Default false (one server per process sets it). */
  processMetrics?: boolean;
  /**
   * Lets pages served from other origins call the HTTP API and open sockets (a Vite dev server,
   * the browser sample). Default `PATCHBAY_CORS_ORIGINS` (comma-separated, `*` for any), else
   * off: same-origin pages only. When set, a WebSocket upgrade whose `Origin` is not listed is
   * refused (403); callers without an `Origin` (backends, workers) are not affected.
   */
  cors?: CorsOptions;
  /** Connector kinds besides the built-in `mcp` and `openapi`, usable in agents' `connectors:`. */
  connectors?: readonly Connector<any>[];
  /** How long the start waits for each connector before reporting it down (it may come up later). Default 20 s. */
  connectorStartTimeoutMs?: number;
  /**
   * The NATS server(s) of a cluster (`PATCHBAY_NATS_URL`): with it this server is one node of a
   * cluster sharing one Postgres (`databaseUrl`). See docs/cluster.md.
   */
  natsUrl?: string;
  /** Cluster settings (lease TTL, node id, a bus given in code); giving it turns cluster mode on. */
  cluster?: ClusterOptions;
}

/**
 * A running server.
 *
 * @example
 * ```ts
 * const server = await createServer({ port: 0, dataDir, agents, apiKey, secret });
 * console.log(server.url, server.wsUrl);
 * await server.close();
 * ```
 */
export interface PatchbayServer {
  /** `http://host:port` */
  url: string;
  /** `ws://host:port/v1/client` */
  wsUrl: string;
  port: number;
  host: string;
  agents: ReadonlyMap<string, AgentConfig>;
  store: Store;
  sessions: SessionDirectory;
  metrics: ServerMetrics;
  authenticator: Authenticator;
  logger: Logger;
  /** The limits in force (see {@link ServerLimits}). */
  limits: ServerLimits;
  /** Each agent's running connectors (only agents that have some), with their `status()`. */
  connectors: ReadonlyMap<string, ConnectorSet>;
  /** Whether the server started in `development` or `production` mode. */
  mode: ServerMode;
  /**
   * The API key and secret backends and workers use (the made-up ones in development), so a
   * script can connect: `new Client({ baseUrl: server.url, ...server.credentials })`.
   */
  credentials: { readonly apiKey: string; readonly secret: string };
  /**
   * One reply of an agent, in this process, through the real turn loop (model rounds, tools,
   * approvals), in a new session unless `options.sessionId` continues one. Resolves with the
   * final text once the reply ended, also when it ended early (`reason` says: `max_rounds`,
   * `interrupted` when `options.signal` aborted it, `answered_by_worker`); tool calls ran
   * meanwhile and are in `toolCalls`. A question for approval is declined unless
   * `options.onApproval` allows it. A failed reply (the model's provider failed, no worker)
   * rejects with a `ServerError` carrying the reply's error code.
   *
   * @example
   * ```ts
   * const { text } = await server.reply("support", "Where is my order A1?");
   * ```
   */
  reply(agent: string, message: string, options?: ReplyOptions): Promise<ServerReply>;
  /** This server as a node of its cluster (cluster mode only; docs/cluster.md). */
  cluster: ClusterNode | undefined;
  /**
   * The router a turn's hosted tool calls go through, when dispatch is installed: the workers
   * connected here, or in cluster mode every node's (docs/cluster.md). For measuring and tests;
   * a turn calls it once a call is validated and allowed.
   */
  hostedTools: HostedToolRouter | undefined;
  /** Stops accepting, ends or hands back running work (bounded), closes sockets and the store. */
  close(): Promise<void>;
}

/**
 * Starts a Patchbay server: loads and checks the agents (a bad agent file is refused with its
 * file and line), opens the store, ends turns a previous process left running, and listens for
 * the HTTP API and the `/v1/client` socket.
 *
 * @example
 * ```ts
 * const server = await createServer({
 *   port: 0, dataDir: "./data", apiKey: "pk_dev", secret: "a long random secret",
 *   agents: { support: { instructions: "Be brief.", model: { provider: "scripted", rules: [] } } },
 * });
 * ```
 */
export async function createServer(options: CreateServerOptions = {}): Promise<PatchbayServer> {
  checkServerOptions(options, (message) =>
    (options.logger ?? createLogger({ level: options.logLevel ?? "info" })).warn(message),
  );
  const env = options.env ?? process.env;
  const logger = options.logger ?? createLogger({ level: options.logLevel ?? "info" });
  const mode = serverMode(options.mode, env);
  const credentials = resolveServerCredentials(options, env, mode, (message) => logger.warn(message));
  const { apiKey, secret } = credentials;
  const agents = new Map<string, AgentConfig>();
  if (options.configDir !== undefined)
    for (const [id, agent] of loadAgentConfigs(options.configDir, {
      warn: (message) => logger.warn(message),
    }))
      agents.set(id, agent);
  for (const [id, input] of Object.entries(options.agents ?? {})) {
    if (agents.has(id))
      throw new ServerError("invalid_config", `agent '${id}' is defined in code and in a file`);
    agents.set(id, defineAgent(id, input));
  }
  const models = new Map<string, LanguageModel>();
  for (const agent of agents.values()) {
    try {
      models.set(agent.id, options.createModel ? options.createModel(agent) : createModel(agent.model, env));
    } catch (error) {
      throw new ServerError(
        "invalid_config",
        `agent '${agent.id}'${agent.file ? ` (${agent.file})` : ""}: model: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  const limits = resolveLimits(options.limits, env, options.configDir);
  // Argument checks run schema patterns in RE2, in time linear in the input.
  useLinearPatterns();
  // Checked now (bad config refuses to start, with file and line); started just before listening.
  const preparedConnectors = prepareAgentConnectors(agents.values(), {
    ...(options.connectors ? { kinds: options.connectors } : {}),
    env,
  });
  const clustered = clusterWanted(options, env);
  // Development with no place for data: sessions live in this process's memory.
  const inMemory =
    mode === "development" &&
    !options.store &&
    options.dataDir === undefined &&
    !(options.databaseUrl ?? env.PATCHBAY_DATABASE_URL);
  // In a cluster, per-session leases replace the store-wide lock (docs/cluster.md).
  const { store, unlock } = inMemory
    ? { store: new MemoryStore(), unlock: undefined }
    : await openStore({ ...options, exclusive: !clustered, logger }, env);
  const metrics = new ServerMetrics({ defaultMetrics: options.processMetrics ?? false });
  let cluster: Awaited<ReturnType<typeof joinCluster>> | undefined;
  if (clustered) {
    try {
      cluster = await joinCluster(options, env, store, logger, metrics.registry);
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  const authenticator = new Authenticator({ apiKey, secret });
  const progressIntervalMs = options.progressIntervalMs ?? 250;
  const corsOptions =
    options.cors ?? (env.PATCHBAY_CORS_ORIGINS ? parseCorsOrigins(env.PATCHBAY_CORS_ORIGINS) : undefined);
  const cors = corsOptions ? new CorsPolicy(corsOptions) : undefined;
  const idempotency = options.idempotencyStore ?? new InMemoryIdempotencyStore();

  // A cluster recovers each session when a node takes its lease; at start every other node's
  // running turns would look cut off.
  if (!cluster) await recoverInterruptedTurns(store, logger);

  const connectorSets = await startAgentConnectors(preparedConnectors, {
    logger,
    ...(options.connectorStartTimeoutMs !== undefined
      ? { startTimeoutMs: options.connectorStartTimeoutMs }
      : {}),
    ...(options.tools ? { reserved: (name: string) => options.tools!.has(name) } : {}),
  });
  // Child processes of stdio connectors would keep a process that failed to start alive.
  const closeConnectors = () => Promise.all([...connectorSets.values()].map((set) => set.close()));

  let extension: DispatchExtension | undefined;
  let hostedTools: HostedToolRouter | undefined;
  let messageRouter: MessageRouter | undefined;
  // One object per agent, shared by all of its live sessions (an idle session's memory is mostly
  // what it holds), made again only if the dispatch seams were set after it was made.
  const depsByAgent = new Map<AgentConfig, LiveSessionDeps>();
  const deps = (agent: AgentConfig): LiveSessionDeps => {
    const made = depsByAgent.get(agent);
    if (made && made.hostedTools === hostedTools && made.messageRouter === messageRouter) return made;
    const fresh: LiveSessionDeps = {
      model: models.get(agent.id)!,
      logger,
      metrics,
      progressIntervalMs,
      limits,
      ...serverToolsOf(options.tools, connectorSets.get(agent.id), agent, idempotency, logger),
      ...(hostedTools ? { hostedTools } : {}),
      ...(messageRouter ? { messageRouter } : {}),
    };
    depsByAgent.set(agent, fresh);
    return fresh;
  };
  const sessions = new SessionDirectory({
    store,
    agents,
    deps,
    logger,
    metrics,
    maxSessionsPerUser: limits.maxSessionsPerUser,
    liveWindowItems: limits.liveWindowItems,
    ...(cluster
      ? {
          cluster: {
            leases: store.leases!,
            nodeId: cluster.node.nodeId,
            leaseTtlMs: cluster.leaseTtlMs,
            onLease: (event: LeaseEvent) => cluster.metrics.leases.inc({ event }),
          },
        }
      : {}),
  });
  if (cluster) cluster.node.sessionsOwned = () => sessions.owned?.size ?? 0;
  const installDispatch = options.dispatch === undefined ? createDispatch : options.dispatch;
  // In a cluster, inbound work may go to the node whose workers have the most room.
  const clusterWork = cluster
    ? new ClusterWork({
        bus: cluster.node.bus,
        nodeId: cluster.node.nodeId,
        remoteRoom: () => cluster.node.remoteRoom(),
        isAlive: (nodeId) => cluster.node.isAlive(nodeId),
        logger,
      })
    : undefined;
  extension = installDispatch
    ? installDispatch({
        authenticator,
        store,
        sessions,
        agents,
        logger,
        metrics,
        ...(clusterWork ? { elsewhere: clusterWork } : {}),
      })
    : undefined;
  // In a cluster, hosted calls reach the workers of every node (docs/cluster.md).
  const local = extension?.hostedTools;
  const clusterTools =
    cluster && local
      ? new ClusterToolRouter({
          local,
          bus: cluster.node.bus,
          ...(cluster.node.links ? { links: cluster.node.links } : {}),
          nodeId: cluster.node.nodeId,
          remoteTools: () => cluster.node.remoteHosted(),
          isAlive: (nodeId) => cluster.node.isAlive(nodeId),
          ...(extension?.toolLoad ? { localLoad: extension.toolLoad.bind(extension) } : {}),
          remoteLoad: (nodeId, agent, tool) => cluster.node.roomOf(nodeId)?.tools[agent]?.[tool],
          logger,
        })
      : undefined;
  if (cluster && local)
    cluster.node.hostedTools = () =>
      Object.fromEntries([...agents.keys()].map((id) => [id, local.specs(id)]));
  if (cluster && extension?.room) cluster.node.workerRoom = extension.room.bind(extension);
  hostedTools = clusterTools ?? local;
  // And worker-first messages reach the node whose workers have the most free slots.
  const localMessages = extension?.messageRouter;
  const clusterMessages =
    cluster && localMessages
      ? new ClusterMessageRouter({
          local: localMessages,
          bus: cluster.node.bus,
          nodeId: cluster.node.nodeId,
          localRoom: () => extension?.room?.().messages ?? -1,
          remoteRoom: () =>
            new Map([...cluster.node.remoteRoom()].map(([nodeId, room]) => [nodeId, room.messages])),
          isAlive: (nodeId) => cluster.node.isAlive(nodeId),
          logger,
        })
      : undefined;
  messageRouter = clusterMessages ?? localMessages;
  // A worker that says hello here still running another node's message: its owner delivers it here.
  if (clusterMessages) extension?.onOrphanWork?.((workIds) => clusterMessages.orphansHere(workIds));

  let accepting = false;
  const socketGuards = new SocketGuards(limits);
  const relay = cluster
    ? new ClientRelay({
        bus: cluster.node.bus,
        nodeId: cluster.node.nodeId,
        isAlive: (nodeId) => cluster.node.isAlive(nodeId),
        directory: sessions,
        logger,
        maxSessionsPerSocket: { ...DEFAULT_CLIENT_SOCKET_LIMITS, ...options.clientSocket }
          .maxSessionsPerSocket,
      })
    : undefined;
  const clients = new ClientSocketServer({
    authenticator,
    sessions,
    logger,
    metrics,
    ...(options.clientSocket ? { limits: options.clientSocket } : {}),
    ...(relay ? { relay } : {}),
  });
  // In a cluster, HTTP requests about a session another node owns are answered by that node.
  const clusterHttp = cluster
    ? new ClusterHttp({
        bus: cluster.node.bus,
        nodeId: cluster.node.nodeId,
        logger,
      })
    : undefined;
  // A single server on Postgres is ready while its database answers, by the rule a cluster node
  // uses (`observability/database-check.ts`), and while it holds the store lock (`store/postgres-lock.ts`).
  const single = !cluster && store instanceof PostgresStore ? store : undefined;
  const database = single
    ? new DatabaseCheck({
        probe: () => single.getSession(""),
        logger,
        message: "database status",
        fields: { store: single.where },
      })
    : undefined;
  const stopDatabaseCheck = database?.every(DATABASE_CHECK_INTERVAL_MS);
  const handle = createHttpApi({
    authenticator,
    sessions,
    metrics,
    logger,
    isReady: () =>
      accepting &&
      (extension?.isReady?.() ?? true) &&
      (cluster?.node.ready ?? true) &&
      (database?.up ?? true) &&
      (single?.lockStatus ?? "held") === "held",
    ...(connectorSets.size > 0 || cluster || single
      ? {
          readiness: () => ({
            ...(connectorSets.size > 0 ? { connectors_down: connectorReadiness(connectorSets) } : {}),
            ...(cluster ? { cluster: cluster.node.readiness() } : {}),
            ...(single && database
              ? {
                  database: database.status,
                  ...(single.lockStatus ? { store_lock: single.lockStatus } : {}),
                }
              : {}),
          }),
        }
      : {}),
    ...(options.http ? { limits: options.http } : {}),
    ...(extension?.http ? { extensions: [extension.http] } : {}),
    ...(cors ? { cors } : {}),
    ...(clusterHttp ? { forwarding: clusterHttp } : {}),
  });
  const http: Server = createHttpServer((req, res) => void handle(req, res));
  http.on("upgrade", (req, socket, head) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (!accepting) {
      socket.end("HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\r\n");
      return;
    }
    // Browsers do not apply CORS to WebSockets; the Origin check is the server's to make.
    if (cors && !cors.allowsUpgrade(req)) {
      socket.end("HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n");
      return;
    }
    // Every socket, client or worker, waits for its hello within the pre-authentication limits.
    if (!socketGuards.admit(req, socket)) return;
    if (path === "/v1/client") return clients.handleUpgrade(req, socket, head);
    if (extension?.handleUpgrade?.(req, socket, head)) return;
    socket.end("HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n");
  });

  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port ?? 8787, host, () => {
      http.off("error", reject);
      resolve();
    });
  }).catch(async (error: unknown) => {
    stopDatabaseCheck?.();
    await closeConnectors();
    await sessions.close(0);
    await cluster?.node.close();
    await store.close();
    unlock?.();
    throw error;
  });
  accepting = true;
  const port = (http.address() as AddressInfo).port;
  const urlHost = host.includes(":") ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;
  logger.info("patchbay server listening", {
    url,
    agents: [...agents.keys()],
    store: describeStore(store),
    mode,
  });
  if (inMemory) logger.info("no dataDir: sessions are kept in memory and are gone when the process ends");
  if (credentials.generated) {
    // Printed once, here: nothing else knows them. Set them to keep them across starts.
    logger.warn(
      "development credentials, made up on this start (set apiKey and secret, or PATCHBAY_API_KEY and PATCHBAY_API_SECRET, to keep them)",
      { apiKey, secret },
    );
  }

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      accepting = false;
      stopDatabaseCheck?.();
      const stopped = new Promise<void>((resolve) => http.close(() => resolve()));
      http.closeIdleConnections();
      await sessions.close(options.shutdownGraceMs ?? 10_000);
      relay?.close();
      clusterTools?.close();
      clusterMessages?.close();
      clusterWork?.close();
      clusterHttp?.close();
      await cluster?.node.close();
      await extension?.close?.();
      await closeConnectors();
      await clients.close(1001, "server shutting down");
      http.closeAllConnections();
      await stopped;
      await store.close();
      unlock?.();
      logger.info("patchbay server stopped");
    })();
    return closing;
  };

  return {
    url,
    wsUrl: `ws://${urlHost}:${port}/v1/client`,
    port,
    host,
    agents,
    store,
    sessions,
    metrics,
    authenticator,
    logger,
    limits,
    connectors: connectorSets,
    mode,
    credentials: { apiKey, secret },
    reply: (agent, message, replyOptions) => replyOnce(sessions, agent, message, replyOptions),
    cluster: cluster?.node,
    hostedTools,
    close,
  };
}

/** The session's in-process tools: the server's `tools`, then the agent's connector tools. */
function serverToolsOf(
  tools: Tools | undefined,
  connectors: ConnectorSet | undefined,
  agent: AgentConfig,
  idempotencyStore: IdempotencyStore,
  logger: Logger,
): {
  serverTools?: (
    runtime: import("./sessions/session-log").SessionLog,
  ) => import("./tools/tool-backend").ToolBackend;
} {
  if (!connectors)
    return tools ? { serverTools: serverToolsFor(tools, agent, idempotencyStore, logger) } : {};
  const own = connectors.tools;
  return {
    serverTools: (runtime) => {
      const viaConnectors = serverToolsFor(own, agent, idempotencyStore, logger)(runtime);
      return tools
        ? new ChainedToolBackend([
            serverToolsFor(tools, agent, idempotencyStore, logger)(runtime),
            viaConnectors,
          ])
        : viaConnectors;
    },
  };
}

function serverToolsFor(
  tools: Tools,
  agent: AgentConfig,
  idempotencyStore: IdempotencyStore,
  logger: Logger,
) {
  return (runtime: import("./sessions/session-log").SessionLog) =>
    new ServerToolBackend({
      tools,
      sessionId: runtime.id,
      user: { id: runtime.userId },
      conversation: () => runtime.conversation().map(forEndUsers),
      idempotencyStore,
      timeoutCeilingMs: agent.serverToolTimeoutMs,
      logger,
    });
}
