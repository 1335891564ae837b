// Probe: a lone whole turn (scenario 4, one in flight) on two servers that differ only in their
// environment, alternated block by block so both meet the same minutes of the machine. Side A's
// server and worker run with the bench's environment; side B's add `--env NAME=VALUE` (repeatable).
// For an experiment behind an environment switch, before it becomes code. `--many` alternates
// blocks of `--turns` turns at 64 sessions instead, and reads turns/s and each server's CPU per
// turn (all its threads, and its main thread).
//   node --import tsx src/probes/turn-env-ab.ts --env NAME=VALUE [--warm 20000] [--turns 2000] [--rounds 6] [--many]
import { spawnPeer } from "../children";
import { latencyBlock, throughputBlock } from "../measure";
import { median, summarize } from "../stats";
import { turnRig } from "../whole-turn";
import { procCpuUs } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const warm = arg("warm", 20_000);
const turns = arg("turns", 2_000);
const rounds = arg("rounds", 6);
const many = process.argv.includes("--many");
const envB: Record<string, string> = {};
process.argv.forEach((value, i) => {
  if (value !== "--env") return;
  const [name, ...rest] = (process.argv[i + 1] ?? "").split("=");
  if (name) envB[name] = rest.join("=");
});
if (Object.keys(envB).length === 0) throw new Error("usage: turn-env-ab.ts --env NAME=VALUE [...]");

async function side(env: Record<string, string>) {
  const server = await spawnPeer<{ url: string }>("server-process", { env });
  const worker = await spawnPeer("worker", { args: [server.ready.url], env });
  const many = await turnRig(server.ready.url, 64);
  const one = await turnRig(server.ready.url, 1);
  return { server, worker, many, one };
}

const sides = { A: await side({}), B: await side(envB) };
try {
  // Each server warms up by its number of turns (README, "How to read the table").
  for (const s of Object.values(sides)) {
    await throughputBlock(s.many, 64, warm, 120_000);
    await latencyBlock(s.one, 1_000, 30_000);
  }
  const p50s: Record<string, number[]> = { A: [], B: [] };
  const rates: Record<string, number[]> = { A: [], B: [] };
  const mainCpu: Record<string, number[]> = { A: [], B: [] };
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const);
    for (const name of order) {
      if (many) {
        const pid = sides[name].server.child.pid!;
        const before = { all: procCpuUs(pid), main: procCpuUs(pid, pid) };
        const start = performance.now();
        const rate = await throughputBlock(sides[name].many, 64, turns, 60_000);
        // The turns done: fewer than asked when the block ran into its 60 s bound.
        const n = (rate * (performance.now() - start)) / 1000;
        const all = (procCpuUs(pid) - before.all) / n;
        const main = (procCpuUs(pid, pid) - before.main) / n;
        rates[name]!.push(rate);
        mainCpu[name]!.push(main);
        console.log(
          `round ${round + 1} ${name}: ${rate.toFixed(0)} turns/s; server CPU per turn ${all.toFixed(0)} µs (main thread ${main.toFixed(0)} µs)`,
        );
        continue;
      }
      const stats = summarize(await latencyBlock(sides[name].one, turns, 60_000));
      p50s[name]!.push(stats.p50);
      console.log(
        `round ${round + 1} ${name}: p50 ${stats.p50.toFixed(0)} µs, p99 ${stats.p99.toFixed(0)} µs`,
      );
    }
  }
  if (many)
    console.log(
      `median of the rounds: A ${median(rates.A!).toFixed(0)} turns/s, main thread ${median(mainCpu.A!).toFixed(0)} µs a turn; B ${median(rates.B!).toFixed(0)} turns/s, ${median(mainCpu.B!).toFixed(0)} µs (B: ${JSON.stringify(envB)})`,
    );
  else
    console.log(
      `median of the rounds' p50: A ${median(p50s.A!).toFixed(0)} µs, B ${median(p50s.B!).toFixed(0)} µs (B: ${JSON.stringify(envB)})`,
    );
} finally {
  for (const s of Object.values(sides)) {
    await s.many.close();
    await s.one.close();
    await s.worker.kill();
    await s.server.kill();
  }
}
