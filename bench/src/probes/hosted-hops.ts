// Probe: where a hosted tool call (scenario 1) at one in flight spends its time, mark by mark,
// beside the raw floor's round trip. The server (router rig) runs here and the worker in its own
// process, both with hop-marks.ts; so does the floor's peer. Prints, for each, the most common
// sequence of marks with the median time since the call began and the step from the mark before.
// `--profile <dir>` instead profiles this process (the server's side) and the worker over the
// calls (V8's sampler every 25 µs, no marks), into <dir>/{server,worker}.cpuprofile.
//   node --import tsx src/probes/hosted-hops.ts [--calls 3000] [--warm 20000] [--profile <dir>]
import { fileURLToPath } from "node:url";
import type { Peer } from "../children";
import { routerRig, startHostedSetup } from "../hosted-tool-call";
import type { Rig } from "../measure";
import { startRawWsFloor } from "../raw-ws-floor";
import { hopMark, hopMarks, hopProfile } from "./hop-marks";
import { askPeerMarks, askPeerProfile, markSequences, printSequence, rankSequences } from "./hop-sequences";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 3000);
const warm = arg("warm", 20000);
const profileAt = process.argv.indexOf("--profile");
const profileDir = profileAt > 0 ? process.argv[profileAt + 1] : undefined;
const preload = ["--import", fileURLToPath(new URL("./hop-marks.ts", import.meta.url))];

async function timeline(name: string, rig: Rig, peer: Peer<unknown>): Promise<void> {
  for (let i = 0; i < warm; i++) await rig.call();
  await askPeerMarks(peer, "on");
  hopMarks("on");
  for (let i = 0; i < calls; i++) {
    hopMark("call");
    await rig.call();
    hopMark("call end");
  }
  hopMarks("off");
  await askPeerMarks(peer, "off");
  const peerMarks = await askPeerMarks(peer, "take");
  const here = hopMarks("take");
  const all = [
    ...here.map(([l, ns]) => ({ label: `here ${l}`, ns })),
    ...peerMarks.map(([l, ns]) => ({ label: `peer ${l}`, ns })),
  ].sort((a, b) => a.ns - b.ns);
  const { ranked, p50Us } = rankSequences(markSequences(all, "here call", "here call end", "call end"));
  const [key, rows] = ranked[0]!;
  console.log(
    `${name}: ${calls} calls, p50 ${p50Us.toFixed(1)} µs; most common sequence ${rows.length} calls`,
  );
  printSequence(key, rows, 36);
}

if (profileDir) {
  const setup = await startHostedSetup(1, preload);
  const rig = routerRig(setup.bench);
  const worker = setup.peers[0]!;
  try {
    for (let i = 0; i < warm; i++) await rig.call();
    await Promise.all([askPeerProfile(worker, "start", 25), hopProfile("start", 25)]);
    for (let i = 0; i < calls; i++) await rig.call();
    await Promise.all([
      askPeerProfile(worker, "stop", `${profileDir}/worker.cpuprofile`),
      hopProfile("stop", `${profileDir}/server.cpuprofile`),
    ]);
    console.log(`profiles of ${calls} calls in ${profileDir}`);
  } finally {
    await setup.close();
  }
  process.exit(0);
}

const floor = await startRawWsFloor(preload);
const setup = await startHostedSetup(1, preload);
try {
  for (let round = 0; round < 2; round++) {
    await timeline("raw ws floor", floor, floor.peer);
    await timeline("hosted (router)", routerRig(setup.bench), setup.peers[0]!);
  }
} finally {
  await setup.close();
  await floor.close();
}
process.exit(0);
