// Probe: the floor under scenario 9's hosted call alone. A hosted call across nodes crosses NATS
// twice (owner -> worker's node, and the result back); this measures only that, with the client
// library the server uses (`@nats-io/transport-node`) and a nats-server started as the bench
// starts it: connection B publishes, connection C's subscription publishes the same bytes back,
// B's subscription settles. B and C live in one process, as scenario 9's nodes do. Prints p50 /
// p99 of the round trip and the CPU time per round trip of this process.
//   node --import tsx src/probes/nats-round-trip.ts [--n 20000] [--bytes 600] [--nats-procs 1]
import { readdirSync, readFileSync } from "node:fs";
import { startTestNats } from "../../../packages/server/src/testing/nats-server";
import { formatMicros, summarize } from "../stats";
import { connectNats } from "./nats-client";
import { procCpuUs } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const n = arg("n", 20_000);
const payload = new Uint8Array(arg("bytes", 600)).fill(120);
/** `--nats-procs 0` leaves nats-server's GOMAXPROCS to Go (one per core); the bench gives it 1. */
const natsMaxProcs = arg("nats-procs", 1) || undefined;

/** This process's child named `comm` (nats-server). */
function childPid(comm: string): number | undefined {
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    const children = readFileSync(`/proc/${process.pid}/task/${task}/children`, "utf8").trim();
    for (const pid of children ? children.split(" ").map(Number) : [])
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === comm) return pid;
  }
  return undefined;
}

const nats = await startTestNats({ maxProcs: natsMaxProcs });
const natsPid = childPid("nats-server");
try {
  const b = await connectNats({ servers: nats.url });
  const c = await connectNats({ servers: nats.url });
  c.subscribe("probe.c", { callback: (_e, m) => c.publish("probe.b", m.data) });
  let settle: (() => void) | undefined;
  b.subscribe("probe.b", { callback: () => settle?.() });
  await Promise.all([b.flush(), c.flush()]);
  const once = () =>
    new Promise<void>((resolve) => {
      settle = resolve;
      b.publish("probe.c", payload);
    });
  for (let i = 0; i < 2_000; i++) await once();
  const samples: number[] = [];
  const cpu = process.cpuUsage();
  const natsCpu = natsPid ? procCpuUs(natsPid) : Number.NaN;
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await once();
    samples.push(Number(process.hrtime.bigint() - t) / 1_000);
  }
  const used = process.cpuUsage(cpu);
  const natsUsed = natsPid ? procCpuUs(natsPid) - natsCpu : Number.NaN;
  const s = summarize(samples);
  console.log(
    `bare NATS round trip (publish -> subscriber publishes back -> subscriber), ${payload.length} B, ${n} trips: ` +
      `p50 ${formatMicros(s.p50)}, p99 ${formatMicros(s.p99)}; CPU per trip: this process ${formatMicros((used.user + used.system) / n)}, nats-server ${formatMicros(natsUsed / n)}`,
  );
  await Promise.all([b.close(), c.close()]);
} finally {
  await nats.stop();
}
