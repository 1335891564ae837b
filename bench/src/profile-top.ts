// Reads `.cpuprofile` files (from `node --cpu-prof`) and prints the functions with the most self
// time, to see where a scenario's time goes. Usage:
//   NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" node --import tsx src/main.ts --only "1 hosted"
//   node --import tsx src/profile-top.ts /tmp/prof/*.cpuprofile [--top 25]
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const topIndex = args.indexOf("--top");
const top = topIndex >= 0 ? Number(args[topIndex + 1]) : 25;
const files = args.filter((a, i) => a.endsWith(".cpuprofile") && (topIndex < 0 || i !== topIndex + 1));

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  // Each sample's time delta is charged to the function on top of the stack at that sample.
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    const frame = byId.get(id)!.callFrame;
    const where = frame.url
      ? `${frame.url.replace(/^.*\/(node_modules|packages|bench)\//, "$1/")}:${frame.lineNumber + 1}`
      : "";
    const key = `${frame.functionName || "(anonymous)"} ${where}`.trim();
    self.set(key, (self.get(key) ?? 0) + delta);
    total += delta;
  });
  const idle = [...self.entries()].filter(([k]) => k.startsWith("(idle)")).reduce((n, [, v]) => n + v, 0);
  console.log(
    `\n${file}: ${(total / 1e6).toFixed(2)} s sampled, ${(((total - idle) / total) * 100).toFixed(0)}% busy`,
  );
  for (const [key, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${key}`,
    );
  }
}
