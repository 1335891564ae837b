import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import {
  type HandshakeStep,
  ReconnectingSocket,
  type ReconnectingSocketHooks,
  type ReconnectingSocketOptions,
} from "./reconnecting-socket";
import type { WebSocketLike } from "./websocket-like";

type Frame = { type: string; nonce?: string; [key: string]: unknown };

/** A server on loopback that records what each socket says and can answer. */
async function startServer() {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const sockets: { socket: WebSocket; received: Frame[] }[] = [];
  wss.on("connection", (socket) => {
    const entry = { socket, received: [] as Frame[] };
    sockets.push(entry);
    socket.on("message", (data) => entry.received.push(JSON.parse(String(data))));
  });
  const { port } = wss.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}`,
    sockets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const { socket } of sockets) socket.terminate();
        wss.close(() => resolve());
      }),
  };
}

async function until<T>(check: () => T | undefined | false, what: string, ms = 3_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

function peer(
  url: string,
  options: Partial<ReconnectingSocketOptions> = {},
  hooks: Partial<ReconnectingSocketHooks<Frame>> = {},
) {
  const log: string[] = [];
  const frames: Frame[] = [];
  const socket = new ReconnectingSocket<Frame>(
    {
      url,
      createSocket: (u) => new WebSocket(u) as unknown as WebSocketLike,
      backoff: { initialDelayMs: 10, maxDelayMs: 20, random: () => 0.5 },
      ...options,
    },
    {
      hello: () => JSON.stringify({ type: "hello" }),
      decode: (data) => JSON.parse(String(data)) as Frame,
      handshake: (frame): HandshakeStep =>
        frame.type === "welcome"
          ? { welcome: true, heartbeatIntervalMs: Number(frame.interval ?? 1_000) }
          : undefined,
      welcome: (_frame, reconnect) => log.push(`welcome reconnect=${reconnect}`),
      frame: (frame) => frames.push(frame),
      lost: (reason) => log.push(`lost ${reason}`),
      reconnecting: ({ attempt, reason }) => log.push(`reconnecting ${attempt} ${reason}`),
      failed: (error) => log.push(`failed ${error.message}`),
      state: (state) => log.push(state),
      ...hooks,
    },
  );
  cleanup.push(() => socket.close());
  return { socket, log, frames };
}

describe("ReconnectingSocket", () => {
  it("says hello, opens on the welcome, hands on frames and answers the server's pings", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    const { socket, log, frames } = peer(server.url);
    socket.open();
    const s = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    expect(s.received[0]).toEqual({ type: "hello" });
    s.socket.send(JSON.stringify({ type: "welcome" }));
    await until(() => socket.state === "open", "open");
    s.socket.send(JSON.stringify({ type: "ping", nonce: "n7" }));
    s.socket.send(JSON.stringify({ type: "event", n: 1 }));
    await until(() => frames.length === 1, "the frame");
    expect(frames).toEqual([{ type: "event", n: 1 }]);
    expect(s.received).toContainEqual({ type: "pong", nonce: "n7" });
    expect(socket.send(JSON.stringify({ type: "note" }))).toBe(true);
    expect(log).toEqual(["connecting", "open", "welcome reconnect=false"]);
  });

  it("hands the socket to holdWrites before each frame and pong it writes, not before the hello", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    const held: string[] = [];
    let current: WebSocketLike | undefined;
    const { socket } = peer(server.url, {
      createSocket: (u) => {
        current = new WebSocket(u) as unknown as WebSocketLike;
        const send = current.send.bind(current);
        current.send = (text: string) => {
          held.push(`send ${JSON.parse(text).type}`);
          send(text);
        };
        return current;
      },
      holdWrites: (s) => held.push(s === current ? "hold" : "hold another socket"),
    });
    socket.open();
    const s = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    s.socket.send(JSON.stringify({ type: "welcome" }));
    await until(() => socket.state === "open", "open");
    expect(socket.send(JSON.stringify({ type: "note" }))).toBe(true);
    s.socket.send(JSON.stringify({ type: "ping", nonce: "n1" }));
    await until(() => s.received.some((f) => f.type === "pong"), "the pong");
    expect(held).toEqual(["send hello", "hold", "send note", "hold", "send pong"]);
  });

  it("asks a silent server with a ping, drops a socket silent for two intervals, then redials and is welcomed again", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    const { socket, log } = peer(server.url);
    socket.open();
    const first = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    first.socket.send(JSON.stringify({ type: "welcome", interval: 40 }));
    await until(() => first.received.some((f) => f.type === "ping"), "a ping of its own");
    await until(() => log.some((l) => l.startsWith("lost nothing received for 80 ms")), "the drop");
    const second = await until(() => server.sockets[1]?.received[0] && server.sockets[1], "the redial");
    second.socket.send(JSON.stringify({ type: "welcome", interval: 1_000 }));
    await until(() => log.includes("welcome reconnect=true"), "the second welcome");
    expect(log).toContain("reconnecting 1 nothing received for 80 ms");
  });

  it("keeps a socket alive as long as the server pings", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    const { socket, log } = peer(server.url);
    socket.open();
    const s = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    s.socket.send(JSON.stringify({ type: "welcome", interval: 30 }));
    const pinger = setInterval(() => s.socket.send(JSON.stringify({ type: "ping", nonce: "x" })), 20);
    await new Promise((resolve) => setTimeout(resolve, 200));
    clearInterval(pinger);
    expect(log.filter((l) => l.startsWith("lost"))).toEqual([]);
    expect(s.received.filter((f) => f.type === "pong").length).toBeGreaterThan(3);
  });

  it("gives up for good on a refusal, and after too many failed dials", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    const refused = peer(
      server.url,
      {},
      { handshake: (f) => (f.type === "error" ? { fail: new Error("bad key") } : undefined) },
    );
    refused.socket.open();
    const s = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    s.socket.send(JSON.stringify({ type: "error" }));
    await until(() => refused.socket.state === "idle", "idle");
    expect(refused.log.at(-1)).toBe("failed bad key");

    await server.close();
    const exhausted = peer(server.url, { maxReconnectAttempts: 2 });
    exhausted.socket.open();
    await until(() => exhausted.log.some((l) => l.startsWith("failed")), "giving up", 5_000);
    expect(exhausted.log.filter((l) => l.startsWith("reconnecting "))).toHaveLength(2);
    expect(exhausted.log.at(-1)).toBe("failed gave up after 2 failed reconnect attempts");
    expect(exhausted.socket.state).toBe("idle");
  });

  it("redials at once when the handshake asks (fresh credentials), without counting a failure", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    let hellos = 0;
    const { socket, log } = peer(
      server.url,
      {},
      {
        hello: () => JSON.stringify({ type: "hello", n: ++hellos }),
        handshake: (f) =>
          f.type === "error"
            ? { redial: true }
            : f.type === "welcome"
              ? { welcome: true, heartbeatIntervalMs: 1_000 }
              : undefined,
      },
    );
    socket.open();
    const first = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    first.socket.send(JSON.stringify({ type: "error" }));
    const second = await until(() => server.sockets[1]?.received[0] && server.sockets[1], "the second hello");
    expect(second.received[0]).toEqual({ type: "hello", n: 2 });
    expect(log.filter((l) => l.startsWith("reconnecting "))).toEqual([]);
  });

  it("closes for good: the closing handshake completes, nothing is sent and no redial follows", async () => {
    const server = await startServer();
    cleanup.push(server.close);
    const { socket, log } = peer(server.url);
    socket.open();
    const s = await until(() => server.sockets[0]?.received[0] && server.sockets[0], "the hello");
    s.socket.send(JSON.stringify({ type: "welcome" }));
    await until(() => socket.state === "open", "open");
    const closedOnServer = new Promise<number>((resolve) => s.socket.once("close", (code) => resolve(code)));
    await socket.close(1000, "bye");
    expect(await closedOnServer).toBe(1000);
    expect(socket.state).toBe("closed");
    expect(socket.send("{}")).toBe(false);
    expect(log.slice(-2)).toEqual(["closed", "lost bye"]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.sockets).toHaveLength(1);
  });
});
