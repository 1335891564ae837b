import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { FRAMES_PER_WRITE, holdWritesForTick, writeHeldNow } from "./tick-writes";

/** A loopback pair: the server's socket (whose writes are counted) and a client that reads. */
async function pair() {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const { port } = wss.address() as { port: number };
  const client = new WebSocket(`ws://127.0.0.1:${port}`);
  const received: string[] = [];
  client.on("message", (data) => received.push(String(data)));
  const server = await new Promise<WebSocket>((resolve) => wss.once("connection", resolve));
  await new Promise<void>((resolve) => (client.readyState === 1 ? resolve() : client.once("open", resolve)));
  // Every write that reaches the kernel goes through _write (one chunk) or _writev (a batch).
  const raw = (server as unknown as { _socket: Socket & Record<string, unknown> })._socket;
  const writes: number[] = [];
  for (const name of ["_write", "_writev"] as const) {
    const original = raw[name] as (...args: unknown[]) => unknown;
    raw[name] = function (this: unknown, chunks: unknown, ...rest: unknown[]) {
      writes.push(Array.isArray(chunks) ? chunks.length : 1);
      return original.call(this, chunks, ...rest);
    };
  }
  return {
    server,
    client,
    raw,
    received,
    writes,
    /** Sends a frame on the server's socket as a peer socket does: held for the tick first. */
    send(text: string) {
      holdWritesForTick(server);
      server.send(text);
    },
    close: () =>
      new Promise<void>((resolve) => {
        client.terminate();
        server.terminate();
        wss.close(() => resolve());
      }),
  };
}

