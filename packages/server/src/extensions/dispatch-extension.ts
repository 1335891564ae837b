import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { Authenticator } from "../auth/auth";
import type { AgentConfig } from "../config/agent-config";
import type { HttpRouteExtension } from "../http/http-api";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import type { SessionDirectory } from "../sessions/session-directory";
import type { Store } from "../store/store";
import type { HostedToolRouter, MessageRouter, WorkElsewhere, WorkerRoom } from "./dispatch-seams";

/**
 * What the dispatch module is given when the server starts: enough to authenticate workers
 * (`authenticator.checkApiKey`), reach sessions, keep metrics (`metrics.workers`) and log.
 *
 * @example
 * ```ts
 * createServer({ dispatch: (context) => createDispatch(context) });
 * ```
 */
export interface DispatchContext {
  authenticator: Authenticator;
  store: Store;
  sessions: SessionDirectory;
  agents: ReadonlyMap<string, AgentConfig>;
  logger: Logger;
  metrics: ServerMetrics;
  /** Cluster mode: where work that comes in here may go instead (docs/cluster.md). */
  elsewhere?: WorkElsewhere;
}

/**
 * The dispatch module as the server hosts it: the two routing seams, the `/v1/worker` socket
 * (`handleUpgrade` takes the upgrades it wants and returns `true`), extra HTTP routes (the
 * inbound message and call endpoints), and `close` for a graceful shutdown (called after
 * sessions stopped, before the store closes).
 *
 * @example
 * ```ts
 * const extension: DispatchExtension = {
 *   hostedTools: router, messageRouter: router,
 *   handleUpgrade: (req, socket, head) => new URL(req.url!, "http://x").pathname === "/v1/worker" && workers.upgrade(req, socket, head),
 *   http: (req, res) => inbound.handle(req, res),
 *   close: () => workers.close(),
 * };
 * ```
 */
export interface DispatchExtension {
  hostedTools?: HostedToolRouter;
  messageRouter?: MessageRouter;
  handleUpgrade?(request: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  http?: HttpRouteExtension;
  /** `/readyz` answers 503 while this returns false. */
  isReady?(): boolean;
  /** How much room this node's workers have now; a cluster routes by it (docs/cluster.md). */
  room?(): WorkerRoom;
  /** Calls outstanding on the least busy worker hosting the tool here, if one does. */
  toolLoad?(agent: string, tool: string): number | undefined;
  close?(): Promise<void>;
}
