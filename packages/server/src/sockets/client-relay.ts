import type { ServerToClientFrame } from "@patchbay/protocol";
import type { Principal } from "../auth/auth";
import type { Bus } from "../cluster/bus";
import { watchOwner } from "../cluster/owner-watch";
import { ServerError, toWireError } from "../errors";
import type { Logger } from "../observability/logger";
import type { SessionDirectory } from "../sessions/session-directory";
import { correlationOf } from "./frame-correlation";
import { SessionAttachments } from "./session-attachments";
import { handleSessionFrame, type SessionFrame } from "./session-frames";

// A client attached to a node that does not own its session is served by the owner, across the
// bus (docs/cluster.md, "relay, not move"). The node the client reached (the edge) forwards the
// session's frames to the owner; the owner handles them exactly as its own client socket would
// (`session-frames.ts`) on a relayed connection, and its frames come back to the edge in order.
// Nodes trust each other on the bus: the edge authenticated the client and names its principal.

/** From an edge to the owner, on `patchbay.node.<owner>.client`. */
type ToOwner =
  | { edge: string; conn: string; principal: Principal; frame: SessionFrame }
  | { edge: string; conn: string; gone: true };

const ownerSubject = (node: string) => `patchbay.node.${node}.client`;
const edgeSubject = (node: string, conn: string) => `patchbay.node.${node}.conn.${conn}`;

/** Options of {@link ClientRelay}. */
export interface ClientRelayOptions {
  bus: Bus;
  nodeId: string;
  /** Whether a node was heard from lately (the cluster's registry). */
  isAlive: (nodeId: string) => boolean;
  directory: SessionDirectory;
  logger: Logger;
  maxSessionsPerSocket: number;
  /** How often relays to nodes that went silent are dropped (default 1 000 ms). */
  checkIntervalMs?: number;
  /** How long an edge waits for the owner to answer a relayed resume (default 2 000 ms). */
  answerTimeoutMs?: number;
}

/** One client connection's sessions that live on other nodes (the edge side). */
export class EdgeRelay {
  /** Relayed sessions and the node that owns each. */
  private readonly remote = new Map<string, string>();
  /** Resumes sent to an owner and not answered yet, by request id: the bound's timer and the owner's watch. */
  private readonly waiting = new Map<
    string,
    { timer: ReturnType<typeof setTimeout>; stopWatch: () => void }
  >();

  constructor(
    private readonly relay: ClientRelay,
    readonly connectionId: string,
    private readonly send: (frame: ServerToClientFrame) => void,
  ) {}

  /** The owner a frame of this connection goes to, when its session is relayed. */
  ownerOf(frame: SessionFrame): string | undefined {
    return "sessionId" in frame ? this.remote.get(frame.sessionId) : undefined;
  }

  /** Starts or continues relaying the frame's session to `owner`. */
  forward(owner: string, principal: Principal, frame: SessionFrame): void {
    if (!this.relay.busUp) {
      // This node cannot reach the owner: the client should attach through another node.
      if ("sessionId" in frame) this.remote.delete(frame.sessionId);
      throw new ServerError(
        "unavailable",
        "this node lost its connection to the cluster's bus; connect to another node",
        {
          path: "sessionId",
        },
      );
    }
    if (!this.relay.isAlive(owner)) {
      if ("sessionId" in frame) this.remote.delete(frame.sessionId);
      throw new ServerError(
        "unavailable",
        `the node serving this session (${owner}) is not answering; retry shortly`,
        {
          path: "sessionId",
        },
      );
    }
    if ("sessionId" in frame) {
      if (frame.type === "session.close") this.remote.delete(frame.sessionId);
      else this.remote.set(frame.sessionId, owner);
    }
    if (frame.type === "session.resume") {
      // An owner that died since it was last heard from never answers: the client hears so in
      // bounded time and attaches again (by then another node may have taken the session).
      const { requestId, sessionId } = frame;
      this.stopWaiting(requestId);
      const giveUp = () => {
        this.stopWaiting(requestId);
        this.remote.delete(sessionId);
        this.send({
          type: "error",
          code: "unavailable",
          message: `the node serving session ${sessionId} (${owner}) did not answer; retry shortly`,
          requestId,
          sessionId,
          path: "sessionId",
        });
      };
      const timer = setTimeout(giveUp, this.relay.answerTimeoutMs);
      timer.unref?.();
      // An owner whose process died has no subscriptions left: the bus says so at once, and the
      // client need not wait out the timeout before it attaches again (docs/cluster.md).
      const stopWatch = this.relay.watchOwner(owner, giveUp);
      this.waiting.set(requestId, { timer, stopWatch });
    }
    this.relay.publishToOwner(owner, { edge: this.relay.nodeId, conn: this.connectionId, principal, frame });
  }

