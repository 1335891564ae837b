// Probe: what a hosted tool call (scenario 1) costs, in figures the machine's load moves little:
// CPU time per call of the server (this process) and of the worker process, beside the raw floor's
// (this process and its peer), at 64 in flight and at one, blocks alternating with the floor.
// Alternate it between two builds in the same minutes.
//   node --import tsx src/probes/hosted-cost.ts [--calls 40000] [--rounds 2] [--lanes 64]
import { spawn } from "node:child_process";
import { routerRig, startHostedSetup } from "../hosted-tool-call";
import { latencyBlock, type Rig, throughputBlock } from "../measure";
import { startRawWsFloor } from "../raw-ws-floor";
import { summarize } from "../stats";
import { startCpuSampling, stopCpuSampling } from "./cpu-sampling";
import { type GcSummary, startGcStats, stopGcStats } from "./gc-stats";
import { startHeapSampling, stopHeapSampling } from "./heap-sampling";
import { startLoopOverlap } from "./loop-overlap";
import { procCpuUs, procMinorFaults, procSystemCpuUs } from "./proc-cpu";
import { perCall, startSyscallCount } from "./syscall-count";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 40_000);
const rounds = arg("rounds", 2);
const inFlight = 64;
// --lanes 64 (or 1) measures only that many in flight, e.g. for a profile (BENCH_CPU_PROF).
const onlyLanes = arg("lanes", 0);

