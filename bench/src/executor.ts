// Scenario 6: the executor alone: `ToolExecutor.execute` against calling the tool's function
// directly, in one process. The measurement is `runExecutorOverhead` from executor-overhead.ts
// (the tools engineer's); this file only fits its caps to the budget and makes its row.
import { runExecutorOverhead } from "./executor-overhead";
import type { Scenario } from "./scenario";
import { formatMicros, formatRate, formatRatio } from "./stats";

const MEASURE = "per call, 1 in flight (overhead per call)";

export const executorScenario: Scenario = {
  id: "6 executor alone",
  measures: () => [MEASURE],
  async run({ budget }) {
    const result = await runExecutorOverhead(
      budget.quick
        ? { iterations: 500, maxMs: 200, rounds: 1 }
        : { iterations: 50_000, maxMs: 4_000, rounds: 5 },
    );
    return [
      {
        scenario: executorScenario.id,
        measure: MEASURE,
        subject: `${formatMicros(result.subject.perCallUs)} (${formatRate(result.subject.callsPerSecond)}); +${formatMicros(result.overheadUs)}`,
        baseline: `direct call: ${formatMicros(result.baseline.perCallUs)}`,
        ratio: `${formatRatio(result.ratio)}${result.timeCapped ? " (time-capped)" : ""}`,
      },
    ];
  },
};