  /** A frame the owner sent for this connection. */
  deliver(frame: ServerToClientFrame): void {
    if ("requestId" in frame && typeof frame.requestId === "string") this.stopWaiting(frame.requestId);
    // The owner lost the session (or it was deleted): later frames must not go there.
    if (
      frame.type === "error" &&
      frame.sessionId &&
      (frame.code === "unavailable" || frame.code === "not_found")
    )
      this.remote.delete(frame.sessionId);
    this.send(frame);
  }

  /** Stops waiting for the owner's answer to a resume: its timer and the owner's watch. */
  private stopWaiting(requestId: string): void {
    const waiting = this.waiting.get(requestId);
    if (!waiting) return;
    this.waiting.delete(requestId);
    clearTimeout(waiting.timer);
    waiting.stopWatch();
  }

  /** Drops sessions whose owner went silent, telling the client to attach again. */
  dropSilent(): void {
    for (const [sessionId, owner] of this.remote) {
      if (this.relay.isAlive(owner)) continue;
      this.remote.delete(sessionId);
      this.send({
        type: "error",
        code: "unavailable",
        message: `session ${sessionId} moved to another node: attach again`,
        sessionId,
        path: "sessionId",
      });
    }
  }

  /** The client went: the owners let go of what they held for it. */
  close(): void {
    for (const requestId of [...this.waiting.keys()]) this.stopWaiting(requestId);
    for (const owner of new Set(this.remote.values()))
      this.relay.publishToOwner(owner, { edge: this.relay.nodeId, conn: this.connectionId, gone: true });
    this.remote.clear();
    this.relay.forget(this.connectionId);
  }
}

/** A client connection of another node, served here because this node owns its sessions. */
class RelayedConnection {
  readonly attachments: SessionAttachments;
  private work: Promise<void> = Promise.resolve();

  constructor(
    readonly edge: string,
    readonly conn: string,
    private readonly options: ClientRelayOptions,
  ) {
    const subject = edgeSubject(edge, conn);
    this.attachments = new SessionAttachments(
      {
        id: `${edge}/${conn}`,
        isOpen: true,
        // A committed event comes as the text the store wrote (change-json.ts): sent as it is.
        send: (frame) =>
          options.bus.publish(subject, typeof frame === "string" ? frame : JSON.stringify(frame)),
        drained: () => options.bus.flush(),
        // Nothing held here: the bus sends a publish on its own schedule.
        writeNow: () => {},
      },
      options.directory,
      options.maxSessionsPerSocket,
    );
  }

  handle(principal: Principal, frame: SessionFrame): void {
    this.work = this.work.then(() =>
      handleSessionFrame(frame, {
        principal,
        connectionId: `${this.edge}/${this.conn}`,
        directory: this.options.directory,
        attachments: this.attachments,
        send: (reply) => this.send(reply),
      }).catch((error: unknown) => {
        if (!(error instanceof ServerError))
          this.options.logger.error("relayed client frame failed", {
            type: frame.type,
            edge: this.edge,
            error,
          });
        this.send({ type: "error", ...toWireError(error), ...correlationOf(frame) });
      }),
    );
  }

