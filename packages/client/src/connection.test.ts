import type { WebSocketLike } from "@patchbay/protocol/runtime";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { Connection, type ConnectionOptions, type ConnectionState } from "./connection";
import { AuthError, ProtocolViolationError } from "./errors";
import { ScriptedServer } from "./testing/scripted-server";

let server: ScriptedServer;
const connections: Connection[] = [];

beforeEach(async () => {
  server = await ScriptedServer.start();
});

afterEach(async () => {
  vi.useRealTimers();
  for (const connection of connections.splice(0)) connection.close();
  await server.close();
});

function connect(options: Partial<ConnectionOptions> = {}): {
  connection: Connection;
  states: ConnectionState[];
} {
  const connection = new Connection({
    url: `${server.baseUrl.replace("http", "ws")}/v1/client`,
    createSocket: (url) => new WebSocket(url) as unknown as WebSocketLike,
    auth: async () => ({ kind: "user", token: "t1" }),
    backoff: { random: () => 0 },
    ...options,
  });
  connections.push(connection);
  const states: ConnectionState[] = [];
  connection.on("state", (state) => states.push(state));
  return { connection, states };
}

function waitFor<T>(connection: Connection, event: "welcome" | "lost" | "failed" | "error"): Promise<T> {
  return new Promise((resolve) => connection.once(event, (...args: unknown[]) => resolve(args[0] as T)));
}