/** A stand-in for a WebSocket whose socket logs its uncork (and may throw from it). */
function fakeSocket(name: string, log: string[], throws?: Error) {
  const raw = {
    writableCorked: 0,
    destroyedWith: undefined as Error | undefined,
    cork() {
      raw.writableCorked++;
    },
    uncork() {
      raw.writableCorked--;
      log.push(name);
      if (throws) throw throws;
    },
    destroy(error?: Error) {
      raw.destroyedWith = error;
    },
  };
  return { _socket: raw };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 3_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("holdWritesForTick", () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  it("writes the frames sent in one tick, and in its promise jobs, in one write", async () => {
    const p = await pair();
    close = p.close;
    for (let i = 0; i < 10; i++) {
      holdWritesForTick(p.server);
      p.server.send(`frame ${i}`);
    }
    await Promise.resolve();
    holdWritesForTick(p.server);
    p.server.send("frame 10");
    expect(p.writes).toEqual([]);
    await until(() => p.received.length === 11, "the frames");
    // ws writes a header and a payload per frame: 11 frames, 22 chunks, one syscall.
    expect(p.writes).toEqual([22]);
    expect(p.received).toEqual(Array.from({ length: 11 }, (_, i) => `frame ${i}`));
    expect(p.raw.writableCorked).toBe(0);
  });

  it("also waits for work deferred to the end of the cascade as it defers itself (a group commit)", async () => {
    const p = await pair();
    close = p.close;
    holdWritesForTick(p.server);
    p.server.send("created");
    // What the server's group commit does: a microtask queues a tick, whose promise job sends.
    queueMicrotask(() =>
      process.nextTick(() =>
        Promise.resolve().then(() => {
          holdWritesForTick(p.server);
          p.server.send("started");
        }),
      ),
    );
    await until(() => p.received.length === 2, "the frames");
    expect(p.writes).toEqual([4]);
    expect(p.received).toEqual(["created", "started"]);
  });

  it("writes the sockets whose peer starts work first, then the others, each in the order held", async () => {
    const log: string[] = [];
    const [client1, worker1, client2, worker2] = ["client 1", "worker 1", "client 2", "worker 2"].map(
      (name) => fakeSocket(name, log),
    );
    // A turn's order: the transaction's events go to the clients, the hosted call after them.
    holdWritesForTick(client1);
    holdWritesForTick(worker1, true);
    holdWritesForTick(client2);
    holdWritesForTick(worker2, true);
    holdWritesForTick(client1);
    await until(() => log.length === 4, "the flush");
    expect(log).toEqual(["worker 1", "worker 2", "client 1", "client 2"]);
    for (const socket of [client1, worker1, client2, worker2]) expect(socket?._socket.writableCorked).toBe(0);
  });

  it("writes every held socket when one's uncork throws, and ends that one's connection", async () => {
    const log: string[] = [];
    const broken = new Error("write after end");
    const worker = fakeSocket("worker", log, broken);
    const client = fakeSocket("client", log);
    holdWritesForTick(worker, true);
    holdWritesForTick(client);
    await until(() => log.length === 2, "the flush");
    expect(log).toEqual(["worker", "client"]);
    expect(client._socket.writableCorked).toBe(0);
    expect(client._socket.destroyedWith).toBeUndefined();
    expect(worker._socket.destroyedWith).toBe(broken);
    // The next tick holds the client again (it was not left corked); its batch held one frame,
    // so the frame leaves at once, and the one after it in the same tick is held.
    holdWritesForTick(client);
    expect(client._socket.writableCorked).toBe(0);
    holdWritesForTick(client);
    expect(client._socket.writableCorked).toBe(1);
    await until(() => log.length === 3, "the next flush");
    expect(log[2]).toBe("client");
  });

  it(`writes a socket's first ${FRAMES_PER_WRITE} frames of a tick before the next joins, in order`, async () => {
    const p = await pair();
    close = p.close;
    const n = FRAMES_PER_WRITE * 2 + 5;
    for (let i = 0; i < n; i++) {
      holdWritesForTick(p.server);
      p.server.send(`frame ${i}`);
      // The bound's write leaves at once, while the tick is still sending (two chunks a frame).
      if (i === FRAMES_PER_WRITE) expect(p.writes).toEqual([FRAMES_PER_WRITE * 2]);
    }
    expect(p.writes).toEqual([FRAMES_PER_WRITE * 2, FRAMES_PER_WRITE * 2]);
    await until(() => p.received.length === n, "the frames");
    expect(p.writes).toEqual([FRAMES_PER_WRITE * 2, FRAMES_PER_WRITE * 2, 10]);
    expect(p.received).toEqual(Array.from({ length: n }, (_, i) => `frame ${i}`));
    expect(p.raw.writableCorked).toBe(0);
  });

  it("counts the bound per socket, and from zero again in the next tick", async () => {
    const log: string[] = [];
    const busy = fakeSocket("busy", log);
    const quiet = fakeSocket("quiet", log);
    holdWritesForTick(quiet);
    for (let i = 0; i <= FRAMES_PER_WRITE; i++) holdWritesForTick(busy);
    expect(log).toEqual(["busy"]);
    expect(busy._socket.writableCorked).toBe(1);
    await until(() => log.length === 3, "the flush");
    expect(log).toEqual(["busy", "quiet", "busy"]);
    for (let i = 0; i < FRAMES_PER_WRITE; i++) holdWritesForTick(busy);
    await until(() => log.length === 4, "the next flush");
    expect(log).toEqual(["busy", "quiet", "busy", "busy"]);
  });

  it("ends a socket whose write at the bound throws, and still writes the others at the flush", async () => {
    const log: string[] = [];
    const broken = new Error("write after end");
    const busy = fakeSocket("busy", log, broken);
    const other = fakeSocket("other", log);
    holdWritesForTick(other);
    for (let i = 0; i <= FRAMES_PER_WRITE; i++) expect(() => holdWritesForTick(busy)).not.toThrow();
    expect(busy._socket.destroyedWith).toBe(broken);
    await until(() => log.includes("other"), "the flush");
    expect(other._socket.writableCorked).toBe(0);
    expect(other._socket.destroyedWith).toBeUndefined();
  });

  it("sends a frame at once on a socket whose last write held one, until a tick holds more", async () => {
    const p = await pair();
    close = p.close;
    const { send } = p;
    send("a");
    expect(p.writes).toEqual([]);
    await until(() => p.received.length === 1, "the first frame");
    // One frame in that write: the next tick's first frame leaves at once, the second is held.
    send("b");
    expect(p.writes).toEqual([2, 2]);
    send("c");
    expect(p.writes).toEqual([2, 2]);
    await until(() => p.received.length === 3, "the held frame");
    expect(p.writes).toEqual([2, 2, 2]);
    // That tick wrote two frames: the next tick's first frame is held again.
    send("d");
    expect(p.writes).toEqual([2, 2, 2]);
    await until(() => p.received.length === 4, "the last frame");
    expect(p.writes).toEqual([2, 2, 2, 2]);
    expect(p.received).toEqual(["a", "b", "c", "d"]);
    expect(p.raw.writableCorked).toBe(0);
  });

  it("holds the first frame again after a tick that reached the bound", async () => {
    const p = await pair();
    close = p.close;
    const tick = (count: number) => {
      for (let i = 0; i < count; i++) {
        holdWritesForTick(p.server);
        p.server.send(`frame ${p.writes.length}:${i}`);
      }
    };
    tick(2);
    await until(() => p.received.length === 2, "the first tick");
    // 16 frames held, the 17th left alone in the tick's batch after the bound's write: a batch
    // of one frame that must not make the socket quiet.
    tick(FRAMES_PER_WRITE + 1);
    expect(p.writes).toEqual([4, FRAMES_PER_WRITE * 2]);
    await until(() => p.received.length === FRAMES_PER_WRITE + 3, "the second tick");
    expect(p.writes).toEqual([4, FRAMES_PER_WRITE * 2, 2]);
    tick(1);
    expect(p.writes).toHaveLength(3);
    await until(() => p.received.length === FRAMES_PER_WRITE + 4, "the held frame");
    expect(p.writes).toEqual([4, FRAMES_PER_WRITE * 2, 2, 2]);
  });

  it("leaves the next tick's frames to a write of their own", async () => {
    const p = await pair();
    close = p.close;
    holdWritesForTick(p.server);
    p.server.send("first");
    await new Promise((resolve) => setTimeout(resolve, 5));
    holdWritesForTick(p.server);
    p.server.send("second");
    await until(() => p.received.length === 2, "the frames");
    expect(p.writes).toEqual([2, 2]);
  });

  it("writes at once without it, and ignores what has no socket under it", async () => {
    const p = await pair();
    close = p.close;
    p.server.send("plain");
    expect(p.writes).toEqual([2]);
    expect(() => holdWritesForTick({})).not.toThrow();
    expect(() => holdWritesForTick(undefined)).not.toThrow();
    await until(() => p.received.length === 1, "the frame");
  });

  it("a socket closed while held still sends what was held before its close frame", async () => {
    const p = await pair();
    close = p.close;
    const closed = new Promise<number>((resolve) => p.client.once("close", (code) => resolve(code)));
    holdWritesForTick(p.server);
    p.server.send("last words");
    p.server.close(4000, "bye");
    expect(await closed).toBe(4000);
    expect(p.received).toEqual(["last words"]);
  });

  it("writes what a socket holds when asked, and holds what follows in the tick until the flush", async () => {
    const p = await pair();
    close = p.close;
    const { send } = p;
    send("delta");
    send("completed");
    expect(p.writes).toEqual([]);
    writeHeldNow(p.server);
    expect(p.writes).toEqual([4]);
    expect(p.raw.writableCorked).toBe(0);
    // Asked again with nothing held: no write.
    writeHeldNow(p.server);
    expect(p.writes).toEqual([4]);
    send("next 1");
    send("next 2");
    expect(p.writes).toEqual([4]);
    await until(() => p.received.length === 4, "the frames after it");
    expect(p.writes).toEqual([4, 4]);
    expect(p.received).toEqual(["delta", "completed", "next 1", "next 2"]);
    expect(p.raw.writableCorked).toBe(0);
  });

  it("counts a frame written early in its tick's batch: a socket with two frames is not quiet", async () => {
    const p = await pair();
    close = p.close;
    const { send } = p;
    send("completed");
    writeHeldNow(p.server);
    expect(p.writes).toEqual([2]);
    send("next");
    expect(p.writes).toEqual([2]);
    await until(() => p.received.length === 2, "the frame after it");
    expect(p.writes).toEqual([2, 2]);
    // Two frames in that tick: the next tick's first frame is held, not sent at once.
    send("later");
    expect(p.writes).toEqual([2, 2]);
    await until(() => p.received.length === 3, "the next tick's frame");
    expect(p.writes).toEqual([2, 2, 2]);
  });

  it("leaves alone a socket it does not hold, and ends one whose write throws", async () => {
    const log: string[] = [];
    const other = fakeSocket("other", log);
    other._socket.cork(); // corked by someone else
    writeHeldNow(other);
    expect(other._socket.writableCorked).toBe(1);
    expect(() => writeHeldNow({})).not.toThrow();
    expect(() => writeHeldNow(undefined)).not.toThrow();
    const broken = new Error("write after end");
    const ours = fakeSocket("ours", log, broken);
    holdWritesForTick(ours);
    expect(() => writeHeldNow(ours)).not.toThrow();
    expect(ours._socket.destroyedWith).toBe(broken);
    expect(log).toEqual(["ours"]);
  });
});
