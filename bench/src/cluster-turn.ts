// Scenario 9: a whole turn, and a hosted call alone, across a cluster (docs/cluster.md), against
// the same on one node.
//
// Subject: three nodes of a cluster on one PostgreSQL and one nats-server, both started here on
// 127.0.0.1 like the tests start them; the nodes and the baseline's server run in one child
// process (`peers/cluster-servers.ts`, which says why). The session is created on node B (which owns it while its creator's socket
// holds it), the client that runs the turns is attached on node A (relayed to B over NATS), and
// the one worker hosting `lookup_order` is connected to node C (the call goes B -> C -> worker
// and back over NATS). So the client, the session's owner and the worker are on three nodes.
//
// The hosted call alone (as scenario 1: the router a turn's hosted backend calls, no model) is
// made by node B's router, whose worker is on node C, in the servers' process on request of this
// one; the baseline's call by the single server's router, its worker connected to it. Both pay
// the same request to that process and back.
//
// nats-server runs with GOMAXPROCS=1 (see run() and bench/README.md).
//
// Baseline: one server on its own database of the same PostgreSQL (no NATS, no cluster), its
// worker and client as in scenario 4. Blocks interleave (baseline, subject, ...); goal
// (issue 19): within 1.5x at p50.
import { Client, type Session } from "@patchbay/client";
import { startTestNats, type TestNats } from "../../packages/server/src/testing/nats-server";
import { startTestPostgres, type TestPostgres } from "../../packages/server/src/testing/postgres-server";
import { type Peer, spawnPeer } from "./children";
import { onCleanup } from "./cleanup";
import { BENCH_API_KEY, BENCH_SECRET } from "./credentials";
import { ISSUE_19_GOALS } from "./goals";
import { BENCH_AGENT, BENCH_USER, TURN_REPLY_START, TURN_TEXT } from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { latencyRow, type Scenario, throughputRow } from "./scenario";
import { SessionPool } from "./session-pool";
import { TURNS_PER_SESSION } from "./turn-loop";

const LATENCY = "latency p50 / p99, 1 turn in flight; client, owner and worker on 3 nodes";
const HOSTED = "hosted call alone: latency p50 / p99, 1 in flight; owner and worker on 2 nodes";
const throughput = (n: number) => `turns/s, ${n} sessions at once; client, owner and worker on 3 nodes`;

const clientOf = (url: string) => new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });

async function turn(session: Session): Promise<void> {
  const reply = await session.responses.create(TURN_TEXT);
  if (!reply.text.startsWith(TURN_REPLY_START)) throw new Error(`unexpected reply: ${reply.text}`);
}

interface Pooled {
  clients: Client[];
  session: Session;
}

/** Turns of sessions owned by `ownerUrl` and run from a client on `edgeUrl` (the same for one node). */
async function turnRig(name: string, edgeUrl: string, ownerUrl: string, inFlight: number): Promise<Rig> {
  const pool = await SessionPool.open<Pooled>({
    size: inFlight + 2,
    turnsPerSession: TURNS_PER_SESSION,
    create: async () => {
      const owner = clientOf(ownerUrl);
      try {
        const created = await owner.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id });
        if (edgeUrl === ownerUrl) return { clients: [owner], session: created };
        const edge = clientOf(edgeUrl);
        try {
          return {
            clients: [owner, edge],
            session: await edge.agent(BENCH_AGENT).sessions.resume(created.id),
          };
        } catch (error) {
          edge.close();
          throw error;
        }
      } catch (error) {
        owner.close();
        throw error;
      }
    },
    retire: ({ clients }) => {
      for (const client of clients) client.close();
    },
  });
  return { name, call: () => pool.use(({ session }) => turn(session)), close: async () => pool.close() };
}

/** Hosted calls made by the servers' process, from node B's router or the single server's. */
function hostedRig(name: string, servers: Peer<unknown>, from: "b" | "single"): Rig {
  return {
    name,
    call: async () => void (await servers.request({ hosted: from, calls: 1 })),
    close: async () => {},
  };
}

/** Waits until a turn from `edgeUrl` on a session of `ownerUrl` works (the nodes heard each other). */
async function untilClusterAnswers(edgeUrl: string, ownerUrl: string, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  while (performance.now() < deadline) {
    const rig = await turnRig("probe", edgeUrl, ownerUrl, 1).catch((error: unknown) => {
      last = error;
      return undefined;
    });
    if (rig) {
      try {
        await rig.call();
        return;
      } catch (error) {
        last = error;
      } finally {
        await rig.close();
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the cluster did not answer a turn within ${timeoutMs} ms: ${String(last)}`);
}

export const clusterTurnScenario: Scenario = {
  id: "9 cluster: whole turn, hosted call",
  measures: (budget) => [LATENCY, throughput(budget.inFlight), HOSTED],
  async run({ budget }) {
    const peers: Peer<unknown>[] = [];
    const rigs: Rig[] = [];
    let postgres: TestPostgres | undefined;
    let nats: TestNats | undefined;
    // Stopped by the run even when this scenario is abandoned at its deadline (cleanup.ts).
    const stopServices = onCleanup(async () => {
      await nats?.stop();
      await postgres?.stop();
    });
    try {
      // nats-server gets one Go processor: with Go's default (one per core) its idle threads spin
      // on both cores this machine's nodes, workers and bench share (bench/README.md, scenario 9).
      [postgres, nats] = await Promise.all([startTestPostgres(), startTestNats({ maxProcs: 1 })]);
      // Two databases on the one server: the cluster's and the single node's.
      const clusterDb = await postgres.database();
      const singleDb = await postgres.database();
      const servers = await spawnPeer<{ single: string; a: string; b: string; c: string }>(
        "cluster-servers",
        {
          args: [singleDb, clusterDb, nats.url],
        },
      );
      peers.push(servers);
      const { single, a, b, c } = servers.ready;
      for (const worker of await Promise.all([
        spawnPeer("worker", { args: [single] }),
        spawnPeer("worker", { args: [c] }),
      ]))
        peers.push(worker);
      await untilClusterAnswers(a, b);
      const one = await turnRig("cluster", a, b, 1);
      const oneSingle = await turnRig("one node", single, single, 1);
      const many = await turnRig("cluster", a, b, budget.inFlight);
      const manySingle = await turnRig("one node", single, single, budget.inFlight);
      rigs.push(one, oneSingle, many, manySingle);
      await warmUp(one, budget, 1);
      await warmUp(oneSingle, budget, 1);
      await warmUp(many, budget);
      await warmUp(manySingle, budget);
      const hosted = hostedRig("cluster", servers, "b");
      const hostedSingle = hostedRig("one node", servers, "single");
      await warmUp(hosted, budget, 1);
      await warmUp(hostedSingle, budget, 1);
      const latency = await compareLatency(one, oneSingle, budget);
      const rate = await compareThroughput(many, manySingle, budget);
      const hostedLatency = await compareLatency(hosted, hostedSingle, budget);
      const id = clusterTurnScenario.id;
      return [
        latencyRow(id, latency, "one node", { measure: LATENCY, maxRatio: ISSUE_19_GOALS.clusterP50Ratio }),
        throughputRow(id, rate, "one node", { measure: throughput(budget.inFlight) }),
        latencyRow(id, hostedLatency, "one node", {
          measure: HOSTED,
          maxRatio: ISSUE_19_GOALS.clusterP50Ratio,
        }),
      ];
    } finally {
      for (const rig of rigs) await rig.close();
      await Promise.all(peers.map((peer) => peer.kill()));
      await stopServices();
    }
  },
};
