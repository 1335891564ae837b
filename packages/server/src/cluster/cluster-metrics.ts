import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** How a session's lease moved on this node (docs/cluster.md). */
export type LeaseEvent = "claimed" | "taken_over" | "lost" | "released";

/**
 * What `/metrics` says about this node's cluster: lease movements, the peers it hears, whether
 * its bus and database are up, and the bus's round-trip time (a request to itself each heartbeat).
 */
export class ClusterMetrics {
  readonly leases: Counter<"event">;
  readonly peers: Gauge<string>;
  readonly busConnected: Gauge<string>;
  readonly databaseUp: Gauge<string>;
  readonly busRoundTrip: Histogram<string>;
  readonly directLinks: Gauge<string>;

  constructor(registry: Registry) {
    this.leases = new Counter({
      name: "patchbay_cluster_lease_events_total",
      help: "Session lease movements on this node: claimed, taken_over (a dead node's), lost, released",
      labelNames: ["event"],
      registers: [registry],
    });
    this.peers = new Gauge({
      name: "patchbay_cluster_peers",
      help: "Other nodes heard from within three heartbeats",
      registers: [registry],
    });
    this.busConnected = new Gauge({
      name: "patchbay_cluster_bus_connected",
      help: "1 while this node's bus (NATS) is connected",
      registers: [registry],
    });
    this.databaseUp = new Gauge({
      name: "patchbay_cluster_database_up",
      help: "1 while the database answered this node's last check",
      registers: [registry],
    });
    this.busRoundTrip = new Histogram({
      name: "patchbay_cluster_bus_round_trip_seconds",
      help: "A request over the bus to this node itself and its reply, once per heartbeat",
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    });
    this.directLinks = new Gauge({
      name: "patchbay_cluster_direct_links",
      help: "Open direct links of this node to other nodes (hosted calls go on them instead of the bus)",
      registers: [registry],
    });
  }
}
