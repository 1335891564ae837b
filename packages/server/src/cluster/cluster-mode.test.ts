import { PROTOCOL_VERSION, type ServerToClientFrame } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";
import { MemoryStore } from "../store/memory-store";
import { startTestNats, type TestNats } from "../testing/nats-server";
import type { Bus } from "./bus";
import { type MemoryBus, MemoryBusHub } from "./memory-bus";
import { NatsBus } from "./nats-bus";

// Two nodes of a cluster in this process, on one MemoryStore (its leases) and an in-process bus:
// the relay of a client on the node that does not own its session, what a node does when it
// loses a session's lease, and /readyz. The same over real processes, Postgres and NATS is
// packages/e2e/test/cluster-failover.test.ts.
const servers: PatchbayServer[] = [];
const natsBuses: NatsBus[] = [];
let nats: TestNats | undefined;
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const bus of natsBuses.splice(0)) await bus.close();
});
afterAll(async () => {
  await nats?.stop();
});

let now = 1_000_000;
/** Two nodes on the in-process bus, or with `overNats` on a real nats-server (1 MiB max_payload). */
async function twoNodes(overNats = false, heartbeatIntervalMs = 50) {
  const store = new MemoryStore({ now: () => now });
  const hub = new MemoryBusHub();
  const buses = new Map<string, MemoryBus>();
  if (overNats) nats ??= await startTestNats();
  const node = async (nodeId: string) => {
    let bus: Bus;
    if (overNats) {
      const natsBus = await NatsBus.connect({ url: nats!.url });
      natsBuses.push(natsBus);
      bus = natsBus;
    } else {
      const memoryBus = hub.connect();
      buses.set(nodeId, memoryBus);
      bus = memoryBus;
    }
    const server = await createServer({
      port: 0,
      store,
      apiKey: "pk_test",
      secret: "sk_test",
      logger: silentLogger,
      env: {},
      agents: {
        support: {
          model: {
            provider: "scripted",
            rules: [
              { match: "hello", reply: "Hi there." },
              { match: "refund", toolCalls: [{ tool: "refund", arguments: {} }], reply: "Refund: {result}" },
            ],
          },
        },
      },
      tools: new Tools().register({
        name: "refund",
        description: "Refund the order",
        approval: { title: "Refund the order?" },
        run: () => "refunded",
      }),
      cluster: { bus, nodeId, leaseTtlMs: 60_000, heartbeatIntervalMs },
    });
    servers.push(server);
    return server;
  };
  const a = await node("n_a");
  const b = await node("n_b");
  return { store, a, b, buses };
}

class Peer {
  readonly frames: ServerToClientFrame[] = [];
  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => this.frames.push(JSON.parse(String(data)) as ServerToClientFrame));
  }
  static async open(server: PatchbayServer): Promise<Peer> {
    const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/client`);
    await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
    const peer = new Peer(ws);
    peer.send({
      type: "hello",
      protocol: PROTOCOL_VERSION,
      auth: { kind: "api_key", apiKey: "pk_test", secret: "sk_test" },
    });
    await peer.next((f) => f.type === "welcome");
    return peer;
  }
  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }
  async next(test: (f: ServerToClientFrame) => boolean, timeoutMs = 3_000): Promise<ServerToClientFrame> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(test);
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`no such frame; got ${this.frames.map((f) => f.type).join(", ")}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  close(): void {
    this.ws.close();
  }
}

/** A client on `node` and the session it created there (so `node` owns it). */
async function openSession(node: PatchbayServer): Promise<{ owner: Peer; sessionId: string }> {
  const owner = await Peer.open(node);
  owner.send({ type: "session.create", requestId: "c", agent: "support", userId: "u_1" });
  const opened = await owner.next((f) => f.type === "session.opened");
  return { owner, sessionId: opened.type === "session.opened" ? opened.session.id : "" };
}

/** A new client on `node` resumes `sessionId`: the first error it hears, and after how long. */
async function resumeThrough(node: PatchbayServer, sessionId: string) {
  const relayed = await Peer.open(node);
  const asked = Date.now();
  relayed.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0 });
  const reply = await relayed.next((f) => f.type === "error");
  return { relayed, reply, ms: Date.now() - asked };
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

