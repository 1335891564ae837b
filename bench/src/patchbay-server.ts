// A Patchbay server for the benchmarks: real SQLite in a temp directory, the dispatch module
// installed, one agent (`support`) with the scripted model and a rule that calls `lookup_order`.
// Used in this process (to drive the router and page tool path directly) and by the server peer.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Bus,
  createDispatch,
  createServer,
  type DispatchModule,
  MemoryStore,
  type PatchbayServer,
  silentLogger,
} from "@patchbay/server";
import { BENCH_API_KEY, BENCH_SECRET } from "./credentials";
import { BENCH_AGENT } from "./lookup-order";

export interface BenchServer {
  server: PatchbayServer;
  dispatch: DispatchModule;
  close(): Promise<void>;
}

/**
 * Starts the server on 127.0.0.1 with a free port.
 *
 * The client socket's per-connection rate limit is raised: by default it lets a connection send
 * 100 frames per second (burst 200), which a benchmark driving one page or one session flat out
 * passes within a second. The limit is a guard against abuse, not part of a tool call's cost.
 * The byte, session and pre-authentication quotas are raised for the same reason.
 */
export async function startBenchServer(
  options: { databaseUrl?: string; natsUrl?: string; bus?: Bus } = {},
): Promise<BenchServer> {
  // BENCH_DATA_ROOT=/dev/shm puts SQLite on tmpfs, to tell the disk's share of a figure from the CPU's.
  const dataDir = mkdtempSync(join(process.env.BENCH_DATA_ROOT ?? tmpdir(), "patchbay-bench-"));
  // A server in a peer process is stopped by its exit (SIGTERM, children.ts), not by close().
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  process.once("exit", removeDataDir);
  // BENCH_STORE=memory runs the server on its in-memory store (no SQLite at all), to tell the
  // store's share of a figure from the rest. A diagnosis only: such a server keeps nothing.
  const memoryStore = process.env.BENCH_STORE === "memory" ? { store: new MemoryStore() } : {};
  let dispatch: DispatchModule | undefined;
  // The cluster scenario runs this server on Postgres, and as a node of a cluster over NATS.
  // A probe may join nodes in one process over a `MemoryBus` instead (the cluster's JS cost alone).
  const { databaseUrl, natsUrl, bus } = options;
  const server = await createServer({
    port: 0,
    host: "127.0.0.1",
    dataDir,
    ...memoryStore,
    ...(databaseUrl ? { databaseUrl } : {}),
    ...(natsUrl ? { natsUrl } : {}),
    ...(bus ? { cluster: { bus } } : {}),
    apiKey: BENCH_API_KEY,
    secret: BENCH_SECRET,
    logger: silentLogger,
    clientSocket: { rateBurst: 1_000_000, ratePerSecond: 1_000_000 },
    // Likewise the quotas (docs/security.md): a benchmark is one user on one address driving
    // thousands of sessions and frames, which is what they are there to stop.
    limits: {
      connectionBytesPerSecond: 1 << 30,
      userBytesPerSecond: 1 << 30,
      maxSessionsPerUser: 1_000_000_000,
      maxUnauthenticatedSockets: 1_000_000,
      maxUnauthenticatedPerAddress: 1_000_000,
    },
    agents: {
      [BENCH_AGENT]: {
        instructions: "Answer questions about orders.",
        model: {
          provider: "scripted",
          rules: [
            {
              match: "order (?<order_id>[A-Z0-9]+)",
              toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{order_id}" } }],
              reply:
                "Order {order_id} is {results.lookup_order.status}, arriving in {results.lookup_order.eta}.",
            },
          ],
        },
      },
    },
    dispatch: (context) => {
      dispatch = createDispatch(context);
      return dispatch;
    },
  });
  return {
    server,
    dispatch: dispatch!,
    async close() {
      await server.close();
      process.off("exit", removeDataDir);
      removeDataDir();
    },
  };
}

/** Resolves once `count` connected workers host `lookup_order` (or rejects after `timeoutMs`). */
export async function waitForWorkers(
  dispatch: DispatchModule,
  count: number,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (dispatch.registry.size < count || !dispatch.tools.hasTool(BENCH_AGENT, "lookup_order")) {
    if (performance.now() > deadline)
      throw new Error(`${count} worker(s) did not connect within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
