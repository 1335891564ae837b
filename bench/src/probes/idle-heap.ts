// Probe: what one idle session holds in the server's heap, by object (scenario 5). Runs the bench
// server in its own process (--expose-gc), opens `--warm` sessions (so lazily made, shared things
// exist), takes a heap snapshot after a full GC, opens `--sessions` more the way scenario 5 does
// (one `@patchbay/client`, one socket, one open session each), takes another, and prints the
// objects that are in the second snapshot and not the first (V8 keeps object ids across snapshots
// of one process), less those that went away, grouped by constructor or type, per session.
// Strings are also grouped by content with ids masked (`#`), so copies of one id show up as
// a count above 1, and each top group lists what holds it (`Holder.edge`). `--raw` does the same
// for scenario 5's baseline (a bare `ws` server and bare sockets), to tell ws's and Node's share.
// `--spaces` takes no snapshot: it prints, per session, the RSS and each V8 space's used and
// committed bytes (RSS counts committed pages, so a young generation that grew shows there, and
// what is not in any space is memory outside V8's heap: sockets' native state, buffers, malloc).
//   node --import tsx src/probes/idle-heap.ts [--sessions 1000] [--warm 50] [--top 40] [--holders 3] [--raw] [--keep]
//   node --import tsx src/probes/idle-heap.ts --spaces [--sessions 5000] [--raw]
// The snapshots go to a temp dir, removed at the end unless --keep (open them in DevTools).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import WebSocket from "ws";
import { spawnPeer } from "../children";
import { BENCH_API_KEY, BENCH_SECRET } from "../credentials";
import { BENCH_AGENT, BENCH_USER } from "../lookup-order";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const sessions = arg("sessions", 1000);
const warm = arg("warm", 50);
const top = arg("top", 40);
const keep = process.argv.includes("--keep");
const holdersShown = arg("holders", 3);
const raw = process.argv.includes("--raw");
const spacesOnly = process.argv.includes("--spaces");

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** The group an object is counted in: its constructor for objects, else its V8 type. */
function groupOf(type: string, name: string): string {
  if (type === "object") return name;
  if (type === "closure") return `closure ${name || "(anonymous)"}`;
  if (
    type === "array" ||
    type === "hidden" ||
    type === "native" ||
    type === "object shape" ||
    type === "code"
  )
    return `(${type} ${name.replace(/\d+/g, "#").slice(0, 60)})`;
  return `(${type})`;
}

const STRING_TYPES = new Set(["string", "concatenated string", "sliced string"]);
/** A string's content with anything that looks like an id (8+ id characters with a digit) masked. */
const masked = (s: string) =>
  JSON.stringify(s.slice(0, 80).replace(/[A-Za-z0-9_-]{8,}/g, (m) => (/\d/.test(m) ? "#" : m)));

function load(file: string): Snapshot {
  return JSON.parse(readFileSync(file, "utf8")) as Snapshot;
}

/** Node ids of a snapshot. */
function ids(s: Snapshot): Set<number> {
  const f = s.snapshot.meta.node_fields;
  const width = f.length;
  const id = f.indexOf("id");
  const out = new Set<number>();
  for (let i = 0; i < s.nodes.length; i += width) out.add(s.nodes[i + id]!);
  return out;
}

interface Tally {
  count: number;
  bytes: number;
  holders: Map<string, number>;
}

function tallyInto(map: Map<string, Tally>, key: string, bytes: number, sign: number): Tally {
  let t = map.get(key);
  if (!t) {
    t = { count: 0, bytes: 0, holders: new Map() };
    map.set(key, t);
  }
  t.count += sign;
  t.bytes += sign * bytes;
  return t;
}

