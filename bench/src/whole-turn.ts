// Scenario 4: a whole turn as the client sees it. The server and one worker run in their own
// processes; the client runs here. A turn is `session.responses.create(text)` until the reply:
// the message goes to the server, the scripted model asks for `lookup_order`, the call goes to
// the worker and back, the model replies and the reply streams to the client.
//
// Baseline: the raw floor. A turn crosses two sockets (client-server, server-worker) at least
// twice each, so even a free server would cost at least ~2x the floor; the ratio says how many
// floor round trips a turn costs.
import { Client, type Session } from "@patchbay/client";
import { type Peer, spawnPeer } from "./children";
import { BENCH_API_KEY, BENCH_SECRET } from "./credentials";
import { BENCH_AGENT, BENCH_USER, TURN_REPLY_START, TURN_TEXT } from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { latencyRow, type Scenario, throughputRow } from "./scenario";

const TURN_LATENCY = "latency p50 / p99, 1 turn in flight";

/** `sessions` sessions, one client (socket) each, taken by calls round-robin when idle. */
async function turnRig(url: string, sessions: number): Promise<Rig> {
  const clients: Client[] = [];
  const idle: Session[] = [];
  try {
    for (let i = 0; i < sessions; i++) {
      const client = new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
      clients.push(client);
      idle.push(await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id }));
    }
  } catch (error) {
    for (const client of clients) client.close();
    throw error;
  }
  const waiting: ((session: Session) => void)[] = [];
  return {
    name: "turn",
    async call() {
      const session = idle.pop() ?? (await new Promise<Session>((resolve) => waiting.push(resolve)));
      try {
        const reply = await session.responses.create(TURN_TEXT);
        if (!reply.text.startsWith(TURN_REPLY_START)) throw new Error(`unexpected reply: ${reply.text}`);
      } finally {
        const taker = waiting.shift();
        if (taker) taker(session);
        else idle.push(session);
      }
    },
    async close() {
      for (const client of clients) client.close();
    },
  };
}

export const wholeTurnScenario: Scenario = {
  id: "4 whole turn",
  measures: (budget) => [TURN_LATENCY, `turns/s, ${budget.inFlight} sessions`],
  async run({ budget, floor }) {
    const peers: Peer<unknown>[] = [];
    try {
      const server = await spawnPeer<{ url: string }>("server-process");
      peers.push(server);
      peers.push(await spawnPeer("worker", { args: [server.ready.url] }));
      const one = await turnRig(server.ready.url, 1);
      const many = await turnRig(server.ready.url, budget.inFlight);
      try {
        await warmUp(one, budget, 1);
        await warmUp(many, budget);
        const latency = await compareLatency(one, floor, budget);
        const throughput = await compareThroughput(many, floor, budget);
        const id = wholeTurnScenario.id;
        return [
          latencyRow(id, latency, floor.name, { measure: TURN_LATENCY }),
          throughputRow(id, throughput, `${floor.name} calls`, {
            measure: `turns/s, ${budget.inFlight} sessions`,
          }),
        ];
      } finally {
        await one.close();
        await many.close();
      }
    } finally {
      await Promise.all(peers.map((peer) => peer.kill()));
    }
  },
};
