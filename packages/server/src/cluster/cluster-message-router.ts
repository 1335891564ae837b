import { randomUUID } from "node:crypto";
import type { InboundMessage, SessionInfo } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { MessageRouteOutcome, MessageRouteRequest, MessageRouter } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { Bus } from "./bus";

// Worker-first messages (`dispatch: { text: enabled }`) across the nodes of a cluster
// (docs/cluster.md, "Workers on any node"). The session's owner routes a user message to the node
// whose freest message-handling worker has the most free slots: itself, or another node, which
// routes it with its own router (capacity, queue, redelivery among its workers) and says how it
// ended. An interrupt on the owner withdraws it there. The owner fixes the work's id: when the
// node it went to goes silent, or a worker says hello on another node still running it (its
// node died), the owner delivers it again under that id, once, to where it now can run: the
// worker still running it is joined there (`WorkRouter`'s join), or another worker gets it as
// on one server when a worker goes away (a higher attempt). Answers of an older delivery count
// for nothing.

/** Owner to worker node, on `patchbay.node.<node>.route`. */
type ToWorkerNode =
  | {
      kind: "route";
      id: string;
      from: string;
      delivery: number;
      workId: string;
      session: SessionInfo;
      message: InboundMessage;
    }
  | { kind: "abort"; id: string };

/** Worker node back to the owner, on `patchbay.node.<owner>.route.back`. */
interface ToOwner {
  id: string;
  delivery: number;
  outcome: MessageRouteOutcome;
}

/** A node whose worker said hello still running work it never gave out, on `patchbay.work.orphans`. */
interface Orphans {
  node: string;
  workIds: string[];
}

const routeSubject = (node: string) => `patchbay.node.${node}.route`;
const backSubject = (node: string) => `patchbay.node.${node}.route.back`;
const ORPHANS_SUBJECT = "patchbay.work.orphans";

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
  /** How often messages on nodes that went silent are delivered again (default 500 ms). */
  checkIntervalMs?: number;
}

interface Routed {
  /** The node the latest delivery went to (this node's id: its own workers). */
  node: string;
  delivery: number;
  workId: string;
  request: MessageRouteRequest;
  resolve: (outcome: MessageRouteOutcome) => void;
  /** Withdraws a delivery to this node's own workers when the message goes elsewhere. */
  local: AbortController | undefined;
}

