// Probe: what a whole turn (scenario 4) costs each process, in figures the machine's load moves
// little: CPU time per turn of the server, the worker and the client (this process), and the
// SQLite statements and transactions per turn in the server. Runs scenario 4's processes and
// rig; alternate it between two builds in the same minutes to compare them.
//   node --import tsx src/probes/turn-cost.ts [--sessions 64] [--turns 3000] [--rounds 2] [--one]
// BENCH_CPU_PROF=<dir> profiles the server and the worker (see children.ts) from their start;
// `--profile <dir>` samples the client (this process), the worker and the server over the last round only, at
// steady state: <dir>/{client,worker,server}-{many,one}.cpuprofile (`profile-top.ts` reads them).
import { spawnPeer } from "../children";
import { latencyBlock, type Rig, throughputBlock } from "../measure";
import { summarize } from "../stats";
import { turnRig } from "../whole-turn";
import { startCpuSampling, stopCpuSampling } from "./cpu-sampling";
import { type GcSummary, startGcStats, stopGcStats } from "./gc-stats";
import { startHeapSampling, stopHeapSampling } from "./heap-sampling";
import { procCpuUs, procWrites } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const sessions = arg("sessions", 64);
const turns = arg("turns", 3000);
const rounds = arg("rounds", 2);
/** `--one` measures only turns one at a time (for a profile of that alone). */
const onlyOne = process.argv.includes("--one");
const profileAt = process.argv.indexOf("--profile");
const profileDir = profileAt > 0 ? process.argv[profileAt + 1] : undefined;
/** `--heap <file>`: what of the client's allocations outlived a scavenge, over the last round at 64 sessions. */
const heapAt = process.argv.indexOf("--heap");
const heapFile = heapAt > 0 ? process.argv[heapAt + 1] : undefined;
/**
 * `--server-heap <file>`: the server's allocations over the last round at 64 sessions (what
 * outlived a scavenge; with BENCH_HEAP_ALL=1 every allocation). `heap-top.ts` reads the file.
 */
const serverHeapAt = process.argv.indexOf("--server-heap");
const serverHeapFile = serverHeapAt > 0 ? process.argv[serverHeapAt + 1] : undefined;

function counted(rig: Rig): Rig & { done: number } {
  const out = {
    ...rig,
    done: 0,
    async call() {
      await rig.call();
      out.done++;
    },
  };
  return out;
}

const server = await spawnPeer<{ url: string }>("server-process", {
  env: { BENCH_COUNT_SQL: process.env.BENCH_COUNT_SQL ?? "1" },
});
const worker = await spawnPeer("worker", { args: [server.ready.url] });
type Times = Record<string, { n: number; us: number }>;
const sqlAll = () =>
  server.request<{ counts: Record<string, number>; times: Times; json: { calls: number; chars: number } }>({
    type: "sql",
  });
