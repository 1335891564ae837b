import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_RESULT_FRAME_BYTES } from "@patchbay/protocol";
import type { DispatchContext, DispatchExtension } from "../extensions/dispatch-extension";
import type { DispatchWork, WorkerRoom } from "../extensions/dispatch-seams";
import { peerSocketServer } from "../sockets/peer-socket";
import { admissionOf } from "../sockets/socket-guards";
import { DispatchMessageRouter } from "./dispatch-message-router";
import { DispatchMetrics } from "./dispatch-metrics";
import { inboundRoutes } from "./inbound-routes";
import { WorkRouter } from "./work-router";
import { WorkerRegistry } from "./worker-registry";
import { acceptWorkerSocket, WorkerCloseCodes } from "./worker-socket";
import { WorkerToolRouter } from "./worker-tool-router";

/** The path of the worker socket. */
export const WORKER_SOCKET_PATH = "/v1/worker";

/**
 * Tuning of the dispatch module. Every field has a default.
 *
 * @example
 * ```ts
 * createServer({ dispatch: (context) => createDispatch(context, { heartbeatIntervalMs: 5_000 }) });
 * ```
 */
export interface DispatchServerOptions {
  /** How often the server sends each worker a JSON `ping`; a worker silent for two intervals is dropped (4408). Default 15 s. */
  heartbeatIntervalMs?: number;
  /** How long a new worker socket has to say hello. Default 10 s. */
  helloTimeoutMs?: number;
  /** Messages and calls that may wait for a free worker. Default 256. */
  maxQueue?: number;
  /** How long work may wait for a free worker before it is dropped. Default 30 s. */
  queueTimeoutMs?: number;
  /** How long a worker has to accept offered work before it is offered to another worker. Default 10 s. */
  acceptTimeoutMs?: number;
  /** How long accepted work may run before its reply fails with `work_timeout`. Default 5 min. */
  workTimeoutMs?: number;
  /** Largest frame a worker may send, results aside. Default 5 MiB. */
  maxFrameBytes?: number;
  /** Largest `hosted.result` a worker may send (room for a 5 MiB image as base64). Default 8 MiB. */
  maxResultFrameBytes?: number;
}

/**
 * The dispatch module as the server hosts it, with its parts exposed for tests and metrics.
 *
 * @example
 * ```ts
 * const dispatch = createDispatch(context);
 * dispatch.registry.size; // connected workers
 * ```
 */
export interface DispatchModule extends DispatchExtension {
  readonly registry: WorkerRegistry;
  readonly work: WorkRouter;
  readonly tools: WorkerToolRouter;
  readonly metrics: DispatchMetrics;
}

/**
 * Builds the server side of dispatch: the `/v1/worker` socket and its worker registry, routing
 * of messages and incoming calls to the worker with the most free capacity (reserved at offer),
 * a bounded queue when all are full, hosted tool calls delivered exactly once across workers,
 * `dispatch: { text: enabled }` message routing, and the inbound message and call endpoints.
 * `createServer` installs it by default; call it yourself to tune it.
 *
 * @example
 * ```ts
 * import { createDispatch, createServer } from "@patchbay/server";
 * const server = await createServer({
 *   dataDir, configDir, apiKey, secret,
 *   dispatch: (context) => createDispatch(context, { maxQueue: 100 }),
 * });
 * ```
 */
export function createDispatch(
  context: DispatchContext,
  options: DispatchServerOptions = {},
): DispatchModule {
  const logger = context.logger.child({ component: "dispatch" });
  const metrics = new DispatchMetrics(context.metrics.registry, { workersGauge: context.metrics.workers });
  const registry = new WorkerRegistry();
  const work = new WorkRouter({
    registry,
    metrics,
    logger,
    ...(options.maxQueue === undefined ? {} : { maxQueue: options.maxQueue }),
    ...(options.queueTimeoutMs === undefined ? {} : { queueTimeoutMs: options.queueTimeoutMs }),
    ...(options.acceptTimeoutMs === undefined ? {} : { acceptTimeoutMs: options.acceptTimeoutMs }),
    ...(options.workTimeoutMs === undefined ? {} : { workTimeoutMs: options.workTimeoutMs }),
  });
  const tools = new WorkerToolRouter({ registry, metrics, logger });
  const maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  const maxResultFrameBytes = Math.max(
    maxFrameBytes,
    options.maxResultFrameBytes ?? DEFAULT_MAX_RESULT_FRAME_BYTES,
  );
  const messages = new DispatchMessageRouter(work);
  // Cluster mode: inbound work goes to the node whose workers have the most room.
  const elsewhere = context.elsewhere;
  elsewhere?.serve((payload) => work.submit(payload));
  const inbound = elsewhere
    ? {
        submit: (payload: DispatchWork) =>
          elsewhere.submit(payload, () => work.submit(payload), workerRoom(registry)[`${payload.kind}s`]),
      }
    : work;
  const sockets = peerSocketServer({ maxFrameBytes, maxResultFrameBytes });
  const deps = {
    checkApiKey: (apiKey: string, secret: string | undefined) =>
      context.authenticator.checkApiKey(apiKey, secret),
    registry,
    work,
    tools,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 15_000,
    maxFrameBytes,
    maxResultFrameBytes,
    agentExists: (agent: string) => context.agents.has(agent),
    metrics,
    logger,
    ...(options.helloTimeoutMs === undefined ? {} : { helloTimeoutMs: options.helloTimeoutMs }),
  };

  return {
    registry,
    work,
    tools,
    metrics,
    hostedTools: tools,
    messageRouter: messages,
    handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): boolean {
      const path = new URL(request.url ?? "/", "http://localhost").pathname;
      if (path !== WORKER_SOCKET_PATH) return false;
      // The server admitted the upgrade within its pre-authentication limits (socket-guards.ts).
      const guards = admissionOf(request);
      sockets.handleUpgrade(request, socket, head, (ws) => acceptWorkerSocket(ws, deps, guards));
      return true;
    },
    http: inboundRoutes({
      authenticator: context.authenticator,
      work: inbound,
      agentExists: (agent) => context.agents.has(agent),
      logger,
    }),
    isReady: () => true,
    room: () => workerRoom(registry),
    toolLoad: (agent, tool) => registry.pickForTool(agent, tool)?.calls.size,
    async close() {
      work.close();
      tools.close();
      for (const ws of sockets.clients) ws.close(WorkerCloseCodes.shutdown, "server shutting down");
      await new Promise<void>((resolve) => {
        const cut = setTimeout(() => {
          for (const ws of sockets.clients) ws.terminate();
        }, 2_000);
        sockets.close(() => {
          clearTimeout(cut);
          resolve();
        });
      });
    },
  };
}

/** The room of this node's workers, for a cluster's heartbeat (docs/cluster.md). */
function workerRoom(registry: WorkerRegistry): WorkerRoom {
  const room: WorkerRoom = { messages: -1, calls: -1, tools: {} };
  for (const worker of registry.all()) {
    const free = registry.free(worker);
    if (worker.handles.messages) room.messages = Math.max(room.messages, free);
    if (worker.handles.calls) room.calls = Math.max(room.calls, free);
    for (const [agent, hosted] of worker.hosts) {
      const tools = room.tools[agent] ?? {};
      room.tools[agent] = tools;
      for (const tool of hosted.tools.keys())
        tools[tool] = Math.min(tools[tool] ?? Infinity, worker.calls.size);
    }
  }
  return room;
}
