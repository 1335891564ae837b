import { Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { CreateServerOptions, PatchbayServer } from "./create-server";
import { createLogger } from "./observability/logger";
import { MemoryStore } from "./store/memory-store";
import { startServerForTest } from "./testing/test-server";
import { TestWorkerSocket } from "./testing/test-worker-socket";

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
    // Production needs a place for data; development keeps sessions in memory (config/server-credentials.test.ts).
    await expect(start({ dataDir: undefined, mode: "production", secret: "s".repeat(32) })).rejects.toThrow(
      /dataDir \(SQLite\), databaseUrl \(Postgres\) or a store/,
    );
    await expect(start({ dataDir: undefined, databaseUrl: "mysql://db/x" })).rejects.toThrow(/postgres:\/\//);
  });

  it("logs a server tool that threw at warn with its stack, call id and session id", async () => {
    const lines: string[] = [];
    const tools = new Tools().register({
      name: "explode",
      description: "Always fails",
      run: () => {
        throw new RangeError("the index is out of range");
      },
    });
    const server = await start({
      tools,
      logger: createLogger({ level: "warn", write: (line) => lines.push(line) }),
      agents: {
        support: {
          model: {
            provider: "scripted",
            rules: [{ match: "go", tool_calls: [{ tool: "explode" }], reply: "done" }],
          },
        } as never,
      },
    });
    const headers = {
      "x-api-key": "pk_test",
      authorization: "Bearer sk_test",
      "content-type": "application/json",
    };
    const created = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ userId: "u_1" }),
    });
    const { id } = (await created.json()) as { id: string };
    await fetch(`${server.url}/v1/sessions/${id}/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify({ commandId: "c_1", text: "go" }),
    });
    const deadline = Date.now() + 5_000;
    let entry: Record<string, any> | undefined;
    while (!entry && Date.now() < deadline) {
      entry = lines.map((line) => JSON.parse(line)).find((line) => line.msg === "tool explode threw");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(entry).toMatchObject({ level: "warn", tool: "explode", sessionId: id });
    expect(entry!.callId).toEqual(expect.any(String));
    expect(entry!.error.stack).toContain("RangeError: the index is out of range");
  });
});
