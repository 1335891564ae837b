// Scenario 5b: hosted tool calls per second with 1, 2 and 4 worker processes. Each count has its
// own server (in this process) and workers, all started up front, and their blocks are
// interleaved round by round with the raw floor's, so drift hits every count alike. The 1-worker
// figure is read against the raw floor; more workers are read against 1 worker (the scaling).
// On a 2-core machine more processes cannot add cores: expect the ratio to flatten, not grow.
import { routerRig, startHostedSetup } from "./hosted-tool-call";
import { throughputBlock, warmUp } from "./measure";
import type { Scenario } from "./scenario";
import { formatRate, formatRatio, median } from "./stats";
import type { Row } from "./table";

const measure = (workers: number, inFlight: number) =>
  `hosted calls/s, ${workers} worker process${workers === 1 ? "" : "es"}, ${inFlight} in flight`;

export const scaleWorkersScenario: Scenario = {
  id: "5 scale: workers",
  measures: (budget) => budget.workerCounts.map((n) => measure(n, budget.inFlight)),
  async run({ budget, floor }) {
    const setups: Awaited<ReturnType<typeof startHostedSetup>>[] = [];
    try {
      for (const count of budget.workerCounts) setups.push(await startHostedSetup(count));
      const rigs = setups.map((setup) => routerRig(setup.bench));
      for (const rig of rigs) await warmUp(rig, budget);
      const rates = rigs.map(() => [] as number[]);
      const floorRates: number[] = [];
      const calls = Math.ceil(budget.throughputCalls / budget.rounds);
      const ms = budget.throughputMs / budget.rounds;
      for (let round = 0; round < budget.rounds; round++) {
        floorRates.push(await throughputBlock(floor, budget.inFlight, calls, ms));
        for (const [i, rig] of rigs.entries())
          rates[i]!.push(await throughputBlock(rig, budget.inFlight, calls, ms));
      }
      const floorRate = median(floorRates);
      const figures = rates.map(median);
      return budget.workerCounts.map((count, i): Row => {
        const rate = figures[i]!;
        const [baseName, base] =
          i === 0 ? [floor.name, floorRate] : [`${budget.workerCounts[0]} worker`, figures[0]!];
        return {
          scenario: scaleWorkersScenario.id,
          measure: measure(count, budget.inFlight),
          subject: formatRate(rate),
          baseline: `${baseName}: ${formatRate(base)}`,
          ratio: formatRatio(rate / base),
        };
      });
    } finally {
      for (const setup of setups) await setup.close();
    }
  },
};
