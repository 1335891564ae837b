// Scenario 1: a hosted tool call, server to worker and back, against the raw floor.
//
// The server runs in this process so its dispatch path can be driven without a model: the rig
// calls the dispatch module's `HostedToolRouter.call` (what the turn loop's hosted backend calls
// once a call is validated and allowed), which picks the worker, tracks the call for redelivery
// and exactly-once settling, and sends `hosted.call` on the worker socket. The worker (a child
// process, `@patchbay/dispatch`) validates the arguments against the zod schema and runs the tool
// through the `@patchbay/tools` executor with its idempotency store, and answers `hosted.result`.

import { type Peer, spawnPeer } from "./children";
import { ISSUE_20_GOALS } from "./goals";
import { callLookupOrder } from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { type BenchServer, startBenchServer, waitForWorkers } from "./patchbay-server";
import { LATENCY_MEASURE, latencyRow, type Scenario, throughputMeasure, throughputRow } from "./scenario";

/** A server in this process and `workers` worker processes hosting `lookup_order`. */
export async function startHostedSetup(
  workers: number,
  /** Node flags of the worker processes (a probe's V8 flags). */
  execArgv: string[] = [],
): Promise<{ bench: BenchServer; peers: Peer<unknown>[]; close(): Promise<void> }> {
  const bench = await startBenchServer();
  const peers: Peer<unknown>[] = [];
  const close = async () => {
    await Promise.all(peers.map((peer) => peer.kill()));
    await bench.close();
  };
  try {
    for (const p of await Promise.all(
      Array.from({ length: workers }, () => spawnPeer("worker", { args: [bench.server.url], execArgv })),
    ))
      peers.push(p);
    await waitForWorkers(bench.dispatch, workers);
  } catch (error) {
    await close();
    throw error;
  }
  return { bench, peers, close };
}

/** Hosted calls through the dispatch module's router, as the turn loop makes them. */
export function routerRig(bench: BenchServer): Rig {
  let next = 0;
  return {
    name: "hosted (router)",
    async call() {
      await callLookupOrder(bench.dispatch.tools, `call_h${(next++).toString(36)}`);
    },
    async close() {},
  };
}

export const hostedToolCallScenario: Scenario = {
  id: "1 hosted tool call",
  measures: (budget) => [LATENCY_MEASURE, throughputMeasure(budget.inFlight)],
  async run({ budget, floor }) {
    const setup = await startHostedSetup(1);
    try {
      const router = routerRig(setup.bench);
      await warmUp(router, budget);
      const latency = await compareLatency(router, floor, budget);
      const throughput = await compareThroughput(router, floor, budget);
      const id = hostedToolCallScenario.id;
      return [
        latencyRow(id, latency, floor.name, { maxRatio: ISSUE_20_GOALS.hostedP50Ratio }),
        throughputRow(id, throughput, floor.name, {
          measure: throughputMeasure(budget.inFlight),
          minRatio: ISSUE_20_GOALS.hostedRateRatio,
        }),
      ];
    } finally {
      await setup.close();
    }
  },
};