describe("cluster mode (createServer({ cluster }))", () => {
  it("serves a client on the other node through the session's owner, and tells it when the owner lost the session", async () => {
    const { store, a, b } = await twoNodes();
    await until(() => a.cluster!.isAlive("n_b") && b.cluster!.isAlive("n_a"));
    const { owner, sessionId } = await openSession(a);
    expect(await store.leases.get(sessionId)).toMatchObject({ nodeId: "n_a", token: 1 });

    const relayed = await Peer.open(b);
    relayed.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0 });
    await relayed.next((f) => f.type === "session.opened");
    relayed.send({ type: "message.send", sessionId, commandId: "m_1", text: "hello" });
    const done = await relayed.next((f) => f.type === "response.completed");
    expect(done).toMatchObject({ text: "Hi there.", sessionId });
    // One writer: the session never loaded on n_b, and both clients saw the same events.
    expect(b.sessions.loaded()).toEqual([]);
    await owner.next((f) => f.type === "response.completed");
    const seqs = (peer: Peer) => peer.frames.filter((f) => "seq" in f).map((f) => (f as { seq: number }).seq);
    expect(seqs(relayed)).toEqual(seqs(owner));

    // n_a froze past its lease; another node took the session: n_a's next renewal finds it lost.
    now += 120_000;
    expect(await store.leases.acquire(sessionId, "n_x", 60_000)).toMatchObject({ acquired: true, token: 2 });
    await a.sessions.owned!.renewAll();
    for (const peer of [owner, relayed]) {
      expect(await peer.next((f) => f.type === "error")).toMatchObject({
        code: "unavailable",
        sessionId,
        message: expect.stringMatching(/moved to another node/),
      });
    }
    expect(a.sessions.loaded()).toEqual([]);
    // What /metrics says of it: the claim and the loss on n_a, the peer it hears, a bus round trip.
    let metrics = "";
    for (let i = 0; i < 100 && !/patchbay_cluster_bus_round_trip_seconds_count [1-9]/.test(metrics); i++) {
      await new Promise((r) => setTimeout(r, 30));
      metrics = await (await fetch(`${a.url}/metrics`)).text();
    }
    expect(metrics).toMatch(/patchbay_cluster_lease_events_total\{event="claimed"\} 1\b/);
    expect(metrics).toMatch(/patchbay_cluster_lease_events_total\{event="lost"\} 1\b/);
    expect(metrics).toMatch(/patchbay_cluster_peers 1\b/);
    expect(metrics).toMatch(/patchbay_cluster_bus_connected 1\b/);
    expect(metrics).toMatch(/patchbay_cluster_bus_round_trip_seconds_count [1-9]/);
    owner.close();
    relayed.close();
  });

  it("relays a message, its events and an HTTP answer larger than NATS' max_payload between nodes over a real nats-server", async () => {
    // Megabytes through NATS, SQLite and JSON on a loaded machine can hold either node's event
    // loop past three 50 ms heartbeats, and an edge then tells its client the owner went silent
    // ("moved to another node"): this test is about size, not liveness, so its beats are 500 ms.
    const { a, b } = await twoNodes(true, 500);
    await until(() => a.cluster!.isAlive("n_b") && b.cluster!.isAlive("n_a"));
    const { owner, sessionId } = await openSession(a);
    // A message with a 1.1 MB image from a client on n_b: relayed to n_a, its event relayed back,
    // over NATS.
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.alloc(1_100_000, 7),
    ]);
    const image = { type: "image", mimeType: "image/png", data: png.toString("base64") };
    const relayed = await Peer.open(b);
    relayed.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0 });
    await relayed.next((f) => f.type === "session.opened");
    relayed.send({ type: "message.send", sessionId, commandId: "m_big", text: "hello", images: [image] });
    const ended = await relayed.next((f) => f.type === "response.completed" || f.type === "error", 10_000);
    expect(ended).toMatchObject({ type: "response.completed", text: "Hi there." });
    const echoed = relayed.frames.find((f) => JSON.stringify(f).length > 1_400_000);
    expect(echoed && JSON.stringify(echoed).includes(image.data)).toBe(true);
    // An HTTP answer over 1 MiB from the owner, asked on n_b.
    const res = await fetch(`${b.url}/v1/sessions/${sessionId}/events?after=0&limit=1000`, {
      headers: { "x-api-key": "pk_test", authorization: "Bearer sk_test" },
    });
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(body.length).toBeGreaterThan(1_400_000);
    expect(body.includes(image.data)).toBe(true);
    expect(b.sessions.loaded()).toEqual([]);
    owner.close();
    relayed.close();
  }, 30_000);

  it("answers every HTTP request about a session the other node owns through the owner (messages, approvals, a reply, interrupt, delete)", async () => {
    const { a, b } = await twoNodes();
    await until(() => a.cluster!.isAlive("n_b") && b.cluster!.isAlive("n_a"));
    // A client attached on n_a keeps the session loaded (and its lease) there.
    const { owner, sessionId } = await openSession(a);
    const onB = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${b.url}/v1/sessions/${sessionId}${path}`, {
        method,
        headers: {
          "x-api-key": "pk_test",
          authorization: "Bearer sk_test",
          "content-type": "application/json",
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    };
    const ended = (commandId: string) => (f: ServerToClientFrame) =>
      (f.type === "response.completed" || f.type === "response.failed") && f.commandId === commandId;

    expect(await onB("POST", "/messages", { commandId: "m_1", text: "hello" })).toEqual({
      status: 202,
      body: { commandId: "m_1", duplicate: false },
    });
    expect(await owner.next(ended("m_1"))).toMatchObject({ type: "response.completed", text: "Hi there." });
    // The owner's command ids: a retried send is not run twice.
    expect((await onB("POST", "/messages", { commandId: "m_1", text: "hello" })).body).toEqual({
      commandId: "m_1",
      duplicate: true,
    });

    // An approval asked on the owner is listed and answered through n_b.
    expect((await onB("POST", "/messages", { commandId: "m_2", text: "refund" })).status).toBe(202);
    const asked = await owner.next((f) => f.type === "approval.requested");
    const approvalId = asked.type === "approval.requested" ? asked.approval.id : "";
    const listed = await onB("GET", "/approvals");
    expect(listed).toMatchObject({
      status: 200,
      body: { approvals: [{ id: approvalId, title: "Refund the order?" }] },
    });
    expect(await onB("POST", `/approvals/${approvalId}`, { allowed: true })).toEqual({
      status: 200,
      body: { approvalId, outcome: "allowed" },
    });
    expect(await owner.next(ended("m_2"))).toMatchObject({ text: "Refund: refunded" });
    // The owner's errors come back as they are: status, code, message, path.
    expect(await onB("POST", "/approvals/ap_nope", { allowed: true })).toMatchObject({
      status: 404,
      body: { error: { code: "not_found", message: expect.stringContaining("ap_nope") } },
    });
    // So do the edge's own checks, before anything is passed on.
    expect(await onB("POST", "/messages", { commandId: "m_3", text: 5 })).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request", path: "text" } },
    });

    // A reply in the backend's own words (what `dispatch.reply` sends to the worker's node) is the
    // owner's to judge: no turn waits for one here (packages/e2e has one that does).
    expect(await onB("POST", "/replies", { commandId: "r_1", text: "From the desk." })).toMatchObject({
      status: 409,
      body: {
        error: {
          code: "conflict",
          message: expect.stringMatching(/^no turn of this session waits for a reply/),
        },
      },
    });
    expect(await onB("POST", "/interrupt", { commandId: "i_1" })).toEqual({
      status: 202,
      body: { commandId: "i_1", duplicate: false },
    });
    // One writer all along: n_b never loaded the session.
    expect(b.sessions.loaded()).toEqual([]);

    // Deleting it through n_b: the owner stops it and deletes it.
    expect((await onB("DELETE", "")).status).toBe(204);
    expect(a.sessions.loaded()).toEqual([]);
    expect(
      (
        await fetch(`${a.url}/v1/sessions/${sessionId}`, {
          headers: { "x-api-key": "pk_test", authorization: "Bearer sk_test" },
        })
      ).status,
    ).toBe(404);
    owner.close();
  });

  it("answers an HTTP request about a session whose owner is gone with `unavailable` and retry-after at once, and serves it here once the lease ran out", async () => {
    const { store, a, b, buses } = await twoNodes();
    await until(() => a.cluster!.isAlive("n_b") && b.cluster!.isAlive("n_a"));
    const { owner, sessionId } = await openSession(a);
    // n_a's process "dies": its subscriptions go with its bus connection.
    buses.get("n_a")!.disconnect();
    const send = (commandId: string) =>
      fetch(`${b.url}/v1/sessions/${sessionId}/messages`, {
        method: "POST",
        headers: {
          "x-api-key": "pk_test",
          authorization: "Bearer sk_test",
          "content-type": "application/json",
        },
        body: JSON.stringify({ commandId, text: "hello" }),
      });
    const asked = Date.now();
    const refused = await send("m_1");
    expect(Date.now() - asked).toBeLessThan(2_000);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await refused.json()).toMatchObject({
      error: {
        code: "unavailable",
        path: "sessionId",
        message: expect.stringMatching(/\(n_a\) is gone; .*lease runs out/),
      },
    });
    // Its lease runs out: the next request takes the session over on n_b and is served there.
    now += 120_000;
    expect((await send("m_1")).status).toBe(202);
    expect((await store.leases.get(sessionId))?.nodeId).toBe("n_b");
    owner.close();
  });

  it("takes over every session of a dead node in one sweep, several at a time, each once", async () => {
    const { store, b } = await twoNodes();
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      const info = await b.sessions.create({ kind: "backend" }, "support", { userId: `u_${i}` });
      // A node that died holding them: its leases were never released.
      expect(await store.leases.acquire(info.id, "n_dead", 60_000)).toMatchObject({ acquired: true });
      ids.push(info.id);
    }
    now += 120_000;
    // How many sessions load at once (each load starts with a read of the session).
    const read = store.getSession.bind(store);
    let loading = 0;
    let most = 0;
    store.getSession = async (id: string) => {
      loading += 1;
      most = Math.max(most, loading);
      await new Promise((r) => setImmediate(r));
      try {
        return await read(id);
      } finally {
        loading -= 1;
      }
    };
    const [first, second] = await Promise.all([b.sessions.takeOverExpired(), b.sessions.takeOverExpired()]);
    expect(most).toBe(4);
    // One sweep at a time: the second call found one running and left it alone.
    expect([first, second]).toEqual([9, 0]);
    for (const id of ids) expect((await store.leases.get(id))?.token).toBe(2);
    expect(await b.sessions.takeOverExpired()).toBe(0);
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/patchbay_cluster_lease_events_total\{event="taken_over"\} 9\b/);
  });

  it("answers a resume of a session another node owns with `unavailable` at once while this node's bus is down", async () => {
    const { a, b, buses } = await twoNodes();
    await until(() => a.cluster!.isAlive("n_b") && b.cluster!.isAlive("n_a"));
    const { owner, sessionId } = await openSession(a);
    buses.get("n_b")!.disconnect();
    const { relayed, reply, ms } = await resumeThrough(b, sessionId);
    expect(reply).toMatchObject({
      code: "unavailable",
      requestId: "r",
      message: expect.stringMatching(/lost its connection to the cluster's bus/),
    });
    expect(ms).toBeLessThan(1_000);
    owner.close();
    relayed.close();
  });

  it("answers a relayed resume with `unavailable` at once when the owner's process is gone, before its heartbeats stop", async () => {
    // Heartbeats every 2 s (a node is dead after three silent ones): n_b still counts n_a alive
    // throughout, so only the watch of the owner can tell.
    const { a, b, buses } = await twoNodes(false, 2_000);
    await until(() => a.cluster!.isAlive("n_b") && b.cluster!.isAlive("n_a"));
    const { owner, sessionId } = await openSession(a);
    // n_a's process "dies": its subscriptions go with its bus connection.
    buses.get("n_a")!.disconnect();
    const { relayed, reply, ms } = await resumeThrough(b, sessionId);
    expect(reply).toMatchObject({
      code: "unavailable",
      requestId: "r",
      sessionId,
      message: expect.stringMatching(/\(n_a\) did not answer; retry shortly/),
    });
    // Not the 2 s bound of a relayed resume.
    expect(ms).toBeLessThan(1_500);
    expect(b.cluster!.isAlive("n_a")).toBe(true);
    owner.close();
    relayed.close();
  });

  it("answers /readyz 503 naming the bus while the node's bus is down, and ready again after", async () => {
    const hub = new MemoryBusHub();
    const bus = hub.connect();
    const server = await createServer({
      port: 0,
      store: new MemoryStore(),
      apiKey: "pk_test",
      secret: "sk_test",
      logger: silentLogger,
      env: {},
      agents: { support: { model: { provider: "scripted", rules: [] } } },
      cluster: { bus, nodeId: "n_solo" },
    });
    servers.push(server);
    const readyz = async () => {
      const res = await fetch(`${server.url}/readyz`);
      return { status: res.status, body: await res.json() };
    };
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: "ready", cluster: { node: "n_solo", bus: "connected", database: "up", peers: [] } },
    });
    bus.disconnect();
    expect(await readyz()).toMatchObject({
      status: 503,
      body: { status: "unavailable", cluster: { bus: "disconnected" } },
    });
    bus.reconnect();
    expect((await readyz()).status).toBe(200);
  });

  it("refuses cluster mode on a store without leases, naming databaseUrl", async () => {
    const { SqliteStore } = await import("../store/sqlite-store");
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "patchbay-cluster-sqlite-"));
    try {
      await expect(
        createServer({
          port: 0,
          store: new SqliteStore({ dataDir: dir }),
          apiKey: "pk_test",
          secret: "sk_test",
          logger: silentLogger,
          env: {},
          agents: {},
          cluster: { bus: new MemoryBusHub().connect() },
        }),
      ).rejects.toMatchObject({ code: "invalid_config", path: "databaseUrl" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
