// Probe: scenario 7's two rigs (the MCP SDK's own client, and the MCP connector through a
// ToolExecutor), each against its own copy of the stdio server, in blocks taken in turn: this
// process's CPU per call and what V8's GC profiler counts per call (bytes allocated in the young
// generation, bytes promoted out of it). Bytes per call move with the load far less
// than any time does. `--root <checkout>` loads the rigs (and so the packages) of another checkout,
// e.g. `--root /work/main`, to compare builds in the same minutes.
//   node --import tsx src/probes/connector-garbage.ts [--root DIR] [--calls 20000] [--rounds 5] [--in-flight 64]
import { fileURLToPath } from "node:url";
import { type Rig, throughputBlock } from "../measure";
import { startGcStats, stopGcStats } from "./gc-stats";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const root = arg("root", fileURLToPath(new URL("../../..", import.meta.url)));
const calls = Number(arg("calls", "20000"));
const rounds = Number(arg("rounds", "5"));
const inFlight = Number(arg("in-flight", "64"));

const { startConnector } = (await import(`${root}/bench/src/connector-call.ts`)) as {
  startConnector(): Promise<Rig>;
};
const { startMcpStdio } = (await import(`${root}/bench/src/mcp-peer.ts`)) as {
  startMcpStdio(): Promise<Rig>;
};

async function block(rig: Rig, n: number) {
  startGcStats();
  const cpu0 = process.cpuUsage();
  await throughputBlock(rig, inFlight, n, Number.POSITIVE_INFINITY);
  const cpu = process.cpuUsage(cpu0);
  const gc = stopGcStats();
  return {
    cpu: (cpu.user + cpu.system) / n,
    young: gc.youngBytes / n,
    promoted: gc.promotedBytes / n,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

const rigs = [await startMcpStdio(), await startConnector()];
try {
  for (const rig of rigs) await block(rig, 4_000);
  const figures = new Map(rigs.map((rig) => [rig.name, [] as Awaited<ReturnType<typeof block>>[]]));
  for (let round = 0; round < rounds; round++) {
    for (const rig of rigs) figures.get(rig.name)!.push(await block(rig, calls));
  }
  console.log(`${root}: ${inFlight} in flight, median of ${rounds} blocks of ${calls} calls`);
  for (const [name, xs] of figures) {
    const m = (key: keyof (typeof xs)[number]) => median(xs.map((x) => x[key]));
    const bytes = (key: "young" | "promoted") => Math.round(m(key)).toLocaleString("en-US").padStart(6);
    const cpu = m("cpu").toFixed(1).padStart(5);
    console.log(
      `${name.padEnd(10)} cpu ${cpu} µs/call, young ${bytes("young")} B/call, promoted ${bytes("promoted")} B/call`,
    );
  }
} finally {
  await Promise.all(rigs.map((rig) => rig.close()));
}