  private send(frame: ServerToClientFrame): void {
    this.options.bus.publish(edgeSubject(this.edge, this.conn), JSON.stringify(frame));
  }
}

/**
 * Both ends of the client relay of one node: the edge side ({@link EdgeRelay}, one per client
 * connection that attached a session owned elsewhere) and the owner side (the connections other
 * nodes relay here).
 */
export class ClientRelay {
  readonly nodeId: string;
  readonly answerTimeoutMs: number;
  private readonly edges = new Map<string, EdgeRelay>();
  private readonly relayed = new Map<string, RelayedConnection>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly options: ClientRelayOptions) {
    this.nodeId = options.nodeId;
    this.answerTimeoutMs = options.answerTimeoutMs ?? 2_000;
    this.unsubscribe.push(
      options.bus.subscribe(ownerSubject(options.nodeId), (message) => this.fromEdge(message.data)),
      options.bus.subscribe(edgeSubject(options.nodeId, "*"), (message) => {
        const conn = message.subject.split(".").at(-1)!;
        const edge = this.edges.get(conn);
        if (edge) edge.deliver(JSON.parse(message.data) as ServerToClientFrame);
      }),
    );
    this.timer = setInterval(() => this.dropSilent(), options.checkIntervalMs ?? 1_000);
    this.timer.unref();
  }

  /** Whether this node's bus is connected (a relay needs it). */
  get busUp(): boolean {
    return this.options.bus.status === "connected";
  }

  isAlive(nodeId: string): boolean {
    return nodeId !== this.nodeId && this.options.isAlive(nodeId);
  }

  /** The edge side of a client connection. */
  edge(connectionId: string, send: (frame: ServerToClientFrame) => void): EdgeRelay {
    const edge = new EdgeRelay(this, connectionId, send);
    this.edges.set(connectionId, edge);
    return edge;
  }

  /** @internal */
  forget(connectionId: string): void {
    this.edges.delete(connectionId);
  }

  /**
   * @internal Watches the owner's process on the bus (`owner-watch.ts`: a ping at once, then every
   * 500 ms at most) and calls `onGone` once it is gone; returns `stop`.
   */
  watchOwner(owner: string, onGone: () => void): () => void {
    return watchOwner(this.options.bus, owner, {
      firstAfterMs: 0,
      everyMs: Math.min(500, this.answerTimeoutMs),
      onGone,
    });
  }

  /** @internal */
  publishToOwner(owner: string, message: ToOwner): void {
    this.options.bus.publish(ownerSubject(owner), JSON.stringify(message));
  }

  /** Connections relayed here now (for tests and metrics). */
  get relayedCount(): number {
    return this.relayed.size;
  }

  close(): void {
    clearInterval(this.timer);
    for (const stop of this.unsubscribe) stop();
    for (const connection of this.relayed.values()) connection.attachments.detachAll();
    this.relayed.clear();
  }

  private fromEdge(data: string): void {
    let message: ToOwner;
    try {
      message = JSON.parse(data) as ToOwner;
    } catch {
      return;
    }
    const key = `${message.edge}/${message.conn}`;
    if ("gone" in message) {
      this.relayed.get(key)?.attachments.detachAll();
      this.relayed.delete(key);
      return;
    }
    let connection = this.relayed.get(key);
    if (!connection) {
      connection = new RelayedConnection(message.edge, message.conn, this.options);
      this.relayed.set(key, connection);
    }
    connection.handle(message.principal, message.frame);
  }

  /** Edges that went silent let go of their relayed connections; edges drop dead owners. */
  private dropSilent(): void {
    for (const [key, connection] of this.relayed) {
      if (this.options.isAlive(connection.edge)) continue;
      connection.attachments.detachAll();
      this.relayed.delete(key);
    }
    for (const edge of this.edges.values()) edge.dropSilent();
  }
}
