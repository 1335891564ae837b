// Probe: the worker's side of a hosted call at one in flight, for two builds in one process,
// alternated call by call: this checkout and `--base <checkout>` (another clone or worktree,
// installed and built). Each build's own `decodeFrame`, `Tools`, `HostedTools` and
// `encodeResultFrame` serve its calls, as `worker-path.ts` strings them together. Both builds
// meet the same minutes of the machine, so a difference of a few percent reads through load that
// moves two runs made one after the other by more than that.
// Each call's time is from its frame's text to its result's text (the tool answers at once), with
// `--cold <MiB>` of other memory read before each call (0: warm). The order of the two builds
// swaps every pair, so neither always runs after the other's call.
//   node --import tsx src/probes/worker-path-ab.ts --base /work/base [--calls 20000] [--rounds 3] [--cold 8]
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { BENCH_AGENT, hostedCallFrame, LOOKUP_ORDER, lookupOrderText } from "../lookup-order";

const option = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const base = option("base");
if (!base) throw new Error("--base <checkout>: the built checkout to compare this one with");
const calls = Number(option("calls") ?? 20_000);
const rounds = Number(option("rounds") ?? 3);
const coldMiB = Number(option("cold") ?? 8);
const other = new Float64Array((coldMiB * 1024 * 1024) / 8);
let otherSum = 0;
/** Reads `other` a cache line at a time (64 B), so the path's data leaves the CPU's caches. */
const evict = () => {
  for (let i = 0; i < other.length; i += 8) otherSum += other[i]!;
};

interface Build {
  label: string;
  /** Runs one call; resolves once its result was encoded, with when that was (`performance.now()`). */
  call(id: string): Promise<number>;
  samples: number[];
}

async function load(label: string, root: string): Promise<Build> {
  const at = (path: string) => {
    const file = resolve(root, path);
    if (!existsSync(file)) throw new Error(`${label}: ${file} is missing (is the checkout built?)`);
    return import(pathToFileURL(file).href);
  };
  const protocol = await at("packages/protocol/dist/index.js");
  const { Tools } = await at("packages/tools/dist/index.js");
  const { HostedTools } = await at("packages/dispatch/src/hosted-tools.ts");
  const tools = new Tools().register({
    ...LOOKUP_ORDER,
    run: async ({ order_id }: { order_id: string }) => lookupOrderText(order_id),
  });
  let answered: (at: number) => void = () => {};
  const hosted = new HostedTools({
    send(frame: unknown) {
      protocol.encodeResultFrame(frame, 16 * 1024 * 1024);
      // The text is ready to be written here: what the worker does after this is not on the
      // call's way back, so the time stops here, not when the caller's promise job runs.
      answered(performance.now());
    },
    emit() {},
    listens: () => false,
  });
  hosted.host({ name: BENCH_AGENT, tools }, { toolTimeoutMs: 60_000 });
  return {
    label,
    samples: [],
    call(id) {
      const done = new Promise<number>((resolve) => {
        answered = resolve;
      });
      const text = JSON.stringify({ ...hostedCallFrame(id), timeoutMs: 30_000 });
      const decoded = protocol.decodeFrame(text, { channel: "server-to-worker", maxBytes: 16 * 1024 * 1024 });
      if (!decoded.ok) throw new Error(decoded.error.message);
      hosted.call(decoded.frame);
      return done;
    },
  };
}

const builds = [await load("this checkout", process.cwd().replace(/\/bench$/, "")), await load("base", base)];

async function timed(build: Build, id: string, record: boolean): Promise<void> {
  if (coldMiB > 0) evict();
  const start = performance.now();
  const sent = await build.call(id);
  if (record) build.samples.push((sent - start) * 1000);
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

let next = 0;
for (let round = -1; round < rounds; round++) {
  // Round -1 warms both builds up and is not printed.
  const count = round < 0 ? 5_000 : calls;
  for (const build of builds) build.samples = [];
  for (let i = 0; i < count; i++) {
    const pair = i % 2 === 0 ? builds : [builds[1]!, builds[0]!];
    for (const build of pair) await timed(build, `call_${(next++).toString(36)}`, round >= 0);
  }
  if (round < 0) continue;
  const line = builds.map((build) => {
    const sorted = build.samples.sort((a, b) => a - b);
    const mean = sorted.reduce((sum, x) => sum + x, 0) / sorted.length;
    return `${build.label}: p50 ${quantile(sorted, 0.5).toFixed(2)} µs, p90 ${quantile(sorted, 0.9).toFixed(2)}, mean ${mean.toFixed(2)}`;
  });
  console.log(
    `round ${round + 1}${coldMiB > 0 ? ` (cold, ${coldMiB} MiB read before each call)` : " (warm)"}: ${line.join("; ")}`,
  );
}
process.exit(otherSum === 0 ? 0 : 1);
