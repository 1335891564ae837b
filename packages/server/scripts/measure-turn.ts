// Measures whole turns with a long scripted reply (one text.delta per word), to see what the
// event log's per-delta transactions cost. Run from the repository root after building the
// server's dependencies:
//   node --import ./packages/protocol/node_modules/tsx/dist/esm/index.mjs packages/server/scripts/measure-turn.ts [words] [turns]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createServer, silentLogger } from "../src/index";

const words = Number(process.argv[2] ?? 2_000);
const turns = Number(process.argv[3] ?? 15);
const dataDir = mkdtempSync(join(tmpdir(), "patchbay-measure-"));
const server = await createServer({
  port: 0,
  dataDir,
  apiKey: "pk_measure",
  secret: "sk_measure",
  logger: silentLogger,
  env: {},
  dispatch: false,
  agents: {
    long: {
      model: { provider: "scripted", rules: [{ match: ".", reply: "word ".repeat(words).trim() }] },
    },
  },
});
const principal = { kind: "backend" } as const;
const times: number[] = [];
let deltas = 0;
try {
  for (let i = 0; i < turns + 2; i++) {
    // A fresh session per turn: the conversation stays short, so the turn is the reply.
    const info = await server.sessions.create(principal, "long", { userId: "u_measure" });
    const { live, release } = await server.sessions.acquire(principal, info.id);
    let seen = 0;
    // A subscriber, as an attached socket would be: every event is broadcast to it.
    const detach = live.runtime.subscribe((event) => {
      if (event.type === "text.delta") seen += 1;
    });
    const started = performance.now();
    await live.sendMessage({ commandId: `c_${i}`, text: "go", sender: "backend" });
    await live.idle();
    const elapsed = performance.now() - started;
    detach();
    release();
    if (i >= 2) {
      times.push(elapsed); // the first two warm up the JIT and SQLite's caches
      deltas = seen;
    }
  }
} finally {
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)]!;
console.log(
  JSON.stringify({
    words,
    turns,
    deltasPerTurn: deltas,
    medianMs: Number(median.toFixed(1)),
    minMs: Number(times[0]!.toFixed(1)),
    maxMs: Number(times.at(-1)!.toFixed(1)),
    medianUsPerDelta: Number(((median * 1000) / Math.max(deltas, 1)).toFixed(1)),
  }),
);
