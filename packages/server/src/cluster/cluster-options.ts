import { nanoid } from "nanoid";
import type { Registry } from "prom-client";
import { ServerError } from "../errors";
import type { Logger } from "../observability/logger";
import type { Store } from "../store/store";
import type { Bus } from "./bus";
import { ClusterMetrics } from "./cluster-metrics";
import { ClusterNode } from "./cluster-node";
import { DirectLinks, type DirectLinksOptions } from "./direct-links";
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
  /**
   * Direct links between nodes for hosted calls (docs/cluster.md, "Direct links"): this node
   * listens on `port` (`PATCHBAY_CLUSTER_PORT`; default 0, a free port) on `host` (default the
   * server's host) and tells the other nodes to connect to `advertiseHost`
   * (`PATCHBAY_CLUSTER_ADVERTISE_HOST`; default the listen host, needed when that is a wildcard
   * such as `0.0.0.0`). `false` (or `PATCHBAY_CLUSTER_PORT=off`): everything goes over the bus.
   */
  direct?: false | { host?: string; port?: number; advertiseHost?: string };
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
  options: { natsUrl?: string; cluster?: ClusterOptions; host?: string },
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
  if (!options.cluster?.bus && !url) {
    throw new ServerError(
      "invalid_config",
      "cluster mode needs a bus: natsUrl (PATCHBAY_NATS_URL) or cluster.bus",
      {
        path: "natsUrl",
      },
    );
  }
  const metrics = new ClusterMetrics(registry);
  const nodeId = options.cluster?.nodeId ?? `n_${nanoid(10)}`;
  let node: ClusterNode | undefined;
  const links = await listenDirect(
    options,
    env,
    nodeId,
    logger,
    (open) => metrics.directLinks.set(open),
    (id) => node?.directAddress(id),
  );
  const bus =
    options.cluster?.bus ??
    (await NatsBus.connect({ url: url!, name: "patchbay" }).catch(async (error: unknown) => {
      await links?.close();
      throw error;
    }));
  node = new ClusterNode({
    bus,
    leases: store.leases,
    logger,
    metrics,
    nodeId,
    ...(links ? { links } : {}),
    ...(options.cluster?.heartbeatIntervalMs
      ? { heartbeatIntervalMs: options.cluster.heartbeatIntervalMs }
      : {}),
  });
  logger.info("joined the cluster", {
    nodeId: node.nodeId,
    leaseTtlMs,
    direct: links ? `${links.address.host}:${links.address.port}` : "off",
  });
  return { node, leaseTtlMs, metrics };
}

const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", ""]);

/** Starts listening for direct links as the options and environment say (undefined: off). */
async function listenDirect(
  options: { cluster?: ClusterOptions; host?: string },
  env: Record<string, string | undefined>,
  nodeId: string,
  logger: Logger,
  onCount: (open: number) => void,
  addressOf: DirectLinksOptions["addressOf"],
): Promise<DirectLinks | undefined> {
  const direct = options.cluster?.direct;
  const fromEnv = env.PATCHBAY_CLUSTER_PORT;
  if (direct === false || (direct?.port === undefined && fromEnv === "off")) return undefined;
  const port = direct?.port ?? (fromEnv ? Number(fromEnv) : 0);
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ServerError(
      "invalid_config",
      `cluster.direct.port (PATCHBAY_CLUSTER_PORT) must be an integer from 0 to 65535 or "off", got ${direct?.port ?? fromEnv}`,
      { path: "cluster.direct.port" },
    );
  }
  const host = direct?.host ?? options.host ?? "127.0.0.1";
  const advertiseHost =
    direct?.advertiseHost ?? env.PATCHBAY_CLUSTER_ADVERTISE_HOST ?? (WILDCARDS.has(host) ? undefined : host);
  if (!advertiseHost) {
    logger.warn(
      "direct links between nodes are off: they would listen on a wildcard address and no advertise host is set (PATCHBAY_CLUSTER_ADVERTISE_HOST); hosted calls go over the bus",
      { nodeId, host },
    );
    return undefined;
  }
  const pingIntervalMs = options.cluster?.heartbeatIntervalMs;
  return DirectLinks.listen({
    nodeId,
    host,
    port,
    advertiseHost,
    addressOf,
    logger,
    onCount,
    ...(pingIntervalMs ? { pingIntervalMs } : {}),
  }).catch((error: unknown) => {
    throw new ServerError(
      "invalid_config",
      `cluster.direct.port (PATCHBAY_CLUSTER_PORT): cannot listen on ${host}:${port}: ${(error as Error).message}`,
      { path: "cluster.direct.port", cause: error },
    );
  });
}