/** Polls with the real event loop: under fake timers `vi.waitFor` would move the clock itself. */
async function realWait<T>(check: () => T | false, what: string): Promise<T> {
  const deadline = performance.now() + 3_000;
  while (performance.now() < deadline) {
    const value = check();
    if (value) return value;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("Connection", () => {
  it("says hello with the credentials and opens on welcome", async () => {
    const { connection, states } = connect();
    const welcomed = waitFor(connection, "welcome");
    connection.open();
    const socket = await server.nextConnection();
    const hello = await socket.next("hello");
    expect(hello).toMatchObject({ type: "hello", protocol: 1, auth: { kind: "user", token: "t1" } });
    expect(connection.send({ type: "ping" })).toBe(false);
    socket.welcome();
    await welcomed;
    expect(states).toEqual(["connecting", "open"]);
    expect(connection.send({ type: "ping", nonce: "x" })).toBe(true);
    expect(await socket.next("ping")).toEqual({ type: "ping", nonce: "x" });
  });

  it("redials after a drop before welcome, and after a drop once open, reporting each state", async () => {
    const { connection, states } = connect();
    connection.open();
    const first = await server.nextConnection();
    await first.next("hello");
    first.drop();
    const second = await server.nextConnection();
    await second.next("hello");
    const welcomed = waitFor(connection, "welcome");
    second.welcome();
    await welcomed;
    const lost = waitFor(connection, "lost");
    second.drop();
    await lost;
    await server.accept();
    await vi.waitFor(() => expect(connection.state).toBe("open"));
    expect(states).toEqual(["connecting", "reconnecting", "open", "reconnecting", "open"]);
  });

  it("waits the backoff between failed dials (fake timers)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const { connection } = connect({
      backoff: { initialDelayMs: 1_000, maxDelayMs: 4_000, random: () => 0.5 },
    });
    connection.open();
    // Each dial is dropped before welcome; the waits must be 500, 1000, 2000, 2000 (cap 4000 * 0.5).
    const expected = [500, 1_000, 2_000, 2_000];
    for (const wait of expected) {
      const socket = await realWait(() => server.sockets.length > 0 && server.sockets.at(-1)!, "a dial");
      await socket.next("hello");
      const before = server.sockets.length;
      socket.drop();
      await realWait(() => connection.state === "reconnecting" && socket.closed, "the drop to be seen");
      await vi.advanceTimersByTimeAsync(wait - 1);
      const settle = performance.now() + 30;
      while (performance.now() < settle) await new Promise((resolve) => setImmediate(resolve));
      expect(server.sockets.length).toBe(before);
      await vi.advanceTimersByTimeAsync(1);
      await realWait(() => server.sockets.length === before + 1, `a dial after ${wait} ms`);
    }
  });

  it("pings at the server's interval, answers the server's pings, and replaces a silent socket", async () => {
    const { connection } = connect();
    connection.open();
    const socket = await server.nextConnection();
    await socket.next("hello");
    // 200 ms: a loaded machine's event loop may stall for tens of ms, and a stall longer than two
    // intervals would rightly count the socket as dead before it pinged.
    socket.welcome({ heartbeatIntervalMs: 200 });
    socket.send({ type: "ping", nonce: "srv" });
    expect(await socket.next("pong")).toEqual({ type: "pong", nonce: "srv" });
    await socket.next("ping", 2_000);
    // The scripted server never answers: after twice the interval the socket counts as dead.
    const lost = waitFor<string>(connection, "lost");
    expect(await lost).toMatch(/^connection lost: .*nothing received/);
    const next = await server.nextConnection();
    expect(await next.next("hello")).toMatchObject({ type: "hello" });
  });

  it("gives up with an AuthError when the credentials are refused and nothing can refresh them", async () => {
    const { connection, states } = connect();
    const failed = waitFor<AuthError>(connection, "failed");
    connection.open();
    const socket = await server.nextConnection();
    await socket.next("hello");
    socket.send({ type: "error", code: "unauthorized", message: "token expired" });
    const error = await failed;
    expect(error).toBeInstanceOf(AuthError);
    expect(error).toMatchObject({ code: "auth", wireCode: "unauthorized", message: "token expired" });
    expect(states).toEqual(["connecting", "idle"]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.sockets).toHaveLength(1);
  });

  it("asks for fresh credentials once after a refusal, then dials again with them", async () => {
    const refreshes: boolean[] = [];
    let token = "old";
    const { connection } = connect({
      auth: async ({ refresh }) => {
        refreshes.push(refresh);
        if (refresh) token = "new";
        return { kind: "user", token };
      },
      canRefreshAuth: () => true,
    });
    connection.open();
    const first = await server.nextConnection();
    await first.next("hello");
    first.send({ type: "error", code: "unauthorized", message: "expired" });
    const second = await server.nextConnection();
    expect(await second.next("hello")).toMatchObject({ auth: { token: "new" } });
    // Refused again: no second refresh, the connection gives up.
    const failed = waitFor<AuthError>(connection, "failed");
    second.send({ type: "error", code: "unauthorized", message: "still bad" });
    expect(await failed).toBeInstanceOf(AuthError);
    expect(refreshes).toEqual([false, true]);
  });

  it("ignores frame types it does not know and reports broken frames without dropping the socket", async () => {
    const { connection } = connect();
    const frames: string[] = [];
    connection.on("frame", (frame) => frames.push(frame.type));
    const errors: Error[] = [];
    connection.on("error", (error) => errors.push(error));
    connection.open();
    const socket = await server.accept();
    await vi.waitFor(() => expect(connection.state).toBe("open"));
    socket.send({ type: "something.new", x: 1 });
    socket.sendRaw("{not json");
    socket.send({ type: "text.delta", sessionId: "s", seq: 0, responseId: "r", itemId: "i", delta: "x" });
    socket.send({ type: "error", code: "internal", message: "hi" });
    await vi.waitFor(() => expect(frames).toEqual(["error"]));
    expect(errors).toHaveLength(2);
    expect(errors.every((e) => e instanceof ProtocolViolationError)).toBe(true);
    // Checked by the zod-free guards of @patchbay/protocol/lite, with the field and the rule.
    expect(errors[1]!.message).toBe(
      "undecodable frame from the server: invalid 'text.delta' frame: seq: must be at least 1",
    );
    expect((errors[1] as ProtocolViolationError).path).toBe("seq");
    expect(connection.state).toBe("open");
  });

  it("stops for good on close", async () => {
    const { connection, states } = connect();
    connection.open();
    const socket = await server.accept();
    await vi.waitFor(() => expect(connection.state).toBe("open"));
    connection.close();
    await vi.waitFor(() => expect(socket.closed).toBe(true));
    connection.open();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(server.sockets).toHaveLength(1);
    expect(states.at(-1)).toBe("closed");
  });
});
