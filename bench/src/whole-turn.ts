// Scenario 4: a whole turn as the client sees it. The server and one worker run in their own
// processes; the client runs here. A turn is `session.responses.create(text)` until the reply:
// the message goes to the server, the scripted model asks for `lookup_order`, the call goes to
// the worker and back, the model replies and the reply streams to the client. Each session has
// its own client (socket), as pages do, and is replaced after a short chat (see session-pool.ts);
// the last row runs turns in one session that already has a long conversation. The first row is
// the new server's first turns, cold; the others are read once the server's turns/s stopped
// rising (warmUp in measure.ts), as a server that has been up a while answers.
//
// Baseline: the raw floor. A turn crosses two sockets (client-server, server-worker) at least
// once each way, so even a free server would cost about 2x the floor; the ratio says how many
// floor round trips a turn costs.
import { Client, type Session } from "@patchbay/client";
import type { Budget } from "./budget";
import { type Peer, spawnPeer } from "./children";
import { BENCH_API_KEY, BENCH_SECRET } from "./credentials";
import { ISSUE_20_GOALS } from "./goals";
import { BENCH_AGENT, BENCH_USER, TURN_REPLY_START, TURN_TEXT } from "./lookup-order";
import { compareLatency, compareThroughput, latencyBlock, type Rig, warmUp } from "./measure";
import { latencyRow, type Scenario, throughputRow } from "./scenario";
import { SessionPool } from "./session-pool";
import { TURNS_PER_SESSION } from "./turn-loop";

const LATENCY = "latency p50 / p99, 1 turn in flight";
const throughput = (n: number) => `turns/s, ${n} sessions at once`;
const longLatency = (turns: number) => `${LATENCY}, after ${turns} turns in the session`;
const longTurns = (budget: Budget) => (budget.quick ? 5 : 100);
const coldLatency = (budget: Budget) => `${LATENCY}, the first ${budget.coldCalls} turns of a new server`;

async function openSession(url: string): Promise<{ client: Client; session: Session }> {
  const client = new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
  try {
    return { client, session: await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id }) };
  } catch (error) {
    client.close();
    throw error;
  }
}

async function turn(session: Session): Promise<void> {
  const reply = await session.responses.create(TURN_TEXT);
  if (!reply.text.startsWith(TURN_REPLY_START)) throw new Error(`unexpected reply: ${reply.text}`);
}

/** Turns over a pool of sessions, `inFlight` at a time, each replaced after a short chat. */
export async function turnRig(
  url: string,
  inFlight: number,
  turnsPerSession = TURNS_PER_SESSION,
): Promise<Rig> {
  const pool = await SessionPool.open({
    size: inFlight + (Number.isFinite(turnsPerSession) ? 2 : 0),
    turnsPerSession,
    create: () => openSession(url),
    retire: ({ client }) => client.close(),
  });
  return {
    name: "turn",
    call: () => pool.use(({ session }) => turn(session)),
    close: async () => pool.close(),
  };
}

export const wholeTurnScenario: Scenario = {
  id: "4 whole turn",
  measures: (budget) => [
    coldLatency(budget),
    LATENCY,
    throughput(budget.inFlight),
    longLatency(longTurns(budget)),
  ],
  async run({ budget, floor }) {
    const peers: Peer<unknown>[] = [];
    const rigs: Rig[] = [];
    try {
      const server = await spawnPeer<{ url: string }>("server-process");
      peers.push(server);
      peers.push(await spawnPeer("worker", { args: [server.ready.url] }));
      const one = await turnRig(server.ready.url, 1);
      const many = await turnRig(server.ready.url, budget.inFlight);
      const long = await turnRig(server.ready.url, 1, Number.POSITIVE_INFINITY);
      rigs.push(one, many, long);
      // The new server's first turns, before any warm-up: what a process just started answers with.
      const cold = await compareLatency(one, floor, {
        ...budget,
        latencyCalls: budget.coldCalls,
        latencyMs: budget.scenarioMs / 4,
      });
      // Many sessions first: they bring the new server to its steady speed sooner than lone turns.
      await warmUp(many, budget);
      await warmUp(one, budget, 1);
      const latency = await compareLatency(one, floor, budget);
      const rate = await compareThroughput(many, floor, budget);
      // Bring one session to a long conversation, then measure its next turns.
      const turns = longTurns(budget);
      await latencyBlock(long, turns, budget.scenarioMs / 4);
      const longBudget = { ...budget, latencyCalls: Math.min(budget.latencyCalls, turns * 2) };
      const longLatencyResult = await compareLatency(long, floor, longBudget);
      const id = wholeTurnScenario.id;
      return [
        latencyRow(id, cold, floor.name, { measure: coldLatency(budget) }),
        latencyRow(id, latency, floor.name, { measure: LATENCY, maxP50Micros: ISSUE_20_GOALS.turnP50Micros }),
        throughputRow(id, rate, `${floor.name} calls`, {
          measure: throughput(budget.inFlight),
          minRate: ISSUE_20_GOALS.turnsPerSecond,
        }),
        latencyRow(id, longLatencyResult, floor.name, { measure: longLatency(turns) }),
      ];
    } finally {
      for (const rig of rigs) await rig.close();
      await Promise.all(peers.map((peer) => peer.kill()));
    }
  },
};
