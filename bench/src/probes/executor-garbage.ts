// Probe: the executor alone around a connector-shaped tool whose `run` answers a turn later (as an
// MCP server's answer does, so the calls in flight are alive at each scavenge), against the same
// `run` called without the executor: this process's CPU per call and what V8's `GCProfiler`
// counts per call (bytes allocated young, bytes promoted), in blocks taken in turn.
// `--root <checkout>` loads another checkout's `@patchbay/tools`, e.g. `--root /work/main`.
//   node --import tsx src/probes/executor-garbage.ts [--root DIR] [--calls 50000] [--rounds 5] [--in-flight 64]
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { startGcStats, stopGcStats } from "./gc-stats";

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : fallback;
};
const root = arg("root", fileURLToPath(new URL("../../..", import.meta.url)));
const calls = Number(arg("calls", "50000"));
const rounds = Number(arg("rounds", "5"));
const inFlight = Number(arg("in-flight", "64"));

const require = createRequire(`${root}/bench/package.json`);
const { ToolExecutor, Tools } = (await import(
  require.resolve("@patchbay/tools")
)) as typeof import("@patchbay/tools");

// Answers come in batches, one batch per macrotask, as lines read from a pipe do.
let waiting: (() => void)[] = [];
let scheduled = false;
const answerLater = (resolve: () => void) => {
  waiting.push(resolve);
  if (scheduled) return;
  scheduled = true;
  setImmediate(() => {
    scheduled = false;
    const batch = waiting;
    waiting = [];
    for (const answer of batch) answer();
  });
};
const text = '{"order_id":"A1001","status":"shipped","eta":"2 days"}';
const run = (_args: unknown, signal: AbortSignal, ctx: { update(text: string): void }) =>
  new Promise<string>((resolve) => {
    // What the SDK does with the signal (one abort listener), and what the connector keeps (the context).
    signal.addEventListener("abort", () => ctx.update("aborted"));
    answerLater(() => resolve(text));
  });
const tools = new Tools().register({
  name: "peer__lookup_order",
  description: "Look up an order by its number.",
  parameters: {
    type: "object",
    properties: { order_id: { type: "string" } },
    required: ["order_id"],
    additionalProperties: false,
  },
  interruptible: true,
  lightSignal: true,
  run,
});
const executor = new ToolExecutor({ tools, maxConcurrentCalls: 256 });
let n = 0;
const stub = { aborted: false, addEventListener() {} } as unknown as AbortSignal;
const rigs = {
  run: () => run({ order_id: "A1001" }, stub, { update() {} }),
  executor: async () => {
    const result = await executor.execute({
      id: `c${n++}`,
      name: "peer__lookup_order",
      arguments: { order_id: "A1001" },
    });
    if (result.outcome !== "completed") throw new Error(result.content.text);
  },
};

async function block(call: () => Promise<unknown>, count: number) {
  startGcStats();
  const cpu0 = process.cpuUsage();
  let started = 0;
  const lane = async () => {
    while (started < count) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const cpu = process.cpuUsage(cpu0);
  const gc = stopGcStats();
  return {
    cpu: (cpu.user + cpu.system) / count,
    young: gc.youngBytes / count,
    promoted: gc.promotedBytes / count,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (const call of Object.values(rigs)) await block(call, 10_000);
const figures: Record<string, Awaited<ReturnType<typeof block>>[]> = { run: [], executor: [] };
for (let round = 0; round < rounds; round++)
  for (const [name, call] of Object.entries(rigs)) figures[name]!.push(await block(call, calls));
console.log(`${root}: ${inFlight} in flight, median of ${rounds} blocks of ${calls} calls`);
for (const [name, xs] of Object.entries(figures)) {
  const m = (key: "cpu" | "young" | "promoted") => median(xs.map((x) => x[key]));
  console.log(
    `${name.padEnd(9)} cpu ${m("cpu").toFixed(2).padStart(6)} µs/call, young ${Math.round(m("young")).toLocaleString("en-US").padStart(6)} B/call, promoted ${Math.round(m("promoted")).toLocaleString("en-US").padStart(6)} B/call`,
  );
}
