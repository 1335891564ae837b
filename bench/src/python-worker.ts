// Scenario 1b: hosted tool calls per second with the Python SDK's worker beside @patchbay/dispatch.
// Two servers in this process, one with the TypeScript worker (bench/src/peers/worker.ts) and one
// with the Python worker (bench/src/peers/python_worker.py, Debian's python3 and websockets),
// both hosting the same lookup_order; calls go through the dispatch module's router as in
// scenario 1, and the two are measured in interleaved blocks so drift hits both alike. The ratio
// reads Python over TypeScript.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { BENCH_API_KEY, BENCH_SECRET } from "./credentials";
import { routerRig, startHostedSetup } from "./hosted-tool-call";
import { throughputBlock, warmUp } from "./measure";
import { startBenchServer, waitForWorkers } from "./patchbay-server";
import type { Scenario } from "./scenario";
import { formatRate, formatRatio, median } from "./stats";

const PYTHON = process.env.PATCHBAY_PYTHON ?? "/usr/bin/python3";
const measure = (inFlight: number) => `hosted calls/s, Python worker, ${inFlight} in flight`;

export const pythonWorkerScenario: Scenario = {
  id: "1b hosted tool call: Python worker",
  measures: (budget) => [measure(budget.inFlight)],
  async run({ budget }) {
    const typescript = await startHostedSetup(1);
    const python = await startBenchServer();
    let child: ChildProcess | undefined;
    try {
      child = spawn(
        PYTHON,
        [fileURLToPath(new URL("./peers/python_worker.py", import.meta.url)), python.server.url],
        {
          env: { ...process.env, PATCHBAY_API_KEY: BENCH_API_KEY, PATCHBAY_API_SECRET: BENCH_SECRET },
          stdio: ["ignore", "ignore", "inherit"],
        },
      );
      await waitForWorkers(python.dispatch, 1);
      const rigs = [routerRig(typescript.bench), routerRig(python)];
      for (const rig of rigs) await warmUp(rig, budget);
      const rates: [number[], number[]] = [[], []];
      const calls = Math.ceil(budget.throughputCalls / budget.rounds);
      const ms = budget.throughputMs / budget.rounds;
      for (let round = 0; round < budget.rounds; round++) {
        for (const [i, rig] of rigs.entries())
          rates[i]!.push(await throughputBlock(rig, budget.inFlight, calls, ms));
      }
      const [ts, py] = rates.map(median) as [number, number];
      return [
        {
          scenario: pythonWorkerScenario.id,
          measure: measure(budget.inFlight),
          subject: formatRate(py),
          baseline: `TypeScript worker: ${formatRate(ts)}`,
          ratio: formatRatio(py / ts),
        },
      ];
    } finally {
      child?.kill("SIGKILL");
      await typescript.close();
      await python.close();
    }
  },
};
