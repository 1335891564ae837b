import type { ToolSpec } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { WorkerRoom } from "../extensions/dispatch-seams";
import { DatabaseCheck } from "../observability/database-check";
import type { Logger } from "../observability/logger";
import type { SessionLeases } from "../store/store";
import type { Bus, BusStatus } from "./bus";
import type { ClusterMetrics } from "./cluster-metrics";
import type { DirectAddress, DirectLinks } from "./direct-links";

/** The subject every node's heartbeat goes to. */
export const NODES_SUBJECT = "patchbay.nodes";

/** The subject a node answers while its process lives (a request there finds a dead node at once). */
export const pingSubject = (nodeId: string) => `patchbay.node.${nodeId}.ping`;

/**
 * What one node says about itself every heartbeat (docs/cluster.md, "Node registry").
 *
 * @example
 * ```ts
 * const beat: NodeHeartbeat = { nodeId: "n_a", startedAt: Date.now(), sessions: 3 };
 * ```
 */
export interface NodeHeartbeat {
  nodeId: string;
  startedAt: number;
  /** Sessions whose lease the node holds. */
  sessions: number;
  /** The tools its connected workers host, per agent. */
  hosted?: Record<string, ToolSpec[]>;
  /** How much room its workers have (free slots, calls outstanding per hosted tool). */
  room?: WorkerRoom;
  /** Where it takes direct links for hosted calls (absent: the bus only). */
  direct?: DirectAddress;
}

/** Options of {@link ClusterNode}. */
export interface ClusterNodeOptions {
  bus: Bus;
  leases: SessionLeases;
  logger: Logger;
  /** This node's id (default `n_` and a random suffix, new for every process). */
  nodeId?: string;
  /** How often the node says it is alive and checks the database (default 2 000 ms). */
  heartbeatIntervalMs?: number;
  metrics?: ClusterMetrics;
  /** This node's direct links (`direct-links.ts`): their address goes in its heartbeat, and they close with it. */
  links?: DirectLinks;
}

/**
 * This process as a node of a cluster: its id, its heartbeat on the bus, the other nodes heard
 * from in the last three heartbeats, and whether it can serve (the bus is connected and the
 * database answered its last check). Leases, not heartbeats, decide who owns a session.
 */
export class ClusterNode {
  readonly nodeId: string;
  readonly startedAt = Date.now();
  readonly bus: Bus;
  /** Direct links to other nodes for hosted calls (undefined: the bus carries everything). */
  readonly links: DirectLinks | undefined;
  private readonly peers = new Map<string, { beat: NodeHeartbeat; seenAt: number; hosted: string }>();
  /** What `remoteHosted` answers until a peer's hosted tools change or a peer goes (read per hosted call). */
  private hostedSnapshot: Map<string, Record<string, ToolSpec[]>> | undefined;
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly intervalMs: number;
  /** Whether the database answered this node's last heartbeat check (the rule of `/readyz`). */
  private readonly database: DatabaseCheck;
  /** Sessions this node owns now, for its heartbeat (set once the session directory exists). */
  sessionsOwned: (() => number) | undefined;
  /** The tools this node's workers host, per agent, for its heartbeat (set by the server). */
  hostedTools: (() => Record<string, ToolSpec[]>) | undefined;
  /** The room of this node's workers, for its heartbeat (set by the server). */
  workerRoom: (() => WorkerRoom) | undefined;
  private readonly stopListening: () => void;
  private readonly stopPing: () => void;
  private readonly stopStatus: () => void;

  constructor(private readonly options: ClusterNodeOptions) {
    this.nodeId = options.nodeId ?? `n_${nanoid(10)}`;
    this.bus = options.bus;
    this.links = options.links;
    this.intervalMs = options.heartbeatIntervalMs ?? 2_000;
    this.database = new DatabaseCheck({
      probe: () => options.leases.get(""),
      logger: options.logger,
      message: "cluster database status",
      fields: { nodeId: this.nodeId },
      timeoutMs: this.intervalMs,
    });
    this.stopListening = this.bus.subscribe(NODES_SUBJECT, (message) => {
      try {
        const beat = JSON.parse(message.data) as NodeHeartbeat;
        if (typeof beat.nodeId === "string" && beat.nodeId !== this.nodeId) {
          const hosted = JSON.stringify(beat.hosted ?? null);
          if (this.peers.get(beat.nodeId)?.hosted !== hosted) this.hostedSnapshot = undefined;
          this.peers.set(beat.nodeId, { beat, seenAt: Date.now(), hosted });
        }
      } catch {
        // Not a heartbeat of ours: ignored.
      }
    });
    this.stopPing = this.bus.subscribe(pingSubject(this.nodeId), (message) => message.reply(""));
    this.stopStatus = this.bus.onStatus((status: BusStatus) =>
      options.logger[status === "connected" ? "info" : "warn"]("cluster bus status", {
        nodeId: this.nodeId,
        status,
      }),
    );
    this.timer = setInterval(() => void this.beat(), this.intervalMs);
    this.timer.unref();
    void this.beat();
  }