/** Objects of `s` whose ids are not in `other`, tallied with `sign`, by group and by string. */
function tally(
  s: Snapshot,
  other: Set<number>,
  sign: number,
  groups: Map<string, Tally>,
  strings: Map<string, Tally>,
) {
  const { node_fields: f, node_types, edge_fields: ef, edge_types } = s.snapshot.meta;
  const width = f.length;
  const [fType, fName, fId, fSize, fEdges] = ["type", "name", "id", "self_size", "edge_count"].map((n) =>
    f.indexOf(n),
  ) as [number, number, number, number, number];
  const ewidth = ef.length;
  const [eType, eName, eTo] = ["type", "name_or_index", "to_node"].map((n) => ef.indexOf(n)) as [
    number,
    number,
    number,
  ];
  const types = node_types[0];
  const etypes = edge_types[0];
  const keyOf = new Map<number, [string, string | undefined]>();
  for (let i = 0, edge = 0; i < s.nodes.length; i += width) {
    const firstEdge = edge;
    edge += s.nodes[i + fEdges]! * ewidth;
    if (other.has(s.nodes[i + fId]!)) continue;
    const type = types[s.nodes[i + fType]!]!;
    const name = s.strings[s.nodes[i + fName]!]!;
    const bytes = s.nodes[i + fSize]!;
    let group = groupOf(type, name);
    // Plain objects by their property names, so one literal's shape is told from another's.
    if (type === "object" && name === "Object") {
      const props: string[] = [];
      for (let e = firstEdge; e < edge; e += ewidth)
        if (etypes[s.edges[e + eType]!] === "property") props.push(s.strings[s.edges[e + eName]!]!);
      group = `Object {${props.slice(0, 8).join(",")}${props.length > 8 ? ",…" : ""}}`;
    }
    tallyInto(groups, group, bytes, sign);
    let str: string | undefined;
    if (STRING_TYPES.has(type)) {
      str = `${type === "string" ? "" : `(${type}) `}${masked(name)}`;
      tallyInto(strings, str, bytes, sign);
    }
    keyOf.set(i, [group, str]);
  }
  if (sign < 0) return;
  // Who holds the new objects: the holder's group and the edge's name.
  let edge = 0;
  for (let i = 0; i < s.nodes.length; i += width) {
    const n = s.nodes[i + fEdges]!;
    const holder = groupOf(types[s.nodes[i + fType]!]!, s.strings[s.nodes[i + fName]!]!);
    // (`Object` holders are not split by shape here.)
    for (let e = 0; e < n; e++, edge += ewidth) {
      const to = s.edges[edge + eTo]!;
      const target = keyOf.get(to);
      if (!target) continue;
      const et = etypes[s.edges[edge + eType]!]!;
      if (et === "weak") continue;
      const nameOrIndex = s.edges[edge + eName]!;
      const label = et === "element" || et === "hidden" ? `[${et}]` : s.strings[nameOrIndex]!;
      const via = `${holder}.${label}`;
      for (const key of target) {
        if (key === undefined) continue;
        const t = (key === target[0] ? groups : strings).get(key)!;
        t.holders.set(via, (t.holders.get(via) ?? 0) + 1);
      }
    }
  }
}

function print(title: string, map: Map<string, Tally>, per: number, limit: number) {
  const rows = [...map].filter(([, t]) => t.count / per >= 0.05).sort((a, b) => b[1].bytes - a[1].bytes);
  const total = rows.reduce((sum, [, t]) => sum + t.bytes, 0);
  console.log(
    `\n${title}: ${(total / per).toFixed(0)} B per session (groups with at least 0.05 per session)`,
  );
  console.log(`${"per session".padStart(11)} ${"bytes".padStart(7)}  group  ← held by (edges per session)`);
  for (const [key, t] of rows.slice(0, limit)) {
    const holders = [...t.holders]
      .sort((a, b) => b[1] - a[1])
      .slice(0, holdersShown)
      .map(([via, n]) => `${via} ${(n / per).toFixed(1)}`)
      .join(", ");
    console.log(
      `${(t.count / per).toFixed(2).padStart(11)} ${(t.bytes / per).toFixed(0).padStart(7)}  ${key}  ← ${holders}`,
    );
  }
}

