import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import type Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestNats, type TestNats } from "../../server/src/testing/nats-server";
import { startTestPostgres, type TestPostgres } from "../../server/src/testing/postgres-server";
import { API_KEY, openWorkerDb, SECRET, WorkerProcess } from "../fixtures/dispatch-harness";
import { type CliServer, clusterNodeEnv, startCli } from "./helpers/cli-process";
import { RawClient } from "./helpers/raw-client";

// A `@patchbay/client` on a node that does not own its session, when the owner dies mid-turn
// (docs/cluster.md, "When the owner is gone"): three `patchbay serve --nats-url` processes on one
// real PostgreSQL and one real nats-server, a session node A owns, a worker hosting its tool on
// node C, the client on node B. A is killed with SIGKILL while the tool runs. B tells the client
// the session moved; the client attaches it again by itself, and the reply it waits for completes
// from the events of the node that took the turn over: the promise settles, it does not hang.
const LEASE_TTL_MS = 3_000;
// B notices A is gone after three missed heartbeats (2 s each, ~6 s), the lease has expired by
// then (3 s), the new owner delivers the call again and the tool takes TOOL_DELAY_MS: the reply
// comes ~10 s after the kill on a quiet machine. The bound leaves room for a loaded CI machine.
const TOOL_DELAY_MS = 2_000;
const REPLY_BOUND_MS = 30_000;

let pg: TestPostgres;
let nats: TestNats;
let root: string;
const nodes: CliServer[] = [];
let worker: WorkerProcess | undefined;
let db: Database.Database;

const AGENT = `name: Support
instructions: You help with orders.
model:
  provider: scripted
  rules:
    - match: 'where is order (?<amount>\\d+)'
      toolCalls:
        - tool: record_payment
          arguments:
            amount: "{amount:integer}"
      reply: "Found: {results.record_payment}"
`;

beforeAll(async () => {
  [pg, nats] = await Promise.all([startTestPostgres(), startTestNats()]);
  root = mkdtempSync(join(tmpdir(), "patchbay-cluster-client-"));
  mkdirSync(join(root, "config", "agents"), { recursive: true });
  writeFileSync(join(root, "config", "agents", "support.yaml"), AGENT);
  const shared = { databaseUrl: pg.url, natsUrl: nats.url, leaseTtlMs: LEASE_TTL_MS };
  const env = clusterNodeEnv({ root, apiKey: API_KEY, secret: SECRET, ...shared });
  for (let i = 0; i < 3; i++) nodes.push(await startCli(["serve"], env));
  const opened = openWorkerDb(root);
  const dbPath = opened.dbPath;
  db = opened.db;
  worker = new WorkerProcess(
    { id: "w_c", db: dbPath, hostTools: true, toolDelayMs: TOOL_DELAY_MS },
    nodes[2]!.url,
  );
  await worker.waitFor("ready", (e) => e.reconnected === false);
  // Every node learns of the worker's tools from its node's heartbeats (every 2 s).
  await new Promise((r) => setTimeout(r, 4_500));
}, 90_000);

afterAll(async () => {
  await worker?.kill("SIGKILL");
  db?.close();
  for (const node of nodes)
    if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill("SIGKILL");
  await Promise.all(nodes.map((node) => node.exited));
  await nats?.stop();
  await pg?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe("a client on a node that does not own its session (3 patchbay serve processes)", () => {
  it("gets its reply when the owner is killed mid-turn: it attaches the session again and the reply completes", async () => {
    const [a, b] = [nodes[0]!, nodes[1]!];
    // Node A owns the session: it created it, and a page there keeps it loaded.
    const page = await RawClient.open(a.wsUrl, { kind: "api_key", apiKey: API_KEY, secret: SECRET });
    const sessionId = await page.create("support", { userId: "u_orders" });
    const client = new Client({ baseUrl: b.url, apiKey: API_KEY, secret: SECRET, requestTimeoutMs: 10_000 });
    try {
      const session = await client.agent("support").sessions.resume(sessionId);
      const closed: unknown[] = [];
      session.on("closed", (reason) => closed.push(reason));
      const response = session.responses.create("where is order 19");
      // Mid-turn: the tool runs on the worker (node C) for TOOL_DELAY_MS.
      await worker!.waitFor("effect", () => true, 15_000);
      a.child.kill("SIGKILL");
      const killedAt = Date.now();
      await a.exited;
      await page.close();

      const outcome = await Promise.race([
        response.then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        ),
        new Promise<{ hung: true }>((r) => setTimeout(() => r({ hung: true }), REPLY_BOUND_MS)),
      ]);
      const tookMs = Date.now() - killedAt;
      expect(outcome).toMatchObject({
        result: { text: expect.stringMatching(/^Found: payment of 19 recorded by w_c/), reason: "stop" },
      });
      console.log(`cluster client failover: the reply completed ${tookMs} ms after the owner's kill -9`);
      // The tool's side effect happened once; the session stayed open for the client.
      const effects = db.prepare("SELECT amount FROM effects").all();
      expect(effects).toEqual([{ amount: 19 }]);
      expect(closed).toEqual([]);
      expect(session.closed).toBe(false);
      // And it goes on: the next message is answered through B.
      const next = await session.responses.create("where is order 20");
      expect(next.text).toMatch(/^Found: payment of 20 recorded by w_c/);
    } finally {
      client.close();
    }
  }, 90_000);
});
