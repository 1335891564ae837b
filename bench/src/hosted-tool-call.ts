// Scenario 1: a hosted tool call, server to worker and back, against the raw floor.
//
// The server runs in this process so its dispatch path can be driven without a model: the rig
// calls the dispatch module's `HostedToolRouter.call` (what the turn loop's hosted backend calls
// once a call is validated and allowed), which picks the worker, tracks the call for redelivery
// and exactly-once settling, and sends `hosted.call` on the worker socket. The worker (a child
// process, `@patchbay/dispatch`) validates the arguments against the zod schema and runs the tool
// through the `@patchbay/tools` executor with its idempotency store, and answers `hosted.result`.
//
// The second pair of rows runs the same call inside the server's turn loop (a message to a
// loaded session, no client socket): the scripted model asks for `lookup_order`, the call runs as
// above, and the conversation items and events of the call are committed to SQLite and published.
// The server exports no way to run just the turn loop's tool call step (ToolCallRunner) on a
// session, so this is the closest measure of "validation, bookkeeping and events" it allows.
import { type Peer, spawnPeer } from "./children";
import {
  BENCH_AGENT,
  BENCH_USER,
  LOOKUP_ORDER,
  ORDER_ARGS,
  TURN_REPLY_START,
  TURN_TEXT,
} from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { type BenchServer, startBenchServer, waitForWorkers } from "./patchbay-server";
import { LATENCY_MEASURE, latencyRow, type Scenario, throughputMeasure, throughputRow } from "./scenario";

const noHandlers = { progress() {}, say() {}, hold() {}, attempt() {} };

/** A server in this process and `workers` worker processes hosting `lookup_order`. */
export async function startHostedSetup(
  workers: number,
): Promise<{ bench: BenchServer; peers: Peer<unknown>[]; close(): Promise<void> }> {
  const bench = await startBenchServer();
  const peers: Peer<unknown>[] = [];
  const close = async () => {
    await Promise.all(peers.map((peer) => peer.kill()));
    await bench.close();
  };
  try {
    for (const p of await Promise.all(
      Array.from({ length: workers }, () => spawnPeer("worker", { args: [bench.server.url] })),
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
      const result = await bench.dispatch.tools.call(
        {
          callId: `call_h${(next++).toString(36)}`,
          agent: BENCH_AGENT,
          sessionId: "s_bench0000000000",
          tool: LOOKUP_ORDER.name,
          arguments: { ...ORDER_ARGS },
          user: BENCH_USER,
          conversation: [],
          defaultTimeoutMs: 120_000,
          interruptible: false,
        },
        noHandlers,
      );
      if (result.outcome !== "completed")
        throw new Error(`hosted call ${result.outcome}: ${result.content.text}`);
    },
    async close() {},
  };
}

/**
 * Whole turns inside the server (no client socket), over `sessions` sessions used round-robin:
 * a session answers one message at a time (a second message interrupts the first), so each call
 * takes a session that is idle.
 */
export async function turnLoopRig(bench: BenchServer, sessions: number): Promise<Rig> {
  const principal = { kind: "backend" } as const;
  const idle: {
    live: Awaited<ReturnType<BenchServer["server"]["sessions"]["acquire"]>>["live"];
    release(): void;
  }[] = [];
  for (let i = 0; i < sessions; i++) {
    const info = await bench.server.sessions.create(principal, BENCH_AGENT, { userId: BENCH_USER.id });
    idle.push(await bench.server.sessions.acquire(principal, info.id));
  }
  const all = [...idle];
  const waiting: ((s: (typeof idle)[number]) => void)[] = [];
  let next = 0;
  return {
    name: "hosted (turn loop)",
    async call() {
      const session =
        idle.pop() ?? (await new Promise<(typeof idle)[number]>((resolve) => waiting.push(resolve)));
      try {
        await session.live.sendMessage({ commandId: `c_${(next++).toString(36)}`, text: TURN_TEXT });
        await session.live.idle();
        const items = session.live.runtime.conversation();
        const last = items[items.length - 1];
        if (last?.type !== "message" || !last.text.startsWith(TURN_REPLY_START))
          throw new Error(`turn did not end with the reply: ${JSON.stringify(last).slice(0, 200)}`);
      } finally {
        const taker = waiting.shift();
        if (taker) taker(session);
        else idle.push(session);
      }
    },
    async close() {
      for (const session of all) session.release();
    },
  };
}

export const hostedToolCallScenario: Scenario = {
  id: "1 hosted tool call",
  measures: (budget) => [
    LATENCY_MEASURE,
    throughputMeasure(budget.inFlight),
    `in the turn loop: ${LATENCY_MEASURE}`,
    `in the turn loop: turns/s, ${budget.inFlight} sessions`,
  ],
  async run({ budget, floor }) {
    const setup = await startHostedSetup(1);
    try {
      const router = routerRig(setup.bench);
      await warmUp(router, budget);
      const latency = await compareLatency(router, floor, budget);
      const throughput = await compareThroughput(router, floor, budget);
      const turns = await turnLoopRig(setup.bench, budget.inFlight);
      await warmUp(turns, budget);
      const turnLatency = await compareLatency(turns, floor, budget);
      const turnThroughput = await compareThroughput(turns, floor, budget);
      await turns.close();
      const id = hostedToolCallScenario.id;
      return [
        latencyRow(id, latency, floor.name, { maxRatio: 1.5 }),
        throughputRow(id, throughput, floor.name, {
          measure: throughputMeasure(budget.inFlight),
          minRatio: 0.6,
        }),
        latencyRow(id, turnLatency, floor.name, { measure: `in the turn loop: ${LATENCY_MEASURE}` }),
        throughputRow(id, turnThroughput, floor.name, {
          measure: `in the turn loop: turns/s, ${budget.inFlight} sessions`,
        }),
      ];
    } finally {
      await setup.close();
    }
  },
};