const dir = mkdtempSync(join(tmpdir(), "patchbay-bench-idle-heap-"));
const server = await spawnPeer<{ url: string }>(raw ? "raw-ws-idle" : "server-process", {
  execArgv: ["--expose-gc"],
  timeoutMs: 60_000,
});
const clients: { close(): void }[] = [];
const open = async (count: number) => {
  let left = count;
  const lane = async () => {
    while (left-- > 0) {
      if (raw) {
        const ws = new WebSocket(server.ready.url, { perMessageDeflate: false });
        clients.push({ close: () => ws.terminate() });
        await new Promise<void>((resolve, reject) => {
          ws.once("open", () => resolve());
          ws.once("error", reject);
        });
        continue;
      }
      const client = new Client({ baseUrl: server.ready.url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
      clients.push(client);
      await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id });
    }
  };
  await Promise.all(Array.from({ length: 32 }, lane));
};
type Memory = { heapUsed: number };
interface Spaces {
  rss: number;
  /** Memory outside the heap that V8 knows of (ArrayBuffers, Buffers, what addons report). */
  external: number;
  spaces: { space_name: string; space_used_size: number; physical_space_size: number }[];
}
try {
  if (spacesOnly) {
    await open(warm);
    const before = await server.request<Spaces>({ type: "heap-spaces" });
    await open(sessions);
    const after = await server.request<Spaces>({ type: "heap-spaces" });
    const per = (a: number, b: number) => `${((b - a) / sessions).toFixed(0).padStart(7)} B`;
    console.log(`${sessions} idle sessions after ${warm} warm-up ones, per session: used, committed`);
    let committed = 0;
    for (const space of after.spaces) {
      const was = before.spaces.find((s) => s.space_name === space.space_name)!;
      committed += space.physical_space_size - was.physical_space_size;
      console.log(
        `${space.space_name.padEnd(28)} ${per(was.space_used_size, space.space_used_size)} ${per(was.physical_space_size, space.physical_space_size)}`,
      );
    }
    console.log(`${"RSS".padEnd(28)} ${per(before.rss, after.rss)}`);
    console.log(`${"RSS outside V8's spaces".padEnd(28)} ${per(0, after.rss - before.rss - committed)}`);
    console.log(`${"  of it external (buffers)".padEnd(28)} ${per(before.external, after.external)}`);
  } else {
    await snapshots();
  }
} finally {
  for (const client of clients) client.close();
  await server.kill();
  if (!keep) rmSync(dir, { recursive: true, force: true });
}

async function snapshots(): Promise<void> {
  await open(warm);
  const m0 = await server.request<Memory>({ type: "memory" });
  const a = (
    await server.request<{ file: string }>(
      { type: "heap-snapshot", file: join(dir, "a.heapsnapshot") },
      120_000,
    )
  ).file;
  await open(sessions);
  const m1 = await server.request<Memory>({ type: "memory" });
  const b = (
    await server.request<{ file: string }>(
      { type: "heap-snapshot", file: join(dir, "b.heapsnapshot") },
      120_000,
    )
  ).file;
  const kib = (n: number) => `${(n / 1024).toFixed(2)} KiB`;
  console.log(
    `${sessions} idle sessions after ${warm} warm-up ones: heapUsed ${kib((m1.heapUsed - m0.heapUsed) / sessions)} ` +
      "per session (process.memoryUsage after a full GC; for RSS run scenario 5: writing a snapshot grows it)",
  );
  const sa = load(a);
  const sb = load(b);
  const groups = new Map<string, Tally>();
  const strings = new Map<string, Tally>();
  tally(sb, ids(sa), 1, groups, strings);
  tally(sa, ids(sb), -1, groups, strings);
  print("new objects by group", groups, sessions, top);
  print("new strings by content", strings, sessions, Math.min(top, 25));
  if (keep) console.log(`\nsnapshots: ${a} ${b}`);
}