  /** Other nodes heard from within three heartbeats, by id. */
  nodes(): NodeHeartbeat[] {
    this.dropSilent();
    return [...this.peers.values()].map((peer) => peer.beat);
  }

  /**
   * The hosted tools of every other live node's workers, by node and agent: one map kept until a
   * heartbeat changes them or a node goes silent (callers may index it by identity).
   */
  remoteHosted(): ReadonlyMap<string, Readonly<Record<string, readonly ToolSpec[]>>> {
    this.dropSilent();
    if (!this.hostedSnapshot) {
      this.hostedSnapshot = new Map();
      for (const { beat } of this.peers.values())
        if (beat.hosted) this.hostedSnapshot.set(beat.nodeId, beat.hosted);
    }
    return this.hostedSnapshot;
  }

  /** Forgets nodes not heard from within three heartbeats. */
  private dropSilent(): void {
    const cutoff = Date.now() - 3 * this.intervalMs;
    for (const [id, peer] of this.peers)
      if (peer.seenAt < cutoff) {
        this.peers.delete(id);
        this.hostedSnapshot = undefined;
      }
  }

  /** The room of every other live node's workers, by node. */
  remoteRoom(): Map<string, WorkerRoom> {
    const room = new Map<string, WorkerRoom>();
    for (const beat of this.nodes()) if (beat.room) room.set(beat.nodeId, beat.room);
    return room;
  }

  /** The room of one other live node's workers (read per hosted call: no map is built). */
  roomOf(nodeId: string): WorkerRoom | undefined {
    return this.isAlive(nodeId) ? this.peers.get(nodeId)?.beat.room : undefined;
  }

  /** Another live node's direct-link address, from its last heartbeat (undefined: the bus only). */
  directAddress(nodeId: string): DirectAddress | undefined {
    if (!this.isAlive(nodeId)) return undefined;
    const direct = this.peers.get(nodeId)?.beat.direct;
    return direct &&
      typeof direct.host === "string" &&
      Number.isInteger(direct.port) &&
      typeof direct.token === "string"
      ? direct
      : undefined;
  }

  /** Whether another node was heard from within three heartbeats. */
  isAlive(nodeId: string): boolean {
    const peer = this.peers.get(nodeId);
    return peer !== undefined && peer.seenAt >= Date.now() - 3 * this.intervalMs;
  }

  /** Whether this node can take work: the bus is connected and the database answers. */
  get ready(): boolean {
    return this.bus.status === "connected" && this.database.up;
  }

  /** What `/readyz` says about the cluster. */
  readiness(): { node: string; bus: BusStatus; database: "up" | "down"; peers: string[] } {
    return {
      node: this.nodeId,
      bus: this.bus.status,
      database: this.database.status,
      peers: this.nodes().map((node) => node.nodeId),
    };
  }

  /** One heartbeat: say this node is alive and check that the database answers. */
  async beat(): Promise<void> {
    const beat: NodeHeartbeat = {
      nodeId: this.nodeId,
      startedAt: this.startedAt,
      sessions: this.sessionsOwned?.() ?? 0,
      ...(this.hostedTools ? { hosted: this.hostedTools() } : {}),
      ...(this.workerRoom ? { room: this.workerRoom() } : {}),
      ...(this.links ? { direct: this.links.address } : {}),
    };
    this.bus.publish(NODES_SUBJECT, JSON.stringify(beat));
    const databaseUp = await this.database.check();
    const metrics = this.options.metrics;
    if (metrics) {
      metrics.databaseUp.set(databaseUp ? 1 : 0);
      metrics.busConnected.set(this.bus.status === "connected" ? 1 : 0);
      metrics.peers.set(this.nodes().length);
      if (this.bus.status === "connected") {
        const started = performance.now();
        await this.bus.request(pingSubject(this.nodeId), "", { timeoutMs: this.intervalMs }).then(
          () => metrics.busRoundTrip.observe((performance.now() - started) / 1000),
          () => {},
        );
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.stopListening();
    this.stopPing();
    this.stopStatus();
    await this.links?.close();
    await this.bus.close();
  }
}
