// The worker socket's transport, on a real server over loopback: what a socket may do before its
// hello (the pre-authentication limits it shares with /v1/client), the answer to text that is not
// UTF-8, and the JSON heartbeat.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PROTOCOL_VERSION } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";
import { TestWorkerSocket } from "../testing/test-worker-socket";
import { createDispatch } from "./create-dispatch";

let server: PatchbayServer | undefined;
let dataDir: string | undefined;
const opened: WebSocket[] = [];
const workers: TestWorkerSocket[] = [];

afterEach(async () => {
  for (const ws of opened.splice(0)) ws.terminate();
  for (const worker of workers.splice(0)) worker.drop();
  await server?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  server = undefined;
});

async function start(limits: Record<string, number> = {}, heartbeatIntervalMs = 15_000) {
  dataDir = mkdtempSync(join(tmpdir(), "patchbay-worker-socket-"));
  server = await createServer({
    port: 0,
    dataDir,
    apiKey: "pk_test",
    secret: "sk_test",
    logger: silentLogger,
    limits,
    agents: { support: { model: { provider: "scripted", rules: [{ match: ".", reply: "ok" }] } } },
    dispatch: (context) => createDispatch(context, { heartbeatIntervalMs }),
  });
  return server;
}

/** A raw socket on `path`, with every text frame it receives and how it closed. */
async function raw(url: string, path: "/v1/worker" | "/v1/client") {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}${path}`);
  opened.push(ws);
  const frames: { type: string; code?: string; nonce?: string }[] = [];
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  return { ws, frames, closed };
}

/** The status an upgrade is refused with, or 101 when it opened. */
async function upgradeStatus(url: string, path: string): Promise<number> {
  const ws = new WebSocket(`${url.replace(/^http/, "ws")}${path}`);
  opened.push(ws);
  ws.on("error", () => {}); // a refused upgrade also reports an error; the status is what counts
  return new Promise((resolve) => {
    ws.once("open", () => resolve(101));
    ws.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
  });
}

const NOT_UTF8 = Buffer.from([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d]);

describe("the worker socket before hello", () => {
  it("counts toward the server's limit of sockets waiting to authenticate, with /v1/client", async () => {
    const { url } = await start({ maxUnauthenticatedPerAddress: 2 });
    const first = await raw(url, "/v1/worker");
    await raw(url, "/v1/client");
    expect(await upgradeStatus(url, "/v1/worker")).toBe(503);
    expect(await upgradeStatus(url, "/v1/client")).toBe(503);
    // A worker that authenticates leaves the gate: the next socket gets in.
    first.ws.send(
      JSON.stringify({
        type: "worker.hello",
        protocol: PROTOCOL_VERSION,
        apiKey: "pk_test",
        secret: "sk_test",
        workerId: "w_gate",
        capacity: 1,
        handles: { messages: true, calls: true },
        hosts: [],
        running: { work: [], calls: [] },
      }),
    );
    await expect.poll(() => first.frames.some((f) => f.type === "worker.ready")).toBe(true);
    expect(await upgradeStatus(url, "/v1/worker")).toBe(101);
  });

  it("leaves the gate when a waiting socket closes without a hello", async () => {
    const { url } = await start({ maxUnauthenticatedPerAddress: 1 });
    const waiting = await raw(url, "/v1/worker");
    expect(await upgradeStatus(url, "/v1/worker")).toBe(503);
    waiting.ws.close();
    await waiting.closed;
    await expect.poll(() => upgradeStatus(url, "/v1/worker")).toBe(101);
  });

  it("closes a socket whose first frame is over the pre-authentication limit (1009)", async () => {
    const { url } = await start({ maxPreAuthFrameBytes: 1_024 });
    const big = await raw(url, "/v1/worker");
    big.ws.send(JSON.stringify({ type: "worker.hello", pad: "x".repeat(4_096) }));
    expect((await big.closed).code).toBe(1009);
    // Within the limit, a first frame that is not a hello still ends the handshake (4400).
    const small = await raw(url, "/v1/worker");
    small.ws.send(JSON.stringify({ type: "load", capacity: 1 }));
    expect((await small.closed).code).toBe(4400);
    expect(small.frames[0]).toMatchObject({ type: "error", code: "invalid_frame" });
  });

  it("answers text that is not UTF-8 with invalid_json and ends the handshake (4400, not 1007)", async () => {
    const { url } = await start();
    const socket = await raw(url, "/v1/worker");
    socket.ws.send(NOT_UTF8, { binary: false });
    expect((await socket.closed).code).toBe(4400);
    expect(socket.frames).toEqual([expect.objectContaining({ type: "error", code: "invalid_json" })]);
  });
});

describe("the worker socket after worker.ready", () => {
  it("answers text that is not UTF-8 with an invalid_json error frame and keeps the socket", async () => {
    const { url } = await start();
    const worker = await TestWorkerSocket.connect(url);
    workers.push(worker);
    await worker.next("worker.ready");
    worker.sendTextBytes(NOT_UTF8);
    const error = await worker.next("error");
    expect(error).toMatchObject({ code: "invalid_json" });
    worker.send({ type: "ping", nonce: "after" });
    expect(await worker.next("pong", (f) => f.nonce === "after")).toBeTruthy();
    expect(worker.open).toBe(true);
  });

  it("pings a silent worker before dropping it, even when the server's event loop stalled past two intervals", async () => {
    const { url } = await start({}, 50);
    const worker = await TestWorkerSocket.connect(url);
    workers.push(worker);
    worker.answerPings = false;
    await worker.next("worker.ready");
    // The whole process stalls (server included): its first heartbeat comes late.
    const until = Date.now() + 250;
    while (Date.now() < until) {
      // a stalled event loop
    }
    expect((await worker.closed).code).toBe(4408);
    expect(worker.frames.some((frame) => frame.type === "ping")).toBe(true);
  });

  it("pings with a JSON nonce each interval and keeps a worker that answers", async () => {
    // 200 ms: the worker lives in this process, and a loaded machine may stall both ends for
    // longer than two short intervals.
    const { url } = await start({}, 200);
    const worker = await TestWorkerSocket.connect(url);
    workers.push(worker);
    await worker.next("worker.ready");
    const ping = await worker.next("ping");
    expect(ping.nonce).toMatch(/^s\d+$/);
    // Five intervals later it is still there, having answered each ping with its nonce.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(worker.open).toBe(true);
    expect(worker.frames.filter((f) => f.type === "ping").length).toBeGreaterThanOrEqual(3);
  });
});
