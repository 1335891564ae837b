// Probe: which page tool calls (scenario 2, one in flight) are slow, and why. Every call's hops
// are marked in both processes (page-tail-marks.ts: socket writes and reads, garbage collections),
// with the server's SQL statements, its WAL checkpoint thread's work, and both main threads' time
// on and waiting for a CPU (/proc/<pid>/task/<tid>/schedstat) around each call. Prints the
// latency percentiles (with the raw floor's, measured in alternating blocks), then, for the
// slowest 1 % against all calls, how often each suspect was there and the median of each hop;
// and per block, the CPU of both processes' threads other than the main one (V8's compiler and GC
// helpers, the checkpoint thread). `--warm` is the warm-up of each side (the bench's is 2,000).
//   node --import tsx src/probes/page-tail.ts [--calls 20000] [--blocks 4] [--warm 2000] [--floor 0] [--show 20]
// The marks cost a few microseconds a call; the figures to read are shares and spreads, not p50.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { spawnPeer } from "../children";
import { BENCH_USER, LOOKUP_ORDER, ORDER_ARGS } from "../lookup-order";
import { latencyBlock, type Rig } from "../measure";
import { startBenchServer } from "../patchbay-server";
import { startRawWsFloor } from "../raw-ws-floor";
import { summarize } from "../stats";
import { gcs, type Mark, marking, marks } from "./page-tail-marks";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 20_000);
const blocks = arg("blocks", 4);
const withFloor = arg("floor", 1) !== 0;
const show = arg("show", 15);
const warm = arg("warm", 2_000);
const ns = () => Number(process.hrtime.bigint());

// The server's SQL statements (start and end of each, by first word) and checkpoint thread.
const require = createRequire(import.meta.resolve("@patchbay/server"));
const Database = require("better-sqlite3") as new (
  p: string,
) => { prepare(s: string): object; close(): void };
const db = new Database(":memory:");
const proto = Object.getPrototypeOf(db.prepare("SELECT 1")) as Record<string, unknown>;
db.close();
for (const method of ["run", "get", "all"]) {
  const original = proto[method] as (...args: unknown[]) => unknown;
  proto[method] = function (this: { source: string }, ...args: unknown[]) {
    const word = /^\s*(\w+)/.exec(this.source)?.[1]?.toUpperCase() ?? "?";
    marks.push([`sql ${word}`, ns()]);
    try {
      return original.apply(this, args);
    } finally {
      marks.push([`sql ${word} end`, ns()]);
    }
  };
}
const checkpoints: [number, number][] = [];
let checkpointFrom = 0;
const post = Worker.prototype.postMessage;
Worker.prototype.postMessage = function (this: Worker, value: unknown, ...rest: unknown[]) {
  if (value === "checkpoint") checkpointFrom = ns();
  return (post as (...a: unknown[]) => void).call(this, value, ...rest);
};
const wEmit = Worker.prototype.emit;
Worker.prototype.emit = function (this: Worker, event: string | symbol, ...args: unknown[]) {
  if (event === "message" && checkpointFrom) {
    checkpoints.push([checkpointFrom, ns()]);
    checkpointFrom = 0;
  }
  return (wEmit as (...a: unknown[]) => boolean).call(this, event, ...args);
} as typeof wEmit;

/** CPU ms so far of a process's threads other than its main thread (V8's compiler and GC helpers, the checkpoint thread). */
function helperCpuMs(pid: number): number {
  let ticks = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (Number(tid) === pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // the thread ended
    }
  }
  return ticks * 10;
}

/** [ran, waited] ns of a thread so far. */
function sched(pid: number): [number, number] {
  const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ");
  return [Number(run), Number(wait)];
}

interface Call {
  t0: number;
  t1: number;
  serverRun: number;
  serverWait: number;
  pageRun: number;
  pageWait: number;
  marks: Mark[];
}

const bench = await startBenchServer();
const preload = fileURLToPath(new URL("./page-tail-marks.ts", import.meta.url));
const page = await spawnPeer<{ sessionId: string }>("page-client", {
  args: [bench.server.url],
  execArgv: ["--import", preload],
});
const floor = withFloor ? await startRawWsFloor() : undefined;
const pagePid = page.child.pid!;
const { live, release } = await bench.server.sessions.acquire({ kind: "backend" }, page.ready.sessionId);
const spec = live.runtime.pageToolSpecs().find((s) => s.name === LOOKUP_ORDER.name)!;
const noHandlers = { progress() {}, say() {}, hold: () => ({ accepted: true }), attempt() {} };
let next = 0;
const rig: Rig = {
  name: "page",
  async call() {
    const result = await live.pages.run(
      {
        callId: `call_p${(next++).toString(36)}`,
        responseId: "r_bench",
        spec,
        arguments: { ...ORDER_ARGS },
        timeoutMs: 30_000,
        user: BENCH_USER,
      },
      noHandlers,
    );
    if (result.outcome !== "completed") throw new Error(`page call ${result.outcome}`);
  },
  async close() {
    release();
  },
};

