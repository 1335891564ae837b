import type { Registry } from "prom-client";
import { ServerError } from "../errors";
import type { Logger } from "../observability/logger";
import type { Store } from "../store/store";
import type { Bus } from "./bus";
import { ClusterMetrics } from "./cluster-metrics";
import { ClusterNode } from "./cluster-node";
import { NatsBus } from "./nats-bus";

/**
 * Cluster mode's settings (docs/cluster.md), as `createServer({ cluster })` takes them. Cluster
 * mode is on when a NATS URL (`natsUrl`, `PATCHBAY_NATS_URL`) or this object is given.
 *
 * @example
 * ```ts
 * await createServer({ databaseUrl, natsUrl: "nats://127.0.0.1:4222", cluster: { leaseTtlMs: 10_000 } });
 * ```
 */
export interface ClusterOptions {
  /** The bus between nodes, given in code instead of `natsUrl` (tests join nodes in one process). */
  bus?: Bus;
  /** This node's id (default `n_` and a random suffix, new for every process). */
  nodeId?: string;
  /**
   * How long a session's lease lives without renewal (default 15 000 ms, `PATCHBAY_LEASE_TTL_MS`).
   * A dead node's sessions are taken over within this plus a third of it.
   */
  leaseTtlMs?: number;
  /** How often a node says it is alive and checks the database (default 2 000 ms). */
  heartbeatIntervalMs?: number;
}

/** The default lease TTL: a dead node's sessions answer again within 20 s. */
export const DEFAULT_LEASE_TTL_MS = 15_000;

/** Whether these options turn cluster mode on. */
export function clusterWanted(
  options: { natsUrl?: string; cluster?: ClusterOptions },
  env: Record<string, string | undefined>,
): boolean {
  return Boolean(options.natsUrl ?? env.PATCHBAY_NATS_URL ?? options.cluster);
}

/**
 * Joins the cluster: checks that the store keeps leases (only Postgres and the memory store do),
 * connects the bus and starts this node's heartbeat. The one place cluster mode is set up.
 */
export async function joinCluster(
  options: { natsUrl?: string; cluster?: ClusterOptions },
  env: Record<string, string | undefined>,
  store: Store,
  logger: Logger,
  registry: Registry,
): Promise<{ node: ClusterNode; leaseTtlMs: number; metrics: ClusterMetrics }> {
  if (!store.leases) {
    throw new ServerError(
      "invalid_config",
      "cluster mode (natsUrl, PATCHBAY_NATS_URL or cluster) needs a store that keeps session leases: give databaseUrl (Postgres)",
      { path: "databaseUrl" },
    );
  }
  const fromEnv = env.PATCHBAY_LEASE_TTL_MS;
  const leaseTtlMs = options.cluster?.leaseTtlMs ?? (fromEnv ? Number(fromEnv) : DEFAULT_LEASE_TTL_MS);
  if (!Number.isInteger(leaseTtlMs) || leaseTtlMs < 300 || leaseTtlMs > 600_000) {
    throw new ServerError(
      "invalid_config",
      `cluster.leaseTtlMs (PATCHBAY_LEASE_TTL_MS) must be an integer from 300 to 600000 ms, got ${fromEnv ?? options.cluster?.leaseTtlMs}`,
      { path: "cluster.leaseTtlMs" },
    );
  }
  const url = options.natsUrl ?? env.PATCHBAY_NATS_URL;
  const bus = options.cluster?.bus ?? (url ? await NatsBus.connect({ url, name: "patchbay" }) : undefined);
  if (!bus) {
    throw new ServerError(
      "invalid_config",
      "cluster mode needs a bus: natsUrl (PATCHBAY_NATS_URL) or cluster.bus",
      {
        path: "natsUrl",
      },
    );
  }
  const metrics = new ClusterMetrics(registry);
  const node = new ClusterNode({
    bus,
    leases: store.leases,
    logger,
    metrics,
    ...(options.cluster?.nodeId ? { nodeId: options.cluster.nodeId } : {}),
    ...(options.cluster?.heartbeatIntervalMs
      ? { heartbeatIntervalMs: options.cluster.heartbeatIntervalMs }
      : {}),
  });
  logger.info("joined the cluster", { nodeId: node.nodeId, leaseTtlMs });
  return { node, leaseTtlMs, metrics };
}
