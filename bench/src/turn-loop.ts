// Scenario 1, second pair of rows: the hosted tool call inside the server's turn loop, with no
// client socket. A message goes to a loaded session (`LiveSession.sendMessage`); the scripted
// model asks for `lookup_order`; the turn loop validates the arguments, records the call's
// conversation items and events in SQLite and publishes them, routes the call to the worker as
// in the router rows, and the model replies. The server exports no way to run only the turn
// loop's tool call step on a session (its ToolCallRunner is internal), so a turn with the
// scripted model (cheap: a regular expression and a template) is the closest measure of
// "validation, idempotency bookkeeping and events" around a hosted call.
import type { PatchbayServer } from "@patchbay/server";
import { startHostedSetup } from "./hosted-tool-call";
import { BENCH_AGENT, BENCH_USER, TURN_REPLY_START, TURN_TEXT } from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import type { BenchServer } from "./patchbay-server";
import { LATENCY_MEASURE, latencyRow, type Scenario, throughputRow } from "./scenario";
import { SessionPool } from "./session-pool";

/** A loaded session, as the server's session directory hands it out (the class is internal). */
type LiveSession = Awaited<ReturnType<PatchbayServer["sessions"]["acquire"]>>["live"];

/** Turns of one session before it is replaced (a short chat). */
export const TURNS_PER_SESSION = 10;

/** Whole turns inside the server over a pool of loaded sessions, `inFlight` at a time. */
export async function turnLoopRig(bench: BenchServer, inFlight: number): Promise<Rig> {
  const principal = { kind: "backend" } as const;
  const pool = await SessionPool.open<{ live: LiveSession; release(): void }>({
    size: inFlight + 2,
    turnsPerSession: TURNS_PER_SESSION,
    async create() {
      const info = await bench.server.sessions.create(principal, BENCH_AGENT, { userId: BENCH_USER.id });
      return bench.server.sessions.acquire(principal, info.id);
    },
    retire: (session) => session.release(),
  });
  let next = 0;
  return {
    name: "turn loop",
    call: () =>
      pool.use(async ({ live }) => {
        await live.sendMessage({ commandId: `c_${(next++).toString(36)}`, text: TURN_TEXT });
        await live.idle();
        const items = live.runtime.conversation();
        const last = items[items.length - 1];
        if (last?.type !== "message" || !last.text.startsWith(TURN_REPLY_START))
          throw new Error(`turn did not end with the reply: ${JSON.stringify(last).slice(0, 200)}`);
      }),
    async close() {
      pool.close();
    },
  };
}

const ID = "1 hosted tool call, in the turn loop";
const LATENCY = `${LATENCY_MEASURE} (a turn)`;
const throughput = (n: number) => `turns/s, ${n} sessions at once`;

export const turnLoopScenario: Scenario = {
  id: ID,
  measures: (budget) => [LATENCY, throughput(budget.inFlight)],
  async run({ budget, floor }) {
    const setup = await startHostedSetup(1);
    try {
      const one = await turnLoopRig(setup.bench, 1);
      const many = await turnLoopRig(setup.bench, budget.inFlight);
      try {
        await warmUp(many, budget);
        await warmUp(one, budget, 1);
        const latency = await compareLatency(one, floor, budget);
        const rate = await compareThroughput(many, floor, budget);
        return [
          latencyRow(ID, latency, floor.name, { measure: LATENCY }),
          throughputRow(ID, rate, `${floor.name} calls`, { measure: throughput(budget.inFlight) }),
        ];
      } finally {
        await one.close();
        await many.close();
      }
    } finally {
      await setup.close();
    }
  },
};