const sql = async () => (await sqlAll()).counts;
const commitUs = async () => (await sqlAll()).times.COMMIT?.us ?? 0;
const many = counted(await turnRig(server.ready.url, sessions));
const one = counted(await turnRig(server.ready.url, 1));
try {
  if (!onlyOne) await throughputBlock(many, sessions, Math.min(turns, 1000), 30_000);
  await latencyBlock(one, 100, 10_000);
  for (let round = 0; round < rounds; round++) {
    for (const [name, rig, inFlight] of [
      [`${sessions} sessions`, many, sessions],
      ["1 in flight", one, 1],
    ] as const) {
      if (onlyOne && inFlight !== 1) continue;
      const pid = server.child.pid!;
      const before = {
        server: procCpuUs(pid),
        loop: procCpuUs(pid, pid),
        worker: procCpuUs(worker.child.pid!),
      };
      const writesBefore = procWrites(pid);
      const self = process.cpuUsage();
      const sqlBefore = await sql();
      const jsonBefore = (await sqlAll()).json;
      const commitBefore = await commitUs();
      const doneBefore = rig.done;
      const profiled = profileDir !== undefined && round === rounds - 1;
      const tag = inFlight === 1 ? "one" : "many";
      if (profiled)
        await Promise.all([
          startCpuSampling(),
          worker.request({ type: "cpu-start" }),
          server.request({ type: "cpu-start" }),
        ]);
      const heaped = heapFile !== undefined && round === rounds - 1 && inFlight > 1;
      if (heaped) await startHeapSampling();
      const serverHeaped = serverHeapFile !== undefined && round === rounds - 1 && inFlight > 1;
      if (serverHeaped) await server.request({ type: "heap-start" });
      await worker.request({ type: "gc-start" });
      await server.request({ type: "gc-start" });
      startGcStats();
      const start = performance.now();
      let p50 = "";
      if (inFlight === 1) {
        const samples = await latencyBlock(rig, Math.ceil(turns / 6), 60_000);
        const s = summarize(samples);
        p50 = ` p50 ${(s.p50 / 1000).toFixed(2)} ms p99 ${(s.p99 / 1000).toFixed(2)} ms`;
      } else {
        await throughputBlock(rig, inFlight, turns, 60_000);
      }
      const seconds = (performance.now() - start) / 1000;
      const n = rig.done - doneBefore;
      const selfCpu = process.cpuUsage(self);
      const clientGc = stopGcStats();
      if (heaped) await stopHeapSampling(heapFile);
      if (serverHeaped) await server.request({ type: "heap-stop", file: serverHeapFile });
      const { gc } = await worker.request<{ gc: GcSummary }>({ type: "gc-stop" });
      const { gc: serverGc } = await server.request<{ gc: GcSummary }>({ type: "gc-stop" });
      if (profiled)
        await Promise.all([
          stopCpuSampling(`${profileDir}/client-${tag}.cpuprofile`),
          worker.request({ type: "cpu-stop", file: `${profileDir}/worker-${tag}.cpuprofile` }),
          server.request({ type: "cpu-stop", file: `${profileDir}/server-${tag}.cpuprofile` }),
        ]);
      const per = (us: number) => `${Math.round(us / n)} µs`;
      const writesAfter = procWrites(pid);
      const workerGc = `; worker GC per turn: young ${Math.round(gc.youngBytes / n)} B, promoted ${Math.round(gc.promotedBytes / n)} B, scavenges ${per(gc.scavengeUs)} (${gc.scavenges}, survived ${Math.round(gc.survivedBytes / Math.max(1, gc.scavenges) / 1024)} KiB each, new space ${Math.round(gc.newSpaceBytes / 1024)} KiB), full ${per(gc.fullGcUs)} (${gc.fullGcs})`;
      const ownGc = `; client GC per turn: promoted ${Math.round(clientGc.promotedBytes / n)} B, scavenges ${per(clientGc.scavengeUs)} (${clientGc.scavenges}, survived ${Math.round(clientGc.survivedBytes / Math.max(1, clientGc.scavenges) / 1024)} KiB each), full ${per(clientGc.fullGcUs)} (${clientGc.fullGcs})`;
      const serverGcLine = `; server GC per turn: young ${Math.round(serverGc.youngBytes / n)} B, promoted ${Math.round(serverGc.promotedBytes / n)} B, scavenges ${per(serverGc.scavengeUs)} (${serverGc.scavenges}, survived ${Math.round(serverGc.survivedBytes / Math.max(1, serverGc.scavenges) / 1024)} KiB each, new space ${Math.round(serverGc.newSpaceBytes / 1024)} KiB), full ${per(serverGc.fullGcUs)} (${serverGc.fullGcs})`;
      const writes = `${serverGcLine}${workerGc}${ownGc}; server writes per turn ${((writesAfter.calls - writesBefore.calls) / n).toFixed(1)}, ${((writesAfter.bytes - writesBefore.bytes) / n / 1024).toFixed(1)} KiB`;
      const sqlAfter = await sql();
      const jsonAfter = (await sqlAll()).json;
      const json = `; server JSON.stringify per turn ${((jsonAfter.calls - jsonBefore.calls) / n).toFixed(2)} calls, ${Math.round((jsonAfter.chars - jsonBefore.chars) / n)} chars`;
      const commit =
        process.env.BENCH_TIME_SQL === "1" ? `, COMMIT ${per((await commitUs()) - commitBefore)} (wall)` : "";
      const stmts: string[] = [];
      let total = 0;
      for (const [word, count] of Object.entries(sqlAfter)) {
        const d = count - (sqlBefore[word] ?? 0);
        total += d;
        if (d > 0) stmts.push(`${word} ${(d / n).toFixed(2)}`);
      }
      console.log(
        `${name}: ${n} turns, ${Math.round(n / seconds)} turns/s${p50}; CPU per turn: server ${per(procCpuUs(pid) - before.server)} (its main thread ${per(procCpuUs(pid, pid) - before.loop)}), worker ${per(procCpuUs(worker.child.pid!) - before.worker)}, client ${per(selfCpu.user + selfCpu.system)}; SQL per turn ${(total / n).toFixed(2)} (${stmts.join(", ")})${commit}${json}${writes}`,
      );
    }
  }
  if (process.env.BENCH_TIME_SQL === "1") {
    const { times } = await sqlAll();
    const total = one.done + many.done;
    for (const [sqlText, t] of Object.entries(times)
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, 15))
      console.log(
        `${(t.us / total).toFixed(1).padStart(7)} µs/turn ${(t.n / total).toFixed(2).padStart(6)}/turn  ${sqlText}`,
      );
  }
} finally {
  await many.close();
  await one.close();
  await worker.kill();
  await server.kill();
}
process.exit(0);
