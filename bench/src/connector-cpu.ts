// CPU time per call of scenario 7's two rigs (the MCP connector through a ToolExecutor, and the
// MCP SDK's own client), each against its own copy of the stdio server: CPU is what the shared
// machine's load moves least. Blocks of each rig alternate; for every block it reads this
// process's `process.cpuUsage()` and the server child's utime + stime from /proc (10 ms ticks,
// so blocks are thousands of calls), at 1 and at 64 calls in flight.
//
// `--layers` adds two rigs between them, to see which layer a connector call's cost is in: the
// SDK's client sending what the connector sends (`_meta.progressToken`, a stand-in signal, the
// timeout), and the connector tool's own `run` called without the executor.
//
// node --import tsx src/connector-cpu.ts [--calls N] [--rounds R] [--layers]   (from bench/)
import { readFileSync } from "node:fs";
import type { ToolCallContext } from "@patchbay/tools";
import { startConnector, startPeerConnectors } from "./connector-call";
import { LOOKUP_ORDER, ORDER_ARGS } from "./lookup-order";
import { connectMcpStdio, startMcpStdio } from "./mcp-peer";
import type { Rig } from "./measure";

function flag(name: string, fallback: number): number {
  const index = process.argv.indexOf(name);
  if (index < 0) return fallback;
  const value = Number(process.argv[index + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} needs a positive integer`);
  return value;
}

const CALLS = flag("--calls", 4_000);
const ROUNDS = flag("--rounds", 5);
// `--profile connector|sdk`: only that rig's loop, for `node --cpu-prof`.
const PROFILE = process.argv.includes("--profile")
  ? process.argv[process.argv.indexOf("--profile") + 1]
  : undefined;
const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

function childPids(): Set<number> {
  const pids = new Set<number>();
  try {
    for (const task of [process.pid]) {
      const text = readFileSync(`/proc/${task}/task/${task}/children`, "utf8").trim();
      for (const pid of text.split(/\s+/)) if (pid) pids.add(Number(pid));
    }
  } catch {
    // no /proc: child figures are left out
  }
  return pids;
}

function childCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_US; // utime, stime
  } catch {
    return Number.NaN;
  }
}

async function block(rig: Rig, inFlight: number, calls: number, pid: number | undefined) {
  const cpu0 = process.cpuUsage();
  const child0 = pid === undefined ? Number.NaN : childCpuUs(pid);
  const t0 = performance.now();
  let started = 0;
  const lane = async () => {
    while (started < calls) {
      started++;
      await rig.call();
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const wallUs = (performance.now() - t0) * 1_000;
  const cpu = process.cpuUsage(cpu0);
  const child = pid === undefined ? Number.NaN : childCpuUs(pid) - child0;
  return { self: (cpu.user + cpu.system) / calls, child: child / calls, rate: calls / (wallUs / 1e6) };
}

type Figures = Awaited<ReturnType<typeof block>>;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** A signal as the executor's light stand-in is to the SDK: never aborted here, listeners kept. */
class StandInSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: unknown[] | undefined;
  throwIfAborted(): void {}
  addEventListener(_type: string, listener: unknown): void {
    if (this.#listeners === undefined) this.#listeners = [listener];
    else this.#listeners.push(listener);
  }
  removeEventListener(): void {}
}
const standInSignal = () => new StandInSignal() as unknown as AbortSignal;

/** The SDK's client sending a call as the MCP connector sends it. */
async function startSdkAsConnector(): Promise<Rig> {
  const { client, close } = await connectMcpStdio();
  let token = 0;
  return {
    name: "sdk+request",
    async call() {
      const params = {
        name: LOOKUP_ORDER.name,
        arguments: { ...ORDER_ARGS },
        _meta: { progressToken: ++token },
      };
      await client.callTool(params, undefined, { signal: standInSignal(), timeout: 2_000_000_000 });
    },
    close,
  };
}

/** The connector tool's `run`, as the executor calls it, without the executor. */
async function startConnectorRun(): Promise<Rig> {
  const { set, name } = await startPeerConnectors();
  const run = set.tools.get(name)!.run;
  const ctx = { update() {} } as unknown as ToolCallContext;
  return {
    name: "run",
    call: async () => run({ ...ORDER_ARGS }, standInSignal(), ctx),
    close: () => set.close(),
  };
}

// Each rig with the server child it spawned (the new pid after it started).
const started: { rig: Rig; pid: number | undefined }[] = [];
const starters = process.argv.includes("--layers")
  ? [startMcpStdio, startSdkAsConnector, startConnectorRun, startConnector]
  : [startMcpStdio, startConnector];
for (const start of starters) {
  const before = childPids();
  const rig = await start();
  started.push({ rig, pid: [...childPids()].find((pid) => !before.has(pid)) });
}
const sdk = started[0]!.rig;
const connector = started.at(-1)!.rig;
try {
  if (PROFILE !== undefined) {
    const rig = PROFILE === "sdk" ? sdk : connector;
    for (let round = 0; round < ROUNDS; round++) {
      await block(rig, 1, CALLS, undefined);
      await block(rig, 64, CALLS, undefined);
    }
    process.exit(0);
  }
  for (const { rig } of started) {
    await block(rig, 1, 2_000, undefined);
    await block(rig, 64, 4_000, undefined);
  }
  for (const inFlight of [1, 64]) {
    const figures = new Map<string, Figures[]>(started.map(({ rig }) => [rig.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const { rig, pid } of started) figures.get(rig.name)!.push(await block(rig, inFlight, CALLS, pid));
    }
    const line = (name: string, xs: Figures[]) =>
      `${name.padEnd(12)} self ${median(xs.map((x) => x.self))
        .toFixed(1)
        .padStart(6)} µs/call, server child ${median(xs.map((x) => x.child))
        .toFixed(1)
        .padStart(6)} µs/call, ${Math.round(median(xs.map((x) => x.rate)))
        .toLocaleString("en-US")
        .padStart(7)} calls/s`;
    console.log(`${inFlight} in flight (median of ${ROUNDS} blocks of ${CALLS} calls)`);
    for (const [name, xs] of figures) console.log(line(name === "MCP stdio" ? "sdk" : name, xs));
  }
} finally {
  await Promise.all(started.map(({ rig }) => rig.close()));
}