const floor = await startRawWsFloor();
// BENCH_WORKER_FLAGS: V8 or Node flags for the worker process, space-separated.
const setup = await startHostedSetup(1, process.env.BENCH_WORKER_FLAGS?.split(" ").filter(Boolean) ?? []);
const hosted = routerRig(setup.bench);
const workerPid = setup.peers[0]?.child.pid ?? 0;
const pct = (share: number) => `${(share * 100).toFixed(0)} %`;
const selfCpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function block(name: string, rig: Rig, peerPid: number, lanes: number): Promise<void> {
  const worker = rig === hosted ? setup.peers[0] : undefined;
  await worker?.request({ type: "gc-start" });
  if (worker) startGcStats();
  // BENCH_HEAP_PROF=<file>: the worker's sampling heap profile of what survived scavenges.
  const heapFile = process.env.BENCH_HEAP_PROF;
  if (worker && heapFile) await worker.request({ type: "heap-start" });
  // BENCH_SERVER_HEAP_PROF=<file>: this process's (the server's) profile over the hosted blocks.
  const serverHeapFile = worker ? process.env.BENCH_SERVER_HEAP_PROF : undefined;
  if (serverHeapFile) await startHeapSampling();
  // BENCH_WINDOW_PROF=<dir>: CPU profiles of both processes over each hosted block only.
  const profDir = worker ? process.env.BENCH_WINDOW_PROF : undefined;
  const profTag = `${lanes}-${Date.now()}`;
  if (profDir) {
    await worker?.request({ type: "cpu-start" });
    await startCpuSampling();
  }
  // BENCH_SYSCALLS=1: both processes' syscalls per call (`perf stat` on the tracepoints).
  const counting =
    process.env.BENCH_SYSCALLS === "1" ? [startSyscallCount(process.pid), startSyscallCount(peerPid)] : [];
  // BENCH_OVERLAP=1: how much of the block both event loops worked at once (`perf record`).
  // BENCH_PERF_RECORD=<dir>: `perf record` of both processes over each block (kernel included).
  const perfDir = process.env.BENCH_PERF_RECORD;
  const perfs = perfDir
    ? [
        ["here", process.pid],
        [worker ? "worker" : "floor-peer", peerPid],
      ].map(([side, pid]) =>
        spawn(
          "perf",
          ["record", "-q", "-F", "2000", "-g", "-o", `${perfDir}/${side}-${lanes}.data`, "-p", String(pid)],
          {
            stdio: "ignore",
          },
        ),
      )
    : [];
  const overlap = process.env.BENCH_OVERLAP === "1" ? startLoopOverlap([process.pid, peerPid]) : undefined;
  if (counting.length > 0 || overlap || perfs.length > 0)
    await new Promise((resolve) => setTimeout(resolve, 300)); // perf attaches
  const before = {
    self: selfCpu(),
    peer: procCpuUs(peerPid),
    selfSys: process.cpuUsage().system,
    peerSys: procSystemCpuUs(peerPid),
    selfFaults: procMinorFaults(process.pid),
    peerFaults: procMinorFaults(peerPid),
  };
  const start = performance.now();
  let n: number;
  let latency = "";
  if (lanes === 1) {
    const samples = await latencyBlock(rig, Math.ceil(calls / 10), 60_000);
    n = samples.length;
    const s = summarize(samples);
    latency = `, p50 ${s.p50.toFixed(0)} µs`;
  } else {
    const rate = await throughputBlock(rig, lanes, calls, 60_000);
    n = Math.round(rate * ((performance.now() - start) / 1000));
  }
  const seconds = (performance.now() - start) / 1000;
  const per = (us: number) => (us / n).toFixed(1);
  const cpu = {
    self: selfCpu() - before.self,
    peer: procCpuUs(peerPid) - before.peer,
    selfSys: process.cpuUsage().system - before.selfSys,
    peerSys: procSystemCpuUs(peerPid) - before.peerSys,
    selfFaults: procMinorFaults(process.pid) - before.selfFaults,
    peerFaults: procMinorFaults(peerPid) - before.peerFaults,
  };
  const counted = await Promise.all(counting.map((c) => c.stop()));
  const shares = await overlap?.stop();
  await Promise.all(
    perfs.map((perf) => {
      perf.kill("SIGINT");
      return new Promise((resolve) => perf.once("exit", resolve));
    }),
  );
  if (profDir) {
    await stopCpuSampling(`${profDir}/server-${profTag}.cpuprofile`);
    await worker?.request({ type: "cpu-stop", file: `${profDir}/worker-${profTag}.cpuprofile` });
  }
  let gcText = "";
  if (worker) {
    const { gc } = await worker.request<{ gc: GcSummary }>({ type: "gc-stop" });
    const here = stopGcStats();
    if (heapFile) await worker.request({ type: "heap-stop", file: heapFile });
    if (serverHeapFile) await stopHeapSampling(serverHeapFile);
    gcText = `; GC µs per call: here ${per(here.scavengeUs)} + ${per(here.fullGcUs)} full (${here.scavenges} scavenges, ${here.fullGcs} full, promoted ${(here.promotedBytes / n).toFixed(0)} B), worker ${per(gc.scavengeUs)} + ${per(gc.fullGcUs)} full, promoted ${(gc.promotedBytes / n).toFixed(0)} B, kept young ${(gc.survivedBytes / n).toFixed(0)} B, allocated ${(gc.youngBytes / Math.max(1, gc.scavenges - 1) / (n / gc.scavenges) / 1024).toFixed(1)} KiB (${gc.scavenges} scavenges of ${(gc.newSpaceBytes / 1048576).toFixed(0)} MiB, ${gc.fullGcs} full)`;
  }
  const syscalls = counted.length
    ? `\n  syscalls per call: here ${perCall(counted[0]!, n)}\n                     peer ${perCall(counted[1]!, n)}`
    : "";
  const overlapText = shares
    ? `\n  event loops outside epoll_wait: here ${pct(shares.busy[0]!)}, peer ${pct(shares.busy[1]!)}, both at once ${pct(shares.both)}`
    : "";
  console.log(
    `${name.padEnd(15)} ${String(lanes).padStart(2)} in flight: ${String(Math.round(n / seconds)).padStart(6)} calls/s${latency}; CPU µs per call: here ${per(cpu.self)} (system ${per(cpu.selfSys)}), peer ${per(cpu.peer)} (system ${per(cpu.peerSys)}); page faults per 100 calls: here ${per(cpu.selfFaults * 100)}, peer ${per(cpu.peerFaults * 100)}${gcText}${syscalls}${overlapText}`,
  );
}

try {
  for (const rig of [floor, hosted]) {
    await latencyBlock(rig, 2000, 10_000);
    await throughputBlock(rig, inFlight, 20_000, 20_000);
  }
  for (let round = 0; round < rounds; round++) {
    for (const lanes of onlyLanes ? [onlyLanes] : [inFlight, 1]) {
      await block("raw ws", floor, floor.peerPid, lanes);
      await block("hosted (router)", hosted, workerPid, lanes);
    }
  }
} finally {
  await floor.close();
  await setup.close();
}
process.exit(0);
