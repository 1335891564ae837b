// CPU µs per executor call (process.cpuUsage around bounded blocks), for a zod tool (scenario 6's)
// and a JSON Schema tool shaped like an MCP connector tool (lightSignal, reads ctx.update), at 1
// and at 64 in flight; the median of the blocks. node --import tsx src/executor-cpu.ts [--calls N] [--rounds R]
import { ToolExecutor, Tools } from "@patchbay/tools";
import { z } from "zod";

function flag(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  if (index < 0) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} needs a positive integer`);
  return value;
}
const CALLS = flag("--calls", 20_000);
const ROUNDS = flag("--rounds", 7);

const tools = new Tools()
  .register({
    name: "echo_length",
    description: "Counts the characters of a text",
    parameters: z.object({ text: z.string() }),
    run: async ({ text }) => text.length,
  })
  .register({
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
    run: async (args, signal, ctx) => {
      const update = ctx.update;
      signal.addEventListener("abort", () => update("aborted"));
      return `{"order_id":"${(args as { order_id: string }).order_id}"}`;
    },
  });
const executor = new ToolExecutor({ tools, sessionId: "bench", maxConcurrentCalls: 256 });
let n = 0;
const callers = {
  zod: () => executor.execute({ id: `z${n++}`, name: "echo_length", arguments: { text: "hello, tools" } }),
  json: () =>
    executor.execute({ id: `j${n++}`, name: "peer__lookup_order", arguments: { order_id: "A1001" } }),
};

async function block(
  call: () => Promise<{ outcome: string }>,
  inFlight: number,
  calls: number,
): Promise<number> {
  const cpu0 = process.cpuUsage();
  let started = 0;
  const lane = async () => {
    while (started < calls) {
      started++;
      const result = await call();
      if (result.outcome !== "completed") throw new Error(result.outcome);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / calls;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

for (const name of ["zod", "json"] as const) for (const f of [1, 64]) await block(callers[name], f, 5_000);
const results: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const name of ["zod", "json"] as const) {
    for (const inFlight of [1, 64]) {
      const key = `${name} ${inFlight}`;
      results[key] = [...(results[key] ?? []), await block(callers[name], inFlight, CALLS)];
    }
  }
}
console.log(
  Object.entries(results)
    .map(([k, xs]) => `${k}: ${median(xs).toFixed(2)} µs`)
    .join(" | "),
);
