// Probe: where a hosted tool call (scenario 1) at one in flight spends its time, mark by mark,
// beside the raw floor's round trip. The server (router rig) runs here and the worker in its own
// process, both with hop-marks.ts; so does the floor's peer. Prints, for each, the most common
// sequence of marks with the median time since the call began and the step from the mark before.
//   node --import tsx src/probes/hosted-hops.ts [--calls 3000] [--warm 20000]
import { fileURLToPath } from "node:url";
import type { Peer } from "../children";
import { routerRig, startHostedSetup } from "../hosted-tool-call";
import type { Rig } from "../measure";
import { startRawWsFloor } from "../raw-ws-floor";
import { type HopMark, hopMark, hopMarks } from "./hop-marks";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 3000);
const warm = arg("warm", 20000);
const preload = ["--import", fileURLToPath(new URL("./hop-marks.ts", import.meta.url))];

const ask = (peer: Peer<unknown>, command: "on" | "off" | "take") =>
  new Promise<HopMark[]>((resolve) => {
    const onMessage = (message: { hopMarksReply?: string; marks?: HopMark[] }) => {
      if (message?.hopMarksReply !== command) return;
      peer.child.off("message", onMessage);
      resolve(message.marks ?? []);
    };
    peer.child.on("message", onMessage);
    peer.child.send({ hopMarks: command });
  });

async function timeline(name: string, rig: Rig, peer: Peer<unknown>): Promise<void> {
  for (let i = 0; i < warm; i++) await rig.call();
  await ask(peer, "on");
  hopMarks("on");
  for (let i = 0; i < calls; i++) {
    hopMark("call");
    await rig.call();
    hopMark("call end");
  }
  hopMarks("off");
  await ask(peer, "off");
  const peerMarks = await ask(peer, "take");
  const here = hopMarks("take");
  const all = [
    ...here.map(([l, ns]) => ({ label: `here ${l}`, ns })),
    ...peerMarks.map(([l, ns]) => ({ label: `peer ${l}`, ns })),
  ].sort((a, b) => a.ns - b.ns);
  const sequences = new Map<string, number[][]>();
  let current: { label: string; ns: number }[] | undefined;
  let t0 = 0;
  for (const m of all) {
    if (m.label === "here call") {
      current = [];
      t0 = m.ns;
    } else if (m.label === "here call end" && current) {
      const key = [...current.map((x) => x.label), "call end"].join("|");
      const rows = sequences.get(key) ?? [];
      rows.push([...current.map((x) => (x.ns - t0) / 1000), (m.ns - t0) / 1000]);
      sequences.set(key, rows);
      current = undefined;
    } else current?.push(m);
  }
  const ranked = [...sequences].sort((x, y) => y[1].length - x[1].length);
  const [key, rows] = ranked[0]!;
  const total = ranked.flatMap(([, r]) => r.map((x) => x[x.length - 1]!)).sort((a, b) => a - b);
  console.log(
    `${name}: ${calls} calls, p50 ${total[total.length >> 1]!.toFixed(1)} µs; most common sequence ${rows.length} calls`,
  );
  let before = 0;
  for (const [i, label] of key.split("|").entries()) {
    const at = rows.map((r) => r[i]!).sort((x, y) => x - y)[rows.length >> 1]!;
    console.log(`  ${label.padEnd(36)} ${at.toFixed(1).padStart(7)}  (+${(at - before).toFixed(1)})`);
    before = at;
  }
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
