// The Patchbay server in a process of its own (the bench server: scripted `support` agent,
// dispatch installed, SQLite in a temp dir). Answers `memory` (after a full GC when started with
// --expose-gc) and `sessions` (how many are loaded) for the scale scenario, and `sql` (the
// statements run so far and the JSON.stringify calls, when started with BENCH_COUNT_SQL=1) for
// the probes, `gc-start`/`gc-stop` (its garbage collection over a block, gc-stats.ts) and
// `heap-start`/`heap-stop` (a sampling heap profile, heap-sampling.ts), and `heap-snapshot`
// (writes one to `file` after a full GC) and `heap-spaces` (V8's spaces, used and committed, after
// one), for the idle-heap probe; `cpu-start`/`cpu-stop` sample its CPU over a block (cpu-sampling.ts).
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { startBenchServer } from "../patchbay-server";
import { startCpuSampling, stopCpuSampling } from "../probes/cpu-sampling";
import { startGcStats, stopGcStats } from "../probes/gc-stats";
import { startHeapSampling, stopHeapSampling } from "../probes/heap-sampling";
import { countJson, jsonCounts } from "../probes/json-counter";
import { countSql, sqlCounts, sqlTimes } from "../probes/sql-counter";
import { measureMemory } from "./memory";
import { failed, onRequest, ready } from "./peer-runtime";

try {
  if (process.env.BENCH_COUNT_SQL === "1") {
    countSql();
    countJson();
  }
  const bench = await startBenchServer();
  onRequest(async (message) => {
    if (message.type === "memory") return measureMemory();
    if (message.type === "sql") return { counts: sqlCounts(), times: sqlTimes(), json: jsonCounts() };
    if (message.type === "heap-snapshot") {
      await measureMemory();
      return { file: writeHeapSnapshot(String(message.file)) };
    }
    if (message.type === "heap-spaces") {
      const { rss } = await measureMemory();
      return { rss, spaces: getHeapSpaceStatistics(), external: process.memoryUsage().external };
    }
    if (message.type === "gc-start") {
      startGcStats();
      return {};
    }
    if (message.type === "gc-stop") return { gc: stopGcStats() };
    if (message.type === "cpu-start") return startCpuSampling();
    if (message.type === "cpu-stop") return stopCpuSampling(String(message.file));
    if (message.type === "heap-start") return startHeapSampling();
    if (message.type === "heap-stop") return stopHeapSampling(String(message.file));
    if (message.type === "sessions") return { loaded: bench.server.sessions.loaded().length };
    throw new Error(`unknown request ${String(message.type)}`);
  });
  process.on("disconnect", () => void bench.close());
  ready({ url: bench.server.url });
} catch (error) {
  failed(error);
}
