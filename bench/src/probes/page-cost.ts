// Probe: what a page tool call (scenario 2) costs, in figures the machine's load moves little:
// CPU time per call of the server (this process, and its main thread) and of the page process,
// and the SQLite statements per call. Alternate it between two builds in the same minutes.
//   node --import tsx src/probes/page-cost.ts [--calls 20000] [--rounds 2] [--many | --one]
// BENCH_TIME_SQL=1 adds the time spent in COMMIT per call; BENCH_COUNT_SQL=0 counts no statements
// (for a profile, in which SQLite's time then shows under the store's own functions).
import { latencyBlock, throughputBlock } from "../measure";
import { pageRig } from "../page-tool-call";
import { startBenchServer } from "../patchbay-server";
import { summarize } from "../stats";
import { startGcStats, stopGcStats } from "./gc-stats";
import { procCpuUs } from "./proc-cpu";
import { countSql, sqlCounts, sqlTimes } from "./sql-counter";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 20_000);
const rounds = arg("rounds", 2);
const inFlight = 64;
/** `--many` measures only 64 in flight, `--one` only one at a time (for a profile of that alone). */
const lanesMeasured = process.argv.includes("--many")
  ? [inFlight]
  : process.argv.includes("--one")
    ? [1]
    : [inFlight, 1];

if (process.env.BENCH_COUNT_SQL !== "0") countSql();
const bench = await startBenchServer();
const { rig, page } = await pageRig(bench);
let done = 0;
const call = async () => {
  await rig.call();
  done++;
};
const counted = { ...rig, call };
try {
  await throughputBlock(counted, inFlight, Math.min(calls, 5000), 30_000);
  await latencyBlock(counted, 500, 10_000);
  for (let round = 0; round < rounds; round++) {
    for (const lanes of lanesMeasured) {
      const pid = process.pid;
      const before = { self: procCpuUs(pid), loop: procCpuUs(pid, pid), page: procCpuUs(page.child.pid!) };
      const sqlBefore = sqlCounts();
      const commitBefore = sqlTimes().COMMIT?.us ?? 0;
      const doneBefore = done;
      startGcStats();
      const start = performance.now();
      let latency = "";
      if (lanes === 1) {
        const s = summarize(await latencyBlock(counted, Math.ceil(calls / 10), 60_000));
        latency = ` p50 ${s.p50.toFixed(0)} µs p99 ${s.p99.toFixed(0)} µs`;
      } else {
        await throughputBlock(counted, lanes, calls, 60_000);
      }
      const seconds = (performance.now() - start) / 1000;
      const gc = stopGcStats();
      const n = done - doneBefore;
      const per = (us: number) => `${(us / n).toFixed(1)} µs`;
      const sqlAfter = sqlCounts();
      const stmts: string[] = [];
      let total = 0;
      for (const [word, count] of Object.entries(sqlAfter)) {
        const d = count - (sqlBefore[word] ?? 0);
        total += d;
        if (d > 0) stmts.push(`${word} ${(d / n).toFixed(2)}`);
      }
      const commit =
        process.env.BENCH_TIME_SQL === "1"
          ? `, COMMIT ${per((sqlTimes().COMMIT?.us ?? 0) - commitBefore)} (wall)`
          : "";
      console.log(
        `${lanes} in flight: ${n} calls, ${Math.round(n / seconds)} calls/s${latency}; CPU per call: server ${per(procCpuUs(pid) - before.self)} (its main thread ${per(procCpuUs(pid, pid) - before.loop)}), page ${per(procCpuUs(page.child.pid!) - before.page)}; SQL per call ${(total / n).toFixed(2)} (${stmts.join(", ")})${commit}; server young bytes per call ${Math.round(gc.youngBytes / n)}, promoted ${Math.round(gc.promotedBytes / n)}, scavenges ${per(gc.scavengeUs)}`,
      );
    }
  }
} finally {
  await rig.close();
  await page.kill();
  await bench.close();
}
process.exit(0);
