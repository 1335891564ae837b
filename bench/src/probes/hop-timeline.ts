// Probe: where the time of scenario 9's hosted call alone goes, hop by hop. Runs the single
// server and nodes B and C of a cluster in this process (as cluster-hosted-cost.ts), and marks
// every socket write and every chunk read (`data`) of this process during each call: to and from
// nats-server (B's connection and C's), the direct link between B and C (B's end and C's) when
// the nodes have one, and the worker's socket. Prints, for the most common
// sequence of marks, the median time of each since the call began and the step from the mark
// before, so the wait on another process (nats-server, the worker) shows apart from this
// process's own work between two marks.
//   node --import tsx src/probes/hop-timeline.ts [--single] [--calls 5000] [--nats-procs 1]
// Its marks cost a little themselves (two hrtime reads and an array push each).
import net from "node:net";
import { startTestNats } from "../../../packages/server/src/testing/nats-server";
import { startTestPostgres } from "../../../packages/server/src/testing/postgres-server";
import { spawnPeer } from "../children";
import { BENCH_AGENT, callLookupOrder, LOOKUP_ORDER } from "../lookup-order";
import { type BenchServer, startBenchServer } from "../patchbay-server";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 5000);
const natsMaxProcs = arg("nats-procs", 1) || undefined;

const marks: [string, bigint][] = [];
let on = false;
let natsPort = 0;
/** Node C's direct-link port: B's end of the link connects to it, C's end listens on it. */
let linkPort = -1;
const names = new Map<number, string>();
/** `nats B`/`nats C` (by the order the connections first wrote during a call), `link B`/`link C`, or `ws`. */
function nameOf(socket: net.Socket): string {
  if (socket.remotePort === linkPort) return "link B";
  if (socket.localPort === linkPort) return "link C";
  if (socket.remotePort !== natsPort) return "worker ws";
  let name = names.get(socket.localPort ?? 0);
  if (!name) {
    name = `nats ${names.size === 0 ? "B" : "C"}`;
    names.set(socket.localPort ?? 0, name);
  }
  return name;
}
const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  if (on) marks.push([`write ${nameOf(this)}`, process.hrtime.bigint()]);
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;
const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]) {
  if (on && event === "data") marks.push([`read ${nameOf(this)}`, process.hrtime.bigint()]);
  return (emit as (...a: unknown[]) => boolean).call(this, event, ...args);
} as typeof emit;
// ws corks its frames and writes them at uncork (writev): mark that as the worker's write.
const uncork = net.Socket.prototype.uncork;
net.Socket.prototype.uncork = function (this: net.Socket) {
  if (on) marks.push([`uncork ${nameOf(this)}`, process.hrtime.bigint()]);
  return uncork.call(this);
};

let next = 0;
async function hostedCall(bench: BenchServer): Promise<void> {
  await callLookupOrder(bench.server.hostedTools!, `call_t${(next++).toString(36)}`);
}

const [postgres, nats] = await Promise.all([startTestPostgres(), startTestNats({ maxProcs: natsMaxProcs })]);
natsPort = Number(new URL(nats.url).port);
const started: BenchServer[] = [];
try {
  const clusterDb = await postgres.database();
  const single = await startBenchServer({ databaseUrl: await postgres.database() });
  const b = await startBenchServer({ databaseUrl: clusterDb, natsUrl: nats.url });
  const c = await startBenchServer({ databaseUrl: clusterDb, natsUrl: nats.url });
  started.push(single, b, c);
  const workers = await Promise.all([
    spawnPeer("worker", { args: [c.server.url] }),
    spawnPeer("worker", { args: [single.server.url] }),
  ]);
  const deadline = Date.now() + 20_000;
  while (!b.server.hostedTools?.hasTool(BENCH_AGENT, LOOKUP_ORDER.name)) {
    if (Date.now() > deadline) throw new Error("node B never heard of node C's worker");
    await new Promise((r) => setTimeout(r, 100));
  }
  const side = process.argv.includes("--single") ? single : b;
  linkPort = c.server.cluster?.links?.address.port ?? -1;
  for (let i = 0; i < 2000; i++) await hostedCall(side);
  const sequences = new Map<string, number[][]>();
  for (let i = 0; i < calls; i++) {
    marks.length = 0;
    on = true;
    const t0 = process.hrtime.bigint();
    await hostedCall(side);
    const t1 = process.hrtime.bigint();
    on = false;
    const key = `${marks.map(([label]) => label).join("|")}|settled`;
    const times = [...marks.map(([, t]) => Number(t - t0) / 1000), Number(t1 - t0) / 1000];
    const rows = sequences.get(key) ?? [];
    rows.push(times);
    sequences.set(key, rows);
  }
  const [key, rows] = [...sequences].sort((x, y) => y[1].length - x[1].length)[0]!;
  console.log(
    `${side === b ? "node B -> node C's worker" : "one node"}: ${rows.length} of ${calls} calls had this sequence; median µs since the call began (step from the mark before):`,
  );
  let before = 0;
  for (const [i, label] of key.split("|").entries()) {
    const at = rows.map((r) => r[i]!).sort((x, y) => x - y)[rows.length >> 1]!;
    console.log(`  ${label.padEnd(18)} ${at.toFixed(1).padStart(7)}  (+${(at - before).toFixed(1)})`);
    before = at;
  }
  await Promise.all(workers.map((w) => w.kill()));
} finally {
  for (const bench of started) await bench.close().catch(() => {});
  await nats.stop();
  await postgres.stop();
}
process.exit(0);
