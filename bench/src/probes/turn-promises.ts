// Probe: how many promises the server makes per whole turn (scenario 4), one turn at a time and
// with `--sessions` at once, after `--warm` turns: an exact count (async_hooks, promise-count.ts
// preloaded into the server), which the machine's load does not move. Each promise is an
// allocation and most are a microtask hop. `--bench <dir>` runs the server of another checkout's
// bench (its `src/peers/server-process.ts`, on that checkout's build), to compare two builds:
// PROMISE_SITES=1 lists where the server made them (slow). It also gives the bytes the server's
// scavenges found young and promoted per turn; PROMISE_HOOK=0 leaves the promise hook (and its
// own allocations) out of those.
//   node --import tsx src/probes/turn-promises.ts [--turns 2000] [--warm 2000] [--sessions 64] [--bench /work/main/bench]
import { fork } from "node:child_process";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnPeer } from "../children";
import { latencyBlock, throughputBlock } from "../measure";
import { turnRig } from "../whole-turn";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const turns = arg("turns", 2000);
const warm = arg("warm", 2000);
const sessions = arg("sessions", 64);
const benchAt = process.argv.indexOf("--bench");
const bench =
  benchAt > 0 ? resolve(process.argv[benchAt + 1]!) : fileURLToPath(new URL("../..", import.meta.url));

const server = fork(resolve(bench, "src/peers/server-process.ts"), [], {
  execArgv: ["--import", "tsx", "--import", fileURLToPath(new URL("./promise-count.ts", import.meta.url))],
  env: { ...process.env, BENCH_COUNT_SQL: "0" },
  stdio: ["ignore", "inherit", "inherit", "ipc"],
});
process.once("exit", () => server.kill("SIGKILL"));
const url = await new Promise<string>((done, fail) => {
  server.on("message", (message: { type?: string; url?: string; error?: string }) => {
    if (message?.type === "ready") done(message.url!);
    else if (message?.type === "failed") fail(new Error(message.error));
  });
});
const worker = await spawnPeer("worker", { args: [url] });
type Counted = {
  promiseCountReply?: number;
  sites?: [string, number][];
  gc?: { scavenges: number; youngBytes: number; promotedBytes: number };
};
const ask = (command: "take" | "reset") =>
  new Promise<Counted>((done) => {
    const onMessage = (message: Counted) => {
      if (message?.promiseCountReply === undefined) return;
      server.off("message", onMessage);
      done(message);
    };
    server.on("message", onMessage);
    server.send({ promiseCount: command });
  });
const count = async () => (await ask("reset")).promiseCountReply!;

const one = await turnRig(url, 1);
const many = await turnRig(url, sessions);
try {
  await latencyBlock(one, warm, 600_000);
  for (const [name, run] of [
    ["1 in flight", () => latencyBlock(one, turns, 600_000)],
    [`${sessions} sessions`, () => throughputBlock(many, sessions, turns, 600_000)],
  ] as const) {
    const before = await count();
    await run();
    const taken = await ask("take");
    const after = taken.promiseCountReply!;
    const gc = taken.gc!;
    console.log(
      `${name}: ${((after - before) / turns).toFixed(1)} promises per turn in the server; young bytes ${(gc.youngBytes / turns / 1024).toFixed(1)} KiB, promoted ${(gc.promotedBytes / turns).toFixed(0)} B per turn, ${gc.scavenges} scavenges (${bench})`,
    );
    // With PROMISE_SITES=1: where they were made, per turn.
    for (const [where, n] of taken.sites ?? [])
      console.log(`  ${(n / turns).toFixed(2).padStart(6)}  ${where}`);
  }
} finally {
  await one.close();
  await many.close();
  await worker.kill();
  server.kill("SIGKILL");
}
process.exit(0);
