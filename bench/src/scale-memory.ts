// Scenario 5a: memory per idle connected session. The server runs in its own process (with
// --expose-gc); the sessions' clients run here, one `@patchbay/client` (one socket) per session,
// each with one open session and nothing else happening. The server's RSS and heap are read after
// a full GC before any session and after each count; the delta over the count is the cost of
// one idle session. Baseline: a bare `ws` server holding the same number of idle sockets.
import { Client } from "@patchbay/client";
import WebSocket from "ws";
import { spawnPeer } from "./children";
import { BENCH_API_KEY, BENCH_SECRET } from "./credentials";
import { ISSUE_20_GOALS } from "./goals";
import { BENCH_AGENT, BENCH_USER } from "./lookup-order";
import { goalCell, type Scenario } from "./scenario";
import { formatBytes, formatRatio } from "./stats";
import type { Row } from "./table";

interface Memory {
  rss: number;
  heapUsed: number;
}

/** Runs `open(i)` for i in [from, to) with `concurrency` at a time. */
async function openMany(
  from: number,
  to: number,
  concurrency: number,
  open: (i: number) => Promise<void>,
): Promise<void> {
  let next = from;
  const lane = async () => {
    while (next < to) await open(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

const measure = (count: number) =>
  `memory per idle session, ${count.toLocaleString("en-US")} sessions: RSS / heap`;

export const scaleMemoryScenario: Scenario = {
  id: "5 scale: idle sessions",
  measures: (budget) => budget.sessionCounts.map(measure),
  async run({ budget }) {
    const counts = [...budget.sessionCounts].sort((a, b) => a - b);
    const server = await spawnPeer<{ url: string }>("server-process", { execArgv: ["--expose-gc"] });
    const raw = await spawnPeer<{ url: string }>("raw-ws-idle", { execArgv: ["--expose-gc"] });
    const clients: Client[] = [];
    const sockets: WebSocket[] = [];
    try {
      const subject = await perConnection(
        counts,
        () => server.request<Memory>({ type: "memory" }),
        (from, to) =>
          openMany(from, to, 32, async () => {
            const client = new Client({
              baseUrl: server.ready.url,
              apiKey: BENCH_API_KEY,
              secret: BENCH_SECRET,
            });
            clients.push(client);
            await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id });
          }),
      );
      const loaded = await server.request<{ loaded: number }>({ type: "sessions" });
      if (loaded.loaded !== counts.at(-1))
        throw new Error(`server holds ${loaded.loaded} sessions, expected ${counts.at(-1)}`);
      for (const client of clients.splice(0)) client.close();
      const baseline = await perConnection(
        counts,
        () => raw.request<Memory>({ type: "memory" }),
        (from, to) =>
          openMany(from, to, 32, async () => {
            const ws = new WebSocket(raw.ready.url, { perMessageDeflate: false });
            sockets.push(ws);
            await new Promise<void>((resolve, reject) => {
              ws.once("open", () => resolve());
              ws.once("error", reject);
            });
          }),
      );
      return counts.map((count, i): Row => {
        const s = subject[i]!;
        const b = baseline[i]!;
        const row: Row = {
          scenario: scaleMemoryScenario.id,
          measure: measure(count),
          subject: `${formatBytes(s.rss)} / ${formatBytes(s.heapUsed)}`,
          baseline: `idle raw ws socket: ${formatBytes(b.rss)} / ${formatBytes(b.heapUsed)}`,
          ratio: `${formatRatio(s.rss / b.rss)} / ${formatRatio(s.heapUsed / b.heapUsed)}`,
        };
        // Issue 20's goal is the RSS at the largest count (5,000 sessions in a full run).
        if (i === counts.length - 1) {
          const limit = ISSUE_20_GOALS.idleRssBytes;
          row.target = goalCell([[`RSS <= ${formatBytes(limit)}`, s.rss <= limit]]);
        }
        return row;
      });
    } finally {
      for (const client of clients) client.close();
      for (const ws of sockets) ws.terminate();
      await server.kill();
      await raw.kill();
    }
  },
};

/** Memory per connection at each count, from a reading before any connection. */
async function perConnection(
  counts: number[],
  read: () => Promise<Memory>,
  open: (from: number, to: number) => Promise<void>,
): Promise<Memory[]> {
  const before = await read();
  const results: Memory[] = [];
  let opened = 0;
  for (const count of counts) {
    await open(opened, count);
    opened = count;
    const after = await read();
    results.push({
      rss: (after.rss - before.rss) / count,
      heapUsed: (after.heapUsed - before.heapUsed) / count,
    });
  }
  return results;
}
