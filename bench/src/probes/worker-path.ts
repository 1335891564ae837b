// Probe: the worker's side of a hosted call (scenario 1) in one process, without sockets, so its
// CPU time and garbage per call can be compared between builds with little noise from the load:
// a `hosted.call` frame's text decoded as the worker connection does, run by the dispatch
// worker's `HostedTools` (its executors, idempotency store and answered results), and the
// `hosted.result` encoded and kept for replay as the connection keeps it. `--in-flight 64` keeps
// that many calls going, the next ones issued a turn of the event loop after results came back
// (as a socket read would bring them).
// `--cold <MiB>` reads that many MiB of other memory before each refill, as a process woken from
// sleep finds its caches filled by the processes that ran meanwhile (the bench's one in flight):
// the difference from a run without it is what the path's footprint costs a cold call.
//   node --import tsx src/probes/worker-path.ts [--calls 100000] [--rounds 3] [--in-flight 64] [--cold 8]
// BENCH_HEAP_PROF=<file> writes a sampling heap profile of what outlived young collections.
import { decodeFrame, encodeResultFrame, type ServerToWorkerFrame } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { HostedTools } from "../../../packages/dispatch/src/hosted-tools";
import { BENCH_AGENT, hostedCallFrame, LOOKUP_ORDER, lookupOrderText } from "../lookup-order";
import { startGcStats, stopGcStats } from "./gc-stats";
import { startHeapSampling, stopHeapSampling } from "./heap-sampling";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 100_000);
const rounds = arg("rounds", 3);
const inFlight = arg("in-flight", 64);
const coldMiB = arg("cold", 0);
const other = new Float64Array((coldMiB * 1024 * 1024) / 8);
let otherSum = 0;
/** Microseconds spent in `evict`, taken off the path's CPU. */
let evictUs = 0;
/** Reads `other` a cache line at a time (64 B), so the path's data leaves the CPU's caches. */
const evict = () => {
  const start = performance.now();
  for (let i = 0; i < other.length; i += 8) otherSum += other[i]!;
  evictUs += (performance.now() - start) * 1000;
};

const tools = new Tools().register({
  ...LOOKUP_ORDER,
  // BENCH_LIGHT_SIGNAL=1: the tool takes the light stand-in signal, to read what `run`'s real one costs.
  ...(process.env.BENCH_LIGHT_SIGNAL === "1" ? { lightSignal: true } : {}),
  run: async ({ order_id }: { order_id: string }) => lookupOrderText(order_id),
});
const sent: { frame: unknown; at: number }[] = [];
let answered = 0;
let onAnswer: () => void = () => {};
const hosted = new HostedTools({
  send(frame) {
    // As WorkerConnection.send: the text on the wire, the frame kept for replay (512 at most).
    encodeResultFrame(frame as never, 16 * 1024 * 1024);
    sent.push({ frame, at: Date.now() });
    if (sent.length > 512) sent.shift();
    answered++;
    onAnswer();
  },
  emit() {},
  listens: () => false,
});
hosted.host({ name: BENCH_AGENT, tools }, { toolTimeoutMs: 60_000 });

let next = 0;
function deliver(): void {
  const text = JSON.stringify({ ...hostedCallFrame(`call_h${(next++).toString(36)}`), timeoutMs: 30_000 });
  const decoded = decodeFrame(text, { channel: "server-to-worker", maxBytes: 16 * 1024 * 1024 });
  if (!decoded.ok) throw new Error(decoded.error.message);
  hosted.call(decoded.frame as ServerToWorkerFrame & { type: "hosted.call" });
}

/** Runs `n` calls with `lanes` in flight; resolves when all answered. */
function block(n: number, lanes: number): Promise<void> {
  return new Promise((resolve) => {
    let issued = 0;
    let done = 0;
    let owed = 0;
    let scheduled = false;
    const refill = () => {
      scheduled = false;
      if (coldMiB > 0) evict();
      while (owed > 0 && issued < n) {
        owed--;
        issued++;
        deliver();
      }
    };
    onAnswer = () => {
      done++;
      if (done === n) resolve();
      owed++;
      if (!scheduled) {
        scheduled = true;
        setImmediate(refill);
      }
    };
    owed = lanes;
    refill();
  });
}

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
await block(20_000, inFlight);
const heapFile = process.env.BENCH_HEAP_PROF;
for (let round = 0; round < rounds; round++) {
  if (heapFile) await startHeapSampling();
  startGcStats();
  const before = cpu();
  evictUs = 0;
  await block(calls, inFlight);
  const us = cpu() - before - evictUs;
  const gc = stopGcStats();
  if (heapFile) await stopHeapSampling(heapFile);
  console.log(
    `${inFlight} in flight${coldMiB > 0 ? `, cold (${coldMiB} MiB read before each refill)` : ""}: CPU ${(us / calls).toFixed(2)} µs per call; GC ${((gc.scavengeUs + gc.fullGcUs) / calls).toFixed(2)} µs, promoted ${(gc.promotedBytes / calls).toFixed(0)} B, kept young ${(gc.survivedBytes / calls).toFixed(0)} B per call (${gc.scavenges} scavenges, ${gc.fullGcs} full)`,
  );
}
hosted.close();
process.exit(answered > 0 && otherSum === 0 ? 0 : 1);