const pageDump = () =>
  new Promise<{ marks: Mark[]; gcs: [string, number, number][] }>((resolve) => {
    const onMessage = (m: { type?: string; marks: Mark[]; gcs: [string, number, number][] }) => {
      if (m?.type !== "tail-marks") return;
      page.child.off("message", onMessage);
      resolve(m);
    };
    page.child.on("message", onMessage);
    page.child.send({ type: "tail-dump" });
  });

try {
  marking(false);
  // The bench warms each side up with 2,000 calls (or 600 ms); --warm sets this probe's.
  await latencyBlock(rig, warm, 60_000);
  if (floor) await latencyBlock(floor, warm, 60_000);
  page.child.send({ type: "tail-clear" });
  gcs.length = 0;
  const all: Call[] = [];
  const floorSamples: number[] = [];
  const floorWaits: number[] = [];
  const perBlock = Math.ceil(calls / blocks);
  for (let b = 0; b < blocks; b++) {
    if (floor) {
      for (let i = 0; i < perBlock; i++) {
        const s0 = sched(process.pid);
        const f0 = sched(floor.peerPid);
        const t0 = ns();
        await floor.call();
        const t1 = ns();
        const s1 = sched(process.pid);
        const f1 = sched(floor.peerPid);
        floorSamples.push((t1 - t0) / 1000);
        floorWaits.push((s1[1] - s0[1] + f1[1] - f0[1]) / 1000);
      }
    }
    const helpers0 = [helperCpuMs(process.pid), helperCpuMs(pagePid)];
    marking(true);
    let s0 = sched(process.pid);
    let p0 = sched(pagePid);
    for (let i = 0; i < perBlock; i++) {
      const from = marks.length;
      const t0 = ns();
      await rig.call();
      const t1 = ns();
      const s1 = sched(process.pid);
      const p1 = sched(pagePid);
      all.push({
        t0,
        t1,
        serverRun: s1[0] - s0[0],
        serverWait: s1[1] - s0[1],
        pageRun: p1[0] - p0[0],
        pageWait: p1[1] - p0[1],
        marks: marks.slice(from),
      });
      marks.length = 0;
      s0 = s1;
      p0 = p1;
    }
    marking(false);
    const helpers = `; helper threads' CPU: server ${helperCpuMs(process.pid) - helpers0[0]!} ms, page ${helperCpuMs(pagePid) - helpers0[1]!} ms`;
    const block = all.slice(-perBlock).map((c) => (c.t1 - c.t0) / 1000);
    const fb = summarize(floorSamples.slice(-perBlock));
    const pb = summarize(block);
    console.log(
      `block ${b + 1}: page p50 ${pb.p50.toFixed(0)} p99 ${pb.p99.toFixed(0)} µs${floor ? `, floor p50 ${fb.p50.toFixed(0)} p99 ${fb.p99.toFixed(0)} µs` : ""}${helpers}`,
    );
  }
  const pageMarks = await pageDump();

  const lat = (c: Call) => (c.t1 - c.t0) / 1000;
  const s = summarize(all.map(lat));
  const p90 = [...all.map(lat)].sort((a, b) => a - b)[Math.floor(all.length * 0.9)]!;
  console.log(
    `page: ${s.samples} calls, p50 ${s.p50.toFixed(0)} µs, p90 ${p90.toFixed(0)}, p99 ${s.p99.toFixed(0)} µs`,
  );
  if (floor) {
    const f = summarize(floorSamples);
    const fw = [...floorWaits].sort((a, b) => a - b);
    console.log(
      `floor: p50 ${f.p50.toFixed(0)} µs, p99 ${f.p99.toFixed(0)} µs; its two threads' runqueue wait per call p50 ${fw[fw.length >> 1]!.toFixed(0)} µs, p99 ${fw[Math.floor(fw.length * 0.99)]!.toFixed(0)} µs`,
    );
  }

  // The page's marks, by call (their times fall in a call's window).
  const pageOf = (c: Call) => pageMarks.marks.filter(([, t]) => t >= c.t0 && t <= c.t1);
  const overlaps = (list: [string, number, number][], c: Call) =>
    list.filter(([, a, b]) => a <= c.t1 && b >= c.t0);
  const ckOverlap = (c: Call) => checkpoints.some(([a, b]) => a <= c.t1 && b >= c.t0);
  const first = (ms: Mark[], label: string, after = 0) => ms.find(([l, t]) => l === label && t >= after)?.[1];

  interface Hops {
    toBegin: number;
    commit: number;
    toSend: number;
    wire1: number;
    page: number;
    wire2: number;
    settle: number;
  }
  const hopsOf = (c: Call): Hops | undefined => {
    const begin = first(c.marks, "sql BEGIN");
    const commitEnd = first(c.marks, "sql COMMIT end");
    const send = first(c.marks, "uncork", commitEnd) ?? first(c.marks, "write", commitEnd);
    const pm = pageOf(c);
    const pRead = first(pm, "read", send);
    const pWrite =
      pRead === undefined ? undefined : (first(pm, "uncork", pRead) ?? first(pm, "write", pRead));
    const sRead = first(c.marks, "read", pWrite);
    if ([begin, commitEnd, send, pRead, pWrite, sRead].some((x) => x === undefined)) return undefined;
    return {
      toBegin: begin! - c.t0,
      commit: commitEnd! - begin!,
      toSend: send! - commitEnd!,
      wire1: pRead! - send!,
      page: pWrite! - pRead!,
      wire2: sRead! - pWrite!,
      settle: c.t1 - sRead!,
    };
  };

  const sorted = [...all].sort((a, b) => lat(b) - lat(a));
  const slow = sorted.slice(0, Math.max(1, Math.floor(all.length / 100)));
  const describe = (name: string, group: Call[]) => {
    const n = group.length;
    const share = (f: (c: Call) => boolean) => `${((100 * group.filter(f).length) / n).toFixed(0)}%`;
    const med = (f: (c: Call) => number) => {
      const v = group.map(f).sort((a, b) => a - b);
      return (v[v.length >> 1]! / 1000).toFixed(0);
    };
    const hops = group.map(hopsOf).filter((h): h is Hops => h !== undefined);
    const hmed = (k: keyof Hops) => {
      const v = hops.map((h) => h[k]).sort((a, b) => a - b);
      return v.length ? (v[v.length >> 1]! / 1000).toFixed(0) : "-";
    };
    console.log(
      `${name} (${n}): latency median ${med((c) => c.t1 - c.t0)} µs; server GC ${share((c) => overlaps(gcs, c).length > 0)}, page GC ${share((c) => overlaps(pageMarks.gcs, c).length > 0)}, checkpoint running ${share(ckOverlap)}, server waited >100µs ${share((c) => c.serverWait > 100_000)}, page waited >100µs ${share((c) => c.pageWait > 100_000)}; median server run ${med((c) => c.serverRun)} wait ${med((c) => c.serverWait)}, page run ${med((c) => c.pageRun)} wait ${med((c) => c.pageWait)} µs`,
    );
    console.log(
      `   hops (median µs): to BEGIN ${hmed("toBegin")}, commit ${hmed("commit")}, to send ${hmed("toSend")}, wire ${hmed("wire1")}, page ${hmed("page")}, wire ${hmed("wire2")}, to settled ${hmed("settle")} (${hops.length} with every mark)`,
    );
  };
  // Each slow call's likeliest cause: a collection in either process, a main thread kept off a
  // CPU for a third of the call, the checkpoint thread at work, or else the hop furthest over its median.
  const allHops = all.map(hopsOf).filter((h): h is Hops => h !== undefined);
  const medHop = (k: keyof Hops) => allHops.map((h) => h[k]).sort((a, b) => a - b)[allHops.length >> 1]!;
  const causes = new Map<string, number>();
  for (const c of slow) {
    const l = c.t1 - c.t0;
    let cause: string;
    if (overlaps(gcs, c).length) cause = `server GC (${overlaps(gcs, c)[0]![0]})`;
    else if (overlaps(pageMarks.gcs, c).length) cause = `page GC (${overlaps(pageMarks.gcs, c)[0]![0]})`;
    else if (c.serverWait + c.pageWait > l / 3) cause = "waited for a CPU";
    else {
      const h = hopsOf(c);
      const worst = h
        ? (Object.keys(h) as (keyof Hops)[]).sort((a, b) => h[b] - medHop(b) - (h[a] - medHop(a)))[0]!
        : "marks missing";
      cause = `hop ${worst}${ckOverlap(c) ? " (checkpoint running)" : ""}`;
    }
    causes.set(cause, (causes.get(cause) ?? 0) + 1);
  }
  console.log(
    `slowest 1 % by likeliest cause: ${[...causes]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}`,
  );
  console.log(
    `server GCs ${gcs.length} (${gcs.map(([k]) => k).filter((k) => k === "minor").length} minor), page GCs ${pageMarks.gcs.length}`,
  );
  // Each hop's and each statement's spread over all calls (p50 / p90 / p99 / p99.9, µs).
  const spread = (v: number[]) => {
    v.sort((a, b) => a - b);
    const at = (q: number) => (v[Math.min(v.length - 1, Math.floor(v.length * q))]! / 1000).toFixed(0);
    return `${at(0.5)}/${at(0.9)}/${at(0.99)}/${at(0.999)}`;
  };
  console.log(
    `hops p50/p90/p99/p99.9 µs: ${(["toBegin", "commit", "toSend", "wire1", "page", "wire2", "settle"] as (keyof Hops)[]).map((k) => `${k} ${spread(allHops.map((h) => h[k]))}`).join(", ")}`,
  );
  const stmt = new Map<string, number[]>();
  for (const c of all) {
    const open = new Map<string, number>();
    for (const [label, t] of c.marks) {
      if (!label.startsWith("sql ")) continue;
      if (label.endsWith(" end")) {
        const k = label.slice(4, -4);
        const from = open.get(k);
        if (from !== undefined) stmt.set(k, [...(stmt.get(k) ?? []), t - from]);
      } else open.set(label.slice(4), t);
    }
  }
  console.log(
    `statements p50/p90/p99/p99.9 µs: ${[...stmt].map(([k, v]) => `${k} ${spread(v)}`).join(", ")}`,
  );
  const gcList = (list: [string, number, number][]) => {
    const by = new Map<string, number[]>();
    for (const [k, a, b] of list) by.set(k, [...(by.get(k) ?? []), b - a]);
    return [...by]
      .map(
        ([k, v]) =>
          `${k} ${v.length}x p50 ${spread(v).split("/")[0]} max ${(Math.max(...v) / 1000).toFixed(0)}`,
      )
      .join(", ");
  };
  const during = all.filter(ckOverlap).map((c) => c.t1 - c.t0);
  const outside = all.filter((c) => !ckOverlap(c)).map((c) => c.t1 - c.t0);
  console.log(
    `latency p50/p90/p99/p99.9 µs: calls during a checkpoint (${during.length}) ${spread(during)}, the others (${outside.length}) ${spread(outside)}`,
  );
  console.log(`server GCs: ${gcList(gcs)}; page GCs: ${gcList(pageMarks.gcs)}`);
  describe("all calls", all);
  describe("slowest 1 %", slow);
  console.log(`slowest ${show}:`);
  for (const c of slow.slice(0, show)) {
    const h = hopsOf(c);
    const g = overlaps(gcs, c).map(([k, a, b]) => `${k} ${((b - a) / 1000).toFixed(0)}`);
    const pg = overlaps(pageMarks.gcs, c).map(([k, a, b]) => `${k} ${((b - a) / 1000).toFixed(0)}`);
    const us = (x: number) => (x / 1000).toFixed(0);
    console.log(
      `  ${lat(c).toFixed(0).padStart(6)} µs | srv run ${us(c.serverRun)} wait ${us(c.serverWait)} | page run ${us(c.pageRun)} wait ${us(c.pageWait)} | ${h ? `begin ${us(h.toBegin)} commit ${us(h.commit)} send ${us(h.toSend)} wire ${us(h.wire1)} page ${us(h.page)} wire ${us(h.wire2)} settle ${us(h.settle)}` : `marks ${c.marks.map(([l]) => l).join(",")}`} | gc srv [${g.join(" ")}] page [${pg.join(" ")}]${ckOverlap(c) ? " ckpt" : ""}`,
    );
  }
  console.log(
    `checkpoints: ${checkpoints.length}, median ${((checkpoints.map(([a, b]) => b - a).sort((a, b) => a - b)[checkpoints.length >> 1] ?? 0) / 1000).toFixed(0)} µs`,
  );
} finally {
  await rig.close();
  await floor?.close();
  await page.kill();
  await bench.close();
}
process.exit(0);
