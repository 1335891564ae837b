// Probe: what scenario 9's hosted call alone costs, in figures the machine's load moves little.
// Starts PostgreSQL, nats-server, the single server and nodes B and C of a cluster in this process
// (as peers/cluster-servers.ts does, without the IPC hop), a worker on the single server and one
// on node C, then alternates blocks of hosted calls from the single server's router and from node
// B's (which crosses NATS to node C and back). Prints per side: p50 / p99, and CPU time per call
// of this process (the nodes), the worker and nats-server. A third side, alternated with them, is
// the floor: a bare NATS round trip in this same process over the same nats-server.
//   node --import tsx src/probes/cluster-hosted-cost.ts [--calls 3000] [--rounds 3] [--cluster] [--memory-bus] [--nats-procs 1]
// Run it with `node --cpu-prof --cpu-prof-dir=<dir> --import tsx ...` for a profile of the nodes.
import { readdirSync, readFileSync } from "node:fs";
import { MemoryBusHub } from "@patchbay/server";
import { startTestNats } from "../../../packages/server/src/testing/nats-server";
import { startTestPostgres } from "../../../packages/server/src/testing/postgres-server";
import { spawnPeer } from "../children";
import { BENCH_AGENT, callLookupOrder, LOOKUP_ORDER } from "../lookup-order";
import { type BenchServer, startBenchServer } from "../patchbay-server";
import { formatMicros, summarize } from "../stats";
import { connectNats } from "./nats-client";
import { procCpuUs } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 3000);
const rounds = arg("rounds", 3);
/** `--cluster` measures only node B's calls (for a profile of that alone). */
const onlyCluster = process.argv.includes("--cluster");
/** `--memory-bus` joins nodes B and C over an in-process `MemoryBus`: the cluster's JS cost without NATS. */
const memoryBus = process.argv.includes("--memory-bus");
/** `--nats-procs 0` leaves nats-server's GOMAXPROCS to Go (one per core); the bench gives it 1. */
const natsMaxProcs = arg("nats-procs", 1) || undefined;

/**
 * The floor under node B's calls, in this process beside the nodes: a bare round trip over the
 * same nats-server with the same library (publish, a subscription publishes it back, a
 * subscription settles), no router and no worker.
 */
async function bareRoundTrip(url: string) {
  const b = await connectNats({ servers: url });
  const c = await connectNats({ servers: url });
  c.subscribe("probe.c", { callback: (_e, m) => c.publish("probe.b", m.data) });
  let settle: (() => void) | undefined;
  b.subscribe("probe.b", { callback: () => settle?.() });
  await Promise.all([b.flush(), c.flush()]);
  // About the size of a hosted call's request and of its result.
  const payload = new Uint8Array(500).fill(120);
  return {
    call: () =>
      new Promise<void>((resolve) => {
        settle = resolve;
        b.publish("probe.c", payload);
      }),
    close: () => Promise.all([b.close(), c.close()]),
  };
}

let next = 0;
async function hostedCall(bench: BenchServer): Promise<void> {
  await callLookupOrder(bench.server.hostedTools!, `call_p${(next++).toString(36)}`);
}

/** This process's children named `comm` (nats-server). */
function childPid(comm: string): number | undefined {
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    const children = readFileSync(`/proc/${process.pid}/task/${task}/children`, "utf8").trim();
    for (const pid of children ? children.split(" ").map(Number) : [])
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === comm) return pid;
  }
  return undefined;
}

const [postgres, nats] = await Promise.all([startTestPostgres(), startTestNats({ maxProcs: natsMaxProcs })]);
const started: BenchServer[] = [];
try {
  const natsPid = childPid("nats-server");
  const single = await startBenchServer({ databaseUrl: await postgres.database() });
  started.push(single);
  const clusterDb = await postgres.database();
  const hub = new MemoryBusHub();
  const link = () => (memoryBus ? { bus: hub.connect() } : { natsUrl: nats.url });
  const b = await startBenchServer({ databaseUrl: clusterDb, ...link() });
  started.push(b);
  const c = await startBenchServer({ databaseUrl: clusterDb, ...link() });
  started.push(c);
  const workers = await Promise.all([
    spawnPeer("worker", { args: [single.server.url] }),
    spawnPeer("worker", { args: [c.server.url] }),
  ]);
  // Until B heard C's heartbeat with the worker's tool.
  const deadline = Date.now() + 20_000;
  while (!b.server.hostedTools?.hasTool(BENCH_AGENT, LOOKUP_ORDER.name)) {
    if (Date.now() > deadline) throw new Error("node B never heard of node C's worker");
    await new Promise((r) => setTimeout(r, 100));
  }
  const bare = await bareRoundTrip(nats.url);
  const sides = [
    { name: "one node", call: () => hostedCall(single), worker: workers[0]!.child.pid! },
    { name: "cluster B->C", call: () => hostedCall(b), worker: workers[1]!.child.pid! },
    { name: "bare NATS round trip", call: bare.call, worker: workers[1]!.child.pid! },
  ].slice(onlyCluster ? 1 : 0, onlyCluster ? 2 : 3);
  for (const side of sides) for (let i = 0; i < 1000; i++) await side.call();
  const totals = sides.map(() => ({ samples: [] as number[], self: 0, worker: 0, nats: 0, n: 0 }));
  for (let round = 0; round < rounds; round++) {
    for (const [i, side] of sides.entries()) {
      const total = totals[i]!;
      const self = process.cpuUsage();
      const worker = procCpuUs(side.worker);
      const natsCpu = natsPid ? procCpuUs(natsPid) : 0;
      for (let k = 0; k < calls; k++) {
        const t = process.hrtime.bigint();
        await side.call();
        total.samples.push(Number(process.hrtime.bigint() - t) / 1_000);
      }
      const used = process.cpuUsage(self);
      total.self += used.user + used.system;
      total.worker += procCpuUs(side.worker) - worker;
      total.nats += natsPid ? procCpuUs(natsPid) - natsCpu : 0;
      total.n += calls;
    }
  }
  for (const [i, side] of sides.entries()) {
    const t = totals[i]!;
    const s = summarize(t.samples);
    console.log(
      `${side.name}: p50 ${formatMicros(s.p50)}, p99 ${formatMicros(s.p99)}; CPU per call: nodes ${formatMicros(t.self / t.n)}, ` +
        `worker ${formatMicros(t.worker / t.n)}, nats-server ${formatMicros(t.nats / t.n)}`,
    );
  }
  await bare.close();
  await Promise.all(workers.map((w) => w.kill()));
} finally {
  for (const bench of started) await bench.close().catch(() => {});
  await nats.stop();
  await postgres.stop();
}
process.exit(0);
