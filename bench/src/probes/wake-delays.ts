// Probe: how long each process of a lone whole turn (scenario 4, one in flight) waits between being
// woken and running, by who woke it and whether it ran on the waker's CPU or another. Records the
// scheduler with `perf sched record` for `--ms` ms in the middle of a block of lone turns and
// reads `perf sched timehist -w`: for each wake-up of the client (this process), the server's
// event loop or the worker's by one of the others, the delay until the wakee's next run, grouped
// by (waker, wakee, same or other CPU). A turn makes four such hops; on a virtual machine, a wake
// onto a CPU that has been idle for a while waits for the hypervisor to run that virtual CPU again.
// Needs `perf` and the rights to trace the scheduler (root). Linux only.
//   node --import tsx src/probes/wake-delays.ts [--warm 20000] [--turns 20000] [--ms 2000]
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnPeer } from "../children";
import { latencyBlock, throughputBlock } from "../measure";
import { summarize } from "../stats";
import { turnRig } from "../whole-turn";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const warm = arg("warm", 20_000);
const turns = arg("turns", 20_000);
const recordMs = arg("ms", 2_000);

/** Runs `perf sched record` on every CPU for `ms` and returns the data file. */
function recordScheduler(dir: string, ms: number): Promise<string> {
  const file = join(dir, "sched.data");
  const perf = spawn("perf", ["sched", "record", "-a", "-o", file, "--", "sleep", String(ms / 1000)], {
    stdio: "ignore",
  });
  return new Promise((resolve, reject) => {
    perf.once("error", reject);
    perf.once("exit", (code) => (code === 0 ? resolve(file) : reject(new Error(`perf exited with ${code}`))));
  });
}

interface Slice {
  start: number;
  end: number;
  cpu: number;
  /** Our name for the task ("client", "server", "worker"), or undefined for any other. */
  task: string | undefined;
}
interface Wake {
  at: number;
  cpu: number;
  waker: string;
  wakee: string;
}

/** The run slices (µs) of every task and the wake-ups among ours, from `perf sched timehist -w`. */
function readSchedule(file: string, names: Map<string, string>): { slices: Slice[]; wakes: Wake[] } {
  const text = execFileSync("perf", ["sched", "timehist", "-w", "-i", file], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const slices: Slice[] = [];
  const wakes: Wake[] = [];
  for (const line of text.split("\n")) {
    const m = /^\s*([\d.]+)\s+\[(\d+)\]\s+\S*\[(\d+)(?:\/\d+)?\]\s+(.*)$/.exec(line);
    if (!m) continue;
    const at = Number(m[1]) * 1e6;
    const cpu = Number(m[2]);
    const task = names.get(m[3]!);
    const rest = m[4]!;
    const wake = /awakened: \S*\[(\d+)(?:\/\d+)?\]/.exec(rest);
    if (wake) {
      const wakee = names.get(wake[1]!);
      if (task && wakee) wakes.push({ at, cpu, waker: task, wakee });
      continue;
    }
    // A switch-out line: wait time, scheduling delay and run time (ms) end it; `at` is its end.
    const fields = rest.trim().split(/\s+/);
    if (fields.length < 3) continue;
    const run = Number(fields[fields.length - 1]) * 1000;
    if (Number.isFinite(run)) slices.push({ start: at - run, end: at, cpu, task });
  }
  slices.sort((a, b) => a.start - b.start);
  return { slices, wakes };
}

/**
 * For each wake-up among ours, the delay (µs) until the wakee's next slice, keyed
 * `waker -> wakee, same|other CPU`; and for wake-ups onto another CPU on which nothing ran in
 * between, the delay keyed by how long that CPU had been idle before the wake.
 */
function wakeDelays({ slices, wakes }: { slices: Slice[]; wakes: Wake[] }) {
  const byPair = new Map<string, number[]>();
  const byIdle = new Map<string, number[]>();
  const add = (map: Map<string, number[]>, key: string, value: number) => {
    const list = map.get(key) ?? [];
    list.push(value);
    map.set(key, list);
  };
  const byCpu = new Map<number, Slice[]>();
  for (const slice of slices) {
    const list = byCpu.get(slice.cpu) ?? [];
    list.push(slice);
    byCpu.set(slice.cpu, list);
  }
  for (const wake of wakes) {
    const next = slices.find((s) => s.task === wake.wakee && s.start >= wake.at - 1);
    if (!next) continue;
    const delay = next.start - wake.at;
    add(byPair, `${wake.waker} -> ${wake.wakee}, ${next.cpu === wake.cpu ? "same" : "other"} CPU`, delay);
    if (next.cpu === wake.cpu) continue;
    const there = byCpu.get(next.cpu) ?? [];
    if (there.some((s) => s !== next && s.end > wake.at && s.start < next.start)) continue;
    const lastEnd = Math.max(-Infinity, ...there.filter((s) => s.end <= wake.at).map((s) => s.end));
    if (!Number.isFinite(lastEnd)) continue;
    const idle = wake.at - lastEnd;
    const bound = [50, 100, 200, 400, 800].find((b) => idle < b);
    add(byIdle, bound === undefined ? "800 µs or more" : `under ${bound} µs`, delay);
  }
  return { byPair, byIdle };
}

function printDelays(title: string, delays: Map<string, number[]>, keys = [...delays.keys()].sort()): void {
  console.log(title);
  for (const key of keys) {
    const list = delays.get(key);
    if (!list) continue;
    const sorted = Float64Array.from(list).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0);
    console.log(
      `  ${key.padEnd(32)} ${String(sorted.length).padStart(6)} wakes, p50 ${at(0.5)} µs, p90 ${at(0.9)} µs`,
    );
  }
}

const server = await spawnPeer<{ url: string }>("server-process");
const worker = await spawnPeer("worker", { args: [server.ready.url] });
const many = await turnRig(server.ready.url, 64);
const one = await turnRig(server.ready.url, 1);
const dir = mkdtempSync(join(tmpdir(), "wake-delays-"));
try {
  await throughputBlock(many, 64, warm, 120_000);
  await latencyBlock(one, 1_000, 30_000);
  const block = latencyBlock(one, turns, 60_000);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const file = await recordScheduler(dir, recordMs);
  const latency = summarize(await block);
  // The server's and the worker's event loops are their processes' main threads (tid = pid).
  const names = new Map([
    [String(process.pid), "client"],
    [String(server.child.pid), "server"],
    [String(worker.child.pid), "worker"],
  ]);
  const { byPair, byIdle } = wakeDelays(readSchedule(file, names));
  console.log(
    `${latency.samples} lone turns, p50 ${(latency.p50 / 1000).toFixed(2)} ms; over ${recordMs} ms of them:`,
  );
  printDelays("wake-up to run, by waker and wakee:", byPair);
  const idleKeys = [50, 100, 200, 400, 800].map((b) => `under ${b} µs`).concat("800 µs or more");
  printDelays(
    "wake-up onto another CPU that ran nothing meanwhile, by how long it had been idle:",
    byIdle,
    idleKeys,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
  await many.close();
  await one.close();
  await worker.kill();
  await server.kill();
}
