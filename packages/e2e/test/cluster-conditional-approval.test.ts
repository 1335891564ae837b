// A conditional approval (`approval.when`) of a hosted tool whose worker is connected to another
// node than the session's owner (docs/cluster.md, "Workers on any node"): the worker's `when`
// says yes, its `hosted.approval` goes to its node, over the bus to the owner, whose runner asks
// the user; the user's answer comes back the same way. Two nodes of a cluster in this process (one
// MemoryStore with its leases, an in-process bus), a real Dispatch worker and a real Client.
import { Client } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { createServer, MemoryBusHub, MemoryStore, type PatchbayServer, silentLogger } from "@patchbay/server";
import { Tools } from "@patchbay/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const apiKey = "pk_cluster_approval";
const secret = "sk_cluster_approval_secret_0123456789abcdef";
const runs: number[] = [];
let owner: PatchbayServer;
let workerNode: PatchbayServer;
let dispatch: Dispatch;
const clients: Client[] = [];

beforeAll(async () => {
  const store = new MemoryStore();
  const hub = new MemoryBusHub();
  const node = (nodeId: string) =>
    createServer({
      port: 0,
      store,
      apiKey,
      secret,
      env: {},
      logger: silentLogger,
      agents: {
        support: {
          model: {
            provider: "scripted",
            rules: [
              {
                match: "^pay (?<amount>\\d+)",
                toolCalls: [{ tool: "pay", arguments: { amount: "{amount:integer}" } }],
                reply: "Done: {result}",
                errorReply: "Failed: {result}",
              },
            ],
          },
        },
      },
      cluster: { bus: hub.connect(), nodeId, leaseTtlMs: 60_000, heartbeatIntervalMs: 50 },
    });
  owner = await node("n_owner");
  workerNode = await node("n_worker");
  dispatch = new Dispatch({ url: workerNode.url, apiKey, secret, env: {} });
  dispatch.host(
    "support",
    new Tools().register<{ amount: number }>({
      name: "pay",
      description: "Pay an invoice",
      parameters: { type: "object", properties: { amount: { type: "integer" } }, required: ["amount"] },
      approval: { title: "Pay {amount}?", when: ({ amount }) => amount > 100 },
      run: ({ amount }) => {
        runs.push(amount);
        return `paid ${amount}`;
      },
    }),
  );
  const ready = new Promise((resolve) => dispatch.once("ready", resolve));
  void dispatch.run();
  await ready;
  // The owner hears of the worker's tools from its node's heartbeats.
  for (let i = 0; i < 200 && !owner.cluster!.remoteHosted().get("n_worker")?.support?.length; i++)
    await new Promise((r) => setTimeout(r, 10));
}, 30_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await dispatch?.stop({ timeoutMs: 1_000 });
  await owner?.close();
  await workerNode?.close();
});

async function session() {
  const client = new Client({ baseUrl: owner.url, apiKey, secret, requestTimeoutMs: 10_000 });
  clients.push(client);
  return client.agent("support").sessions.create({ userId: "u_1" });
}

describe("a conditional approval asked by a worker on another node than the session's owner", () => {
  it("reaches the owner's user, and the call runs once they allow it", async () => {
    runs.length = 0;
    const s = await session();
    const asked: string[] = [];
    s.on("approval", (request) => {
      asked.push(request.title);
      void s.decide(request.id, { allowed: true });
    });
    expect((await s.responses.create("pay 500")).text).toBe("Done: paid 500");
    expect(asked).toEqual(["Pay 500?"]);
    expect(runs).toEqual([500]);
    // The session never loaded on the worker's node: its owner asked.
    expect(workerNode.sessions.loaded()).toEqual([]);
  });

  it("does not run a call the user declines, and runs one `when` lets through without asking", async () => {
    runs.length = 0;
    const s = await session();
    s.on("approval", (request) => void s.decide(request.id, { allowed: false, reason: "too much" }));
    const declined = await s.responses.create("pay 900");
    expect(declined.text).toMatch(/^Failed: /);
    expect(declined.text).toContain("too much");
    expect((await s.responses.create("pay 20")).text).toBe("Done: paid 20");
    expect(runs).toEqual([20]);
  });
});