/**
 * A {@link MessageRouter} over every node's workers: a message goes to the node whose freest
 * worker has the most free slots (this node on a tie). A message whose node went silent before it
 * said how the message ended is delivered again, same work id, to the live node with the most room
 * (or this node's own workers), and dropped with `no_worker` only when no worker handles messages.
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
      options.bus.subscribe(ORPHANS_SUBJECT, (message) => this.fromOrphans(message.data)),
    );
    this.timer = setInterval(() => this.rerouteFromSilent(), options.checkIntervalMs ?? 500);
    this.timer.unref();
  }

  route(request: MessageRouteRequest): Promise<MessageRouteOutcome> {
    const node = this.pickNode(undefined);
    // Images and an interrupted turn are refused here by the local router, as on one server.
    if (!node || request.images.length > 0 || request.signal.aborted)
      return this.options.local.route(request);
    const id = `rt_${nanoid(12)}`;
    return new Promise((resolve) => {
      const onAbort = () => {
        const routed = this.routed.get(id);
        if (routed && routed.node !== this.options.nodeId)
          this.publish(routeSubject(routed.node), { kind: "abort", id });
      };
      const routed: Routed = {
        node,
        delivery: 0,
        workId: `wk_${randomUUID()}`,
        request,
        local: undefined,
        resolve: (outcome) => {
          request.signal.removeEventListener("abort", onAbort);
          resolve(outcome);
        },
      };
      this.routed.set(id, routed);
      request.signal.addEventListener("abort", onAbort, { once: true });
      this.deliver(id, routed, node);
    });
  }

  /** Tells every node that a worker here runs work this node never gave out (it said hello). */
  orphansHere(workIds: string[]): void {
    const orphans: Orphans = { node: this.options.nodeId, workIds };
    this.options.bus.publish(ORPHANS_SUBJECT, JSON.stringify(orphans));
  }

  close(): void {
    clearInterval(this.timer);
    for (const stop of this.stops) stop();
  }

  /**
   * The live node other than `not` whose freest message worker has more free slots than this
   * node's; undefined when this node's own workers have as much room.
   */
  private pickNode(not: string | undefined): string | undefined {
    let best: string | undefined;
    let bestRoom = this.options.localRoom();
    for (const [node, room] of this.options.remoteRoom()) {
      if (node !== not && room > bestRoom && this.options.isAlive(node)) {
        best = node;
        bestRoom = room;
      }
    }
    return best;
  }

  /** Sends the message's next delivery to `node` (this node: its own router), same work id. */
  private deliver(id: string, routed: Routed, node: string): void {
    routed.node = node;
    routed.delivery += 1;
    const { delivery, workId, request } = routed;
    if (node === this.options.nodeId) {
      const local = new AbortController();
      routed.local = local;
      void this.options.local
        .route({
          ...request,
          signal: AbortSignal.any([request.signal, local.signal]),
          given: { workId, attempt: delivery },
        })
        .then((outcome) => this.settle(id, delivery, outcome));
      return;
    }
    this.publish(routeSubject(node), {
      kind: "route",
      id,
      from: this.options.nodeId,
      delivery,
      workId,
      session: request.session,
      message: request.message,
    });
  }

  /** Delivers the message again elsewhere, once: the node it went to cannot say how it ended. */
  private reroute(id: string, routed: Routed, to: string | undefined, why: string): void {
    const from = routed.node;
    // A node only frozen, not dead, lets go of what it has not given a worker yet.
    if (from !== this.options.nodeId) this.publish(routeSubject(from), { kind: "abort", id });
    else routed.local?.abort();
    this.options.logger.warn(why, { id, workId: routed.workId, from, to: to ?? this.options.nodeId });
    this.deliver(id, routed, to ?? this.options.nodeId);
  }

  private settle(id: string, delivery: number, outcome: MessageRouteOutcome): void {
    const routed = this.routed.get(id);
    // An answer of an older delivery (its node was given up on) changes nothing.
    if (!routed || routed.delivery !== delivery) return;
    this.routed.delete(id);
    routed.resolve(outcome);
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
    const { id, from, delivery, workId } = message;
    const controller = new AbortController();
    this.serving.set(id, controller);
    void this.options.local
      .route({
        session: message.session,
        message: message.message,
        images: [],
        signal: controller.signal,
        given: { workId, attempt: delivery },
      })
      .then((outcome) => {
        if (this.serving.get(id) === controller) this.serving.delete(id);
        this.publish(backSubject(from), { id, delivery, outcome });
      });
  }

  /** The owner side: how a message another node routed ended. */
  private fromWorkerNode(data: string): void {
    const message = JSON.parse(data) as ToOwner;
    this.settle(message.id, message.delivery, message.outcome);
  }

  /** A worker said hello on `node` still running work this node routed elsewhere: it goes there. */
  private fromOrphans(data: string): void {
    const orphans = JSON.parse(data) as Orphans;
    const ids = new Set(orphans.workIds);
    for (const [id, routed] of this.routed) {
      if (!ids.has(routed.workId) || routed.node === orphans.node) continue;
      this.reroute(
        id,
        routed,
        orphans.node,
        "a routed message's worker is on another node now; delivering it there",
      );
    }
  }

  /** Messages whose node went silent go to the node with the most room now, same work id. */
  private rerouteFromSilent(): void {
    for (const [id, routed] of this.routed) {
      if (routed.node === this.options.nodeId || this.options.isAlive(routed.node)) continue;
      const next = this.pickNode(routed.node);
      if (next || this.options.localRoom() >= 0) {
        this.reroute(id, routed, next, "a routed message's node went silent; delivering it again elsewhere");
        continue;
      }
      this.routed.delete(id);
      this.options.logger.warn(
        "a routed message's node went silent and no worker handles messages; the message is dropped",
        {
          id,
          node: routed.node,
        },
      );
      routed.resolve({
        kind: "dropped",
        error: {
          code: "no_worker",
          message:
            "the node of the worker handling this message stopped answering, and no other worker handles messages",
        },
      });
    }
  }
}
