// Probe: where the time of a whole turn (scenario 4) goes, hop by hop, one turn at a time.
// Runs scenario 4's server and worker processes with hop-marks.ts preloaded, and the client
// here: every socket write and read of the three processes, and the server's BEGIN and COMMIT,
// are marked on the machine's one monotonic clock. Prints, for the most common sequence of marks
// in a turn, the median time of each since the turn began and the step from the mark before: a
// step that ends in another process is a hop (the socket, that process waking), a step within one
// process is its own work between two marks.
// `--profile <dir>` instead profiles the three processes over the turns (V8's sampler every 50 µs,
// no marks), into <dir>/{client,server,worker}.cpuprofile.
//   node --import tsx src/probes/turn-hops.ts [--turns 2000] [--warm 1000] [--profile <dir>]
import { fileURLToPath } from "node:url";
import { spawnPeer } from "../children";
import { turnRig } from "../whole-turn";
import { hopMark, hopMarks, hopProfile } from "./hop-marks";
import {
  askPeerMarks,
  askPeerProfile,
  type LabelledMark,
  markSequences,
  printSequence,
  rankSequences,
} from "./hop-sequences";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const turns = arg("turns", 2000);
const warm = arg("warm", 1000);
const profileAt = process.argv.indexOf("--profile");
const profileDir = profileAt > 0 ? process.argv[profileAt + 1] : undefined;

const preload = ["--import", fileURLToPath(new URL("./hop-marks.ts", import.meta.url))];
const server = await spawnPeer<{ url: string }>("server-process", {
  execArgv: preload,
  env: { HOP_MARKS_SQL: "1" },
});
const worker = await spawnPeer("worker", { args: [server.ready.url], execArgv: preload });

const rig = await turnRig(server.ready.url, 1);
try {
  for (let i = 0; i < warm; i++) await rig.call();
  if (profileDir) {
    await Promise.all([
      askPeerProfile(server, "start", 50),
      askPeerProfile(worker, "start", 50),
      hopProfile("start", 50),
    ]);
    for (let i = 0; i < turns; i++) await rig.call();
    await Promise.all([
      askPeerProfile(server, "stop", `${profileDir}/server.cpuprofile`),
      askPeerProfile(worker, "stop", `${profileDir}/worker.cpuprofile`),
      hopProfile("stop", `${profileDir}/client.cpuprofile`),
    ]);
    console.log(`profiles of ${turns} turns in ${profileDir}`);
    process.exit(0);
  }
  await Promise.all([askPeerMarks(server, "on"), askPeerMarks(worker, "on")]);
  hopMarks("on");
  for (let i = 0; i < turns; i++) {
    hopMark("turn");
    await rig.call();
    hopMark("turn end");
  }
  hopMarks("off");
  await Promise.all([askPeerMarks(server, "off"), askPeerMarks(worker, "off")]);
  const [serverMarks, workerMarks] = await Promise.all([
    askPeerMarks(server, "take"),
    askPeerMarks(worker, "take"),
  ]);
  const clientMarks = hopMarks("take");
  const workerPorts = new Set(workerMarks.map((m) => m[2]).filter((p) => p > 0));
  const all: LabelledMark[] = [
    ...clientMarks.map(([l, ns, , r]) => ({ label: r ? `client ${l} (server)` : `client ${l}`, ns })),
    ...workerMarks.map(([l, ns, , r]) => ({ label: r ? `worker ${l} (server)` : `worker ${l}`, ns })),
    ...serverMarks.map(([l, ns, , r]) => ({
      label: r ? `server ${l} (${workerPorts.has(r) ? "worker" : "client"})` : `server ${l}`,
      ns,
    })),
  ].sort((a, b) => a.ns - b.ns);
  const sequences = markSequences(all, "client turn", "client turn end", "turn end");
  // Milestones every turn has, whatever the order of the marks between them: the median of each
  // step over all turns (a turn missing one is left out of that step).
  const milestones = [
    "server got message.send (client)",
    "server COMMIT done",
    "server flush (worker)",
    "worker got hosted.call:message (server)",
    "worker send hosted.result (server)",
    "server got hosted.result (worker)",
    "server COMMIT done",
    "client got response.completed (server)",
  ];
  const steps: number[][] = milestones.map(() => []);
  const ends: number[][] = milestones.map(() => []);
  for (const [key, rows] of sequences) {
    const labels = key.split("|");
    const at: number[] = [];
    let from = 0;
    for (const milestone of milestones) {
      const i = labels.indexOf(milestone, from);
      at.push(i);
      from = i < 0 ? from : i + 1;
    }
    for (const row of rows) {
      let before = 0;
      for (let m = 0; m < milestones.length; m++) {
        const i = at[m]!;
        if (i < 0) break;
        steps[m]!.push(row[i]! - before);
        ends[m]!.push(row[i]!);
        before = row[i]!;
      }
    }
  }
  // Which of its two sockets the server writes first once the first transaction is written.
  let workerFirst = 0;
  let clientFirst = 0;
  for (const [key, rows] of sequences) {
    const labels = key.split("|");
    const from = labels.indexOf("server COMMIT done");
    const worker = labels.indexOf("server flush (worker)", from);
    const client = labels.indexOf("server flush (client)", from);
    if (from < 0 || worker < 0 || client < 0) continue;
    if (worker < client) workerFirst += rows.length;
    else clientFirst += rows.length;
  }
  console.log(
    `after the first transaction the server wrote the worker's socket first in ${workerFirst} turns, the client's in ${clientFirst}`,
  );
  const median = (values: number[]) => values.sort((x, y) => x - y)[values.length >> 1] ?? Number.NaN;
  console.log("milestones, median µs since the turn began (median step from the milestone before):");
  for (let m = 0; m < milestones.length; m++) {
    console.log(
      `  ${milestones[m]!.padEnd(42)} ${median(ends[m]!).toFixed(1).padStart(8)}  (+${median(steps[m]!).toFixed(1)})`,
    );
  }
  const { ranked, p50Us } = rankSequences(sequences);
  console.log(
    `${turns} turns one at a time: p50 ${(p50Us / 1000).toFixed(2)} ms; ${ranked.length} sequences, the most common ${ranked[0]![1].length} turns`,
  );
  const [key, rows] = ranked[0]!;
  console.log("median µs since the turn began (step from the mark before):");
  printSequence(key, rows, 32);
} finally {
  await rig.close();
  await worker.kill();
  await server.kill();
}
process.exit(0);
