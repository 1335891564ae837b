import type { InboundMessage, SessionInfo } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { MessageRouteOutcome, MessageRouteRequest, MessageRouter } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { Bus } from "./bus";

// Worker-first messages (`dispatch: { text: enabled }`) across the nodes of a cluster
// (docs/cluster.md, "Workers on any node"). The session's owner routes a user message to the node
// whose freest message-handling worker has the most free slots: itself, or another node, which
// routes it with its own router (capacity, queue, redelivery among its workers) and says how it
// ended. An interrupt on the owner withdraws it there.

/** Owner to worker node, on `patchbay.node.<node>.route`. */
type ToWorkerNode =
  | { kind: "route"; id: string; from: string; session: SessionInfo; message: InboundMessage }
  | { kind: "abort"; id: string };

/** Worker node back to the owner, on `patchbay.node.<owner>.route.back`. */
interface ToOwner {
  id: string;
  outcome: MessageRouteOutcome;
}

const routeSubject = (node: string) => `patchbay.node.${node}.route`;
const backSubject = (node: string) => `patchbay.node.${node}.route.back`;

/** Options of {@link ClusterMessageRouter}. */
export interface ClusterMessageRouterOptions {
  /** This node's own router (its connected workers). */
  local: MessageRouter;
  bus: Bus;
  nodeId: string;
  /** Free slots of this node's freest message-handling worker (`-1`: none handles messages). */
  localRoom: () => number;
  /** The same for every other live node, from its last heartbeat. */
  remoteRoom: () => ReadonlyMap<string, number>;
  isAlive: (nodeId: string) => boolean;
  logger: Logger;
  /** How often messages on nodes that went silent are given up (default 500 ms). */
  checkIntervalMs?: number;
}

interface Routed {
  node: string;
  resolve: (outcome: MessageRouteOutcome) => void;
}

/**
 * A {@link MessageRouter} over every node's workers: a message goes to the node whose freest
 * worker has the most free slots (this node on a tie). A message whose node went silent before it
 * said how the message ended is dropped with `no_worker` (the turn fails; the user may send again).
 */
export class ClusterMessageRouter implements MessageRouter {
  private readonly routed = new Map<string, Routed>();
  /** Messages this node routes for other owners, by id: how to withdraw them. */
  private readonly serving = new Map<string, AbortController>();
  private readonly stops: (() => void)[] = [];
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly options: ClusterMessageRouterOptions) {
    this.stops.push(
      options.bus.subscribe(routeSubject(options.nodeId), (message) => this.fromOwner(message.data)),
      options.bus.subscribe(backSubject(options.nodeId), (message) => this.fromWorkerNode(message.data)),
    );
    this.timer = setInterval(() => this.dropSilent(), options.checkIntervalMs ?? 500);
    this.timer.unref();
  }

  route(request: MessageRouteRequest): Promise<MessageRouteOutcome> {
    const node = this.pickNode();
    // Images and an interrupted turn are refused here by the local router, as on one server.
    if (!node || request.images.length > 0 || request.signal.aborted)
      return this.options.local.route(request);
    const id = `rt_${nanoid(12)}`;
    return new Promise((resolve) => {
      const onAbort = () => this.publish(routeSubject(node), { kind: "abort", id });
      this.routed.set(id, {
        node,
        resolve: (outcome) => {
          request.signal.removeEventListener("abort", onAbort);
          resolve(outcome);
        },
      });
      request.signal.addEventListener("abort", onAbort, { once: true });
      this.publish(routeSubject(node), {
        kind: "route",
        id,
        from: this.options.nodeId,
        session: request.session,
        message: request.message,
      });
    });
  }

  close(): void {
    clearInterval(this.timer);
    for (const stop of this.stops) stop();
  }

  /** Another live node whose freest message worker has more free slots than this node's. */
  private pickNode(): string | undefined {
    let best: string | undefined;
    let bestRoom = this.options.localRoom();
    for (const [node, room] of this.options.remoteRoom()) {
      if (room > bestRoom && this.options.isAlive(node)) {
        best = node;
        bestRoom = room;
      }
    }
    return best;
  }

  private publish(subject: string, message: ToWorkerNode | ToOwner): void {
    this.options.bus.publish(subject, JSON.stringify(message));
  }

  /** The worker side: route another node's message to this node's workers. */
  private fromOwner(data: string): void {
    const message = JSON.parse(data) as ToWorkerNode;
    if (message.kind === "abort") {
      this.serving.get(message.id)?.abort();
      return;
    }
    const controller = new AbortController();
    this.serving.set(message.id, controller);
    void this.options.local
      .route({ session: message.session, message: message.message, images: [], signal: controller.signal })
      .then((outcome) => {
        this.serving.delete(message.id);
        this.publish(backSubject(message.from), { id: message.id, outcome });
      });
  }

  /** The owner side: how a message another node routed ended. */
  private fromWorkerNode(data: string): void {
    const message = JSON.parse(data) as ToOwner;
    const routed = this.routed.get(message.id);
    if (!routed) return;
    this.routed.delete(message.id);
    routed.resolve(message.outcome);
  }

  /** Messages whose node went silent: nobody will say how they ended. */
  private dropSilent(): void {
    for (const [id, routed] of this.routed) {
      if (this.options.isAlive(routed.node)) continue;
      this.routed.delete(id);
      this.options.logger.warn("a routed message's node went silent; the message is dropped", {
        id,
        node: routed.node,
      });
      routed.resolve({
        kind: "dropped",
        error: {
          code: "no_worker",
          message: "the node of the worker handling this message stopped answering",
        },
      });
    }
  }
}
