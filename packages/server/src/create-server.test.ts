import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { CreateServerOptions, PatchbayServer } from "./create-server";
import { TestWorkerSocket } from "./dispatch/test-worker-socket";
import { MemoryStore } from "./memory-store";
import { startServerForTest } from "./test-server";

const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(options: Partial<CreateServerOptions> = {}): Promise<PatchbayServer> {
  const { server, close } = await startServerForTest(options);
  cleanups.push(close);
  return server;
}

describe("createServer", () => {
  it("takes workers on /v1/worker without being given the dispatch module", async () => {
    const server = await start();
    const worker = await TestWorkerSocket.connect(server.url);
    cleanups.push(() => worker.drop());
    expect((await worker.next("worker.ready")).type).toBe("worker.ready");
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/patchbay_workers_connected 1/);
    // The inbound routes come with it.
    const inbound = await fetch(`${server.url}/v1/agents/support/inbound/calls`, { method: "GET" });
    expect(inbound.status).toBe(405);
  });

  it("answers 404 on /v1/worker and the inbound routes with `dispatch: false`", async () => {
    const server = await start({ dispatch: false });
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/worker`);
    const status = await new Promise<number | undefined>((resolve) => {
      ws.once("unexpected-response", (_req, res) => resolve(res.statusCode));
      ws.once("open", () => resolve(undefined));
      ws.once("error", () => resolve(undefined));
    });
    ws.terminate();
    expect(status).toBe(404);
    const inbound = await fetch(`${server.url}/v1/agents/support/inbound/calls`, { method: "GET" });
    expect(inbound.status).toBe(404);
  });

  it("serves sessions from a MemoryStore given in code, and picks the store in one documented order", async () => {
    const store = new MemoryStore();
    const server = await start({ store, dataDir: undefined });
    expect(server.store).toBe(store);
    const created = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": "pk_test",
        authorization: "Bearer sk_test",
      },
      body: JSON.stringify({ userId: "u_1" }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    expect((await store.getSession(id))?.userId).toBe("u_1");
    await expect(start({ dataDir: undefined })).rejects.toThrow(
      /dataDir \(SQLite\), databaseUrl \(Postgres\) or a store/,
    );
    await expect(start({ dataDir: undefined, databaseUrl: "mysql://db/x" })).rejects.toThrow(/postgres:\/\//);
  });
});
