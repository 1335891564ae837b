// Reads `.cpuprofile` files (from `node --cpu-prof`) and prints the functions with the most self
// time, to see where a scenario's time goes. Usage:
//   NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" node --import tsx src/main.ts --only "1 hosted"
//   node --import tsx src/profile-top.ts /tmp/prof/*.cpuprofile [--top 25] [--inclusive] [--below <text>]
// `--inclusive` ranks functions by their time with everything they called (a function counts once
// per sample, however often it is on the stack), as a share of the busy (not idle) time.
// `--below <text>` (repeatable) takes the functions whose name (`name file:line`) contains the
// text and splits their inclusive time by the function they called directly, `(self)` for their own.
import { readFileSync } from "node:fs";
import { type CallFrame, frameName } from "./frame-name";

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const flagValue = (flag: string) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : undefined;
};
const top = Number(flagValue("--top") ?? 25);
const inclusive = args.includes("--inclusive");
const below = args.flatMap((a, i) => (args[i - 1] === "--below" ? [a] : []));
const files = args.filter(
  (a, i) => a.endsWith(".cpuprofile") && !["--top", "--below"].includes(args[i - 1] ?? ""),
);

const nameOf = (node: ProfileNode) => frameName(node.callFrame);

const line = (us: number, of: number, key: string) =>
  `${((us / of) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`;

const ranked = (times: Map<string, number>, count: number) =>
  [...times.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const self = new Map<string, number>();
  const withCallees = new Map<string, number>();
  /** For `--below`: each matching function's time by the function it called. */
  const split = new Map<string, Map<string, number>>();
  let total = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const key = nameOf(byId.get(id)!);
    // Each sample's time delta is charged to the function on top of the stack at that sample.
    self.set(key, (self.get(key) ?? 0) + delta);
    total += delta;
    if (key === "(idle)") {
      idle += delta;
      return;
    }
    if (!inclusive && below.length === 0) return;
    // The stack from the top down, each function once (at its topmost frame): its time with
    // callees, and for `--below` the function it called there (`(self)` when it is on top).
    const seen = new Set<string>();
    let callee = "(self)";
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const name = nameOf(byId.get(at)!);
      if (!seen.has(name)) {
        seen.add(name);
        withCallees.set(name, (withCallees.get(name) ?? 0) + delta);
        if (below.some((text) => name.includes(text))) {
          const parts = split.get(name) ?? new Map<string, number>();
          parts.set(callee, (parts.get(callee) ?? 0) + delta);
          split.set(name, parts);
        }
      }
      callee = name;
    }
  });
  console.log(
    `\n${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(((total - idle) / total) * 100).toFixed(0)}% busy`,
  );
  if (inclusive) {
    console.log("with callees, share of the busy time:");
    for (const [key, us] of ranked(withCallees, top)) console.log(line(us, total - idle, key));
  } else {
    for (const [key, us] of ranked(self, top)) console.log(line(us, total, key));
  }
  for (const [name, parts] of [...split].sort((a, b) => withCallees.get(b[0])! - withCallees.get(a[0])!)) {
    const us = withCallees.get(name)!;
    console.log(`\n${name}: ${(us / 1000).toFixed(1)} ms with callees, by what it called`);
    for (const [callee, v] of ranked(parts, top)) console.log(line(v, us, callee));
  }
}
