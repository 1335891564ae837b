// Scenario 8: a healthy session's turns while three users attack the server (issue 15), against
// the same session's turns with the server quiet, in interleaved blocks of one run. The server is
// configured as `patchbay serve` configures it (default limits and quotas); the attackers run in
// a process of their own (`peers/attacker.ts`, the chaos suite's attack), the healthy client here.
import { createUserToken } from "@patchbay/server";
import type { Budget } from "./budget";
import { spawnPeer } from "./children";
import { HOSTILE_SECRET, ProtocolSocket } from "./hostile-agent";
import { latencyRow, type Scenario } from "./scenario";
import { summarize } from "./stats";

const ID = "8 healthy turn under attack";
const MEASURE = "healthy turn p50 / p99, 1 in flight: under attack vs quiet";

/** Turns per block and the block's time slice. */
const blockOf = (budget: Budget) => (budget.quick ? { turns: 10, ms: 400 } : { turns: 150, ms: 5_000 });
/**
 * The healthy session starts a turn at most every 20 ms: a page well under the default rate
 * limit (100 frames per second per socket), which a client sending turns flat out would reach.
 */
const PACE_MS = 20;

export const underAttackScenario: Scenario = {
  id: ID,
  measures: () => [MEASURE],
  async run({ budget }) {
    const server = await spawnPeer<{ url: string }>("hostile-server");
    const attacker = await spawnPeer("attacker", { args: [server.ready.url] });
    const healthy = await ProtocolSocket.open(
      server.ready.url,
      await createUserToken(HOSTILE_SECRET, "u_healthy"),
    );
    try {
      const block = blockOf(budget);
      let n = 0;
      // A fresh session per block: a conversation that grows over hundreds of turns would
      // measure its own length (see the session pool of the turn scenarios).
      const turns = async () => {
        const sessionId = await healthy.create("chaos");
        const samples: number[] = [];
        const deadline = performance.now() + block.ms;
        for (let i = 0; i < block.turns && performance.now() < deadline; i++) {
          const start = performance.now();
          const end = await healthy.turn(sessionId, `h${n++}`, "hello", 10_000);
          if (end.type !== "response.completed") throw new Error(`healthy turn ended with ${end.type}`);
          const took = performance.now() - start;
          samples.push(took * 1_000);
          if (took < PACE_MS) await new Promise((resolve) => setTimeout(resolve, PACE_MS - took));
        }
        return samples;
      };
      await turns(); // warm-up
      const quiet: number[] = [];
      const attacked: number[] = [];
      for (let round = 0; round < budget.rounds; round++) {
        quiet.push(...(await turns()));
        await attacker.request({ type: "start" });
        try {
          attacked.push(...(await turns()));
        } finally {
          await attacker.request({ type: "stop" });
        }
      }
      return [
        latencyRow(ID, { subject: summarize(attacked), baseline: summarize(quiet) }, "quiet", {
          measure: MEASURE,
        }),
      ];
    } finally {
      healthy.close();
      await attacker.kill();
      await server.kill();
    }
  },
};
