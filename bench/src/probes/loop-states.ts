// Probe: who is running when, during scenario 4's turns at `--sessions` at once. A thread of this
// process reads the state of three main threads from /proc (`R` running or ready to run, `S`
// asleep, `D` in disk wait) every `--every` ms for `--ms` ms in the middle of a block of turns:
// the server's event loop, the worker's and the client's (this process's). Prints each one's
// shares and the most common combinations, with the cores the three processes used meanwhile.
// On two cores, a combination with one thread runnable leaves a core to whatever else runs then.
// The sampler costs a little CPU of its own (in this process, not the client's thread). Linux only.
//   node --import tsx src/probes/loop-states.ts [--sessions 64] [--turns 25000] [--ms 5000] [--every 2]
import { Worker } from "node:worker_threads";
import { spawnPeer } from "../children";
import { throughputBlock } from "../measure";
import { turnRig } from "../whole-turn";
import { procCpuUs } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const sessions = arg("sessions", 64);
const turns = arg("turns", 25_000);
const sampleMs = arg("ms", 5_000);
const everyMs = arg("every", 2);

// The sampler: plain JavaScript for a worker thread (no imports to resolve there).
const SAMPLER = `
const { parentPort, workerData } = require("node:worker_threads");
const { readFileSync } = require("node:fs");
const { files, ms, every } = workerData;
const state = (file) => {
  try {
    const text = readFileSync(file, "utf8");
    return text[text.lastIndexOf(")") + 2];
  } catch {
    return "?";
  }
};
const counts = {};
let samples = 0;
const end = Date.now() + ms;
const tick = () => {
  const key = files.map(state).join("");
  counts[key] = (counts[key] ?? 0) + 1;
  samples++;
  if (Date.now() < end) setTimeout(tick, every);
  else parentPort.postMessage({ counts, samples });
};
tick();
`;

function sample(files: string[]): Promise<{ counts: Record<string, number>; samples: number }> {
  const worker = new Worker(SAMPLER, { eval: true, workerData: { files, ms: sampleMs, every: everyMs } });
  return new Promise((resolve, reject) => {
    worker.once("message", (result) => {
      void worker.terminate();
      resolve(result);
    });
    worker.once("error", reject);
  });
}

const server = await spawnPeer<{ url: string }>("server-process");
const worker = await spawnPeer("worker", { args: [server.ready.url] });
const rig = await turnRig(server.ready.url, sessions);
try {
  // Warm: the server's turns/s rises over its first thousands of turns (README, warm-up).
  await throughputBlock(rig, sessions, Math.min(turns, 5_000), 60_000);
  const pids = { server: server.child.pid!, worker: worker.child.pid!, client: process.pid };
  const files = Object.values(pids).map((pid) => `/proc/${pid}/task/${pid}/stat`);
  const block = throughputBlock(rig, sessions, turns, 120_000);
  // Sample the middle of the block: past its start, well before its end.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const cpuBefore = Object.values(pids).map((pid) => procCpuUs(pid));
  const started = performance.now();
  const { counts, samples } = await sample(files);
  const seconds = (performance.now() - started) / 1000;
  const cpu = Object.values(pids).map((pid, i) => (procCpuUs(pid) - cpuBefore[i]!) / 1e6 / seconds);
  const rate = await block;
  const names = Object.keys(pids);
  const share = (n: number) => `${((n / samples) * 100).toFixed(1)} %`;
  console.log(
    `${sessions} sessions: ${Math.round(rate)} turns/s; ${samples} samples every ${everyMs} ms over ${sampleMs} ms`,
  );
  names.forEach((name, i) => {
    const by: Record<string, number> = {};
    for (const [key, n] of Object.entries(counts)) by[key[i]!] = (by[key[i]!] ?? 0) + n;
    const states = Object.entries(by)
      .sort((a, b) => b[1] - a[1])
      .map(([s, n]) => `${s} ${share(n)}`)
      .join(", ");
    const note = name === "client" ? " (with the sampler)" : "";
    console.log(`  ${name.padEnd(6)} main thread: ${states}; process ${cpu[i]!.toFixed(2)} cores${note}`);
  });
  console.log(`  cores used by the three: ${cpu.reduce((a, b) => a + b, 0).toFixed(2)}`);
  console.log(`  most common (${names.join(", ")}):`);
  for (const [key, n] of Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8))
    console.log(`    ${key.split("").join(" ")}  ${share(n)}`);
} finally {
  await rig.close();
  await worker.kill();
  await server.kill();
}
process.exit(0);
