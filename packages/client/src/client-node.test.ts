import type { Socket } from "node:net";
import type { WebSocketLike } from "@patchbay/protocol/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { Client as BrowserClient } from "./client-browser";
import { Client } from "./client-node";
import { ScriptedServer } from "./testing/scripted-server";

let server: ScriptedServer;
const clients: { close(): unknown }[] = [];

beforeEach(async () => {
  server = await ScriptedServer.start();
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server.close();
});

/**
 * A `ws` socket whose writes to the kernel are counted once it is open: each entry is one write,
 * its number the chunks in it (ws writes a header and a payload per frame).
 */
function countingSocket(writes: number[]) {
  return (url: string): WebSocketLike => {
    const socket = new WebSocket(url);
    socket.once("open", () => {
      const raw = (socket as unknown as { _socket: Socket & Record<string, unknown> })._socket;
      for (const name of ["_write", "_writev"] as const) {
        const original = raw[name] as (...args: unknown[]) => unknown;
        raw[name] = function (this: unknown, chunks: unknown, ...rest: unknown[]) {
          writes.push(Array.isArray(chunks) ? chunks.length : 1);
          return original.call(this, chunks, ...rest);
        };
      }
    });
    return socket as unknown as WebSocketLike;
  };
}

/**
 * Opens the client's socket, then sends two frames in one tick (two `session.create`s), `rounds`
 * times, each in a tick of its own.
 */
async function twoFramesInOneTick(client: Client | BrowserClient, writes: number[], rounds = 1) {
  // The sessions are never opened: the test reads the frames only.
  client
    .agent("support")
    .sessions.create()
    .catch(() => {});
  const socket = await server.accept();
  await socket.next("session.create");
  writes.length = 0;
  for (let round = 0; round < rounds; round++) {
    const more = [client.agent("support").sessions.create(), client.agent("support").sessions.create()];
    for (const creating of more) creating.catch(() => {});
    await socket.next("session.create");
    await socket.next("session.create");
  }
}

describe("the Node Client's socket", () => {
  it("writes the frames of one turn of the event loop in one write", async () => {
    const writes: number[] = [];
    const client = new Client({
      baseUrl: server.baseUrl,
      apiKey: "key_1",
      secret: "secret_1",
      createSocket: countingSocket(writes),
    });
    clients.push(client);
    await twoFramesInOneTick(client, writes, 2);
    // The socket's last write held one frame (the first create), so the next tick's first frame
    // leaves at once and only the second is held; from then on the tick's two leave together.
    expect(writes).toEqual([2, 2, 4]);
  });

  it("is held by the Node entry only: the browser Client writes each frame as it is sent", async () => {
    const writes: number[] = [];
    const client = new BrowserClient({
      baseUrl: server.baseUrl,
      apiKey: "key_1",
      createSocket: countingSocket(writes),
    });
    clients.push(client);
    await twoFramesInOneTick(client, writes);
    expect(writes).toEqual([2, 2]);
  });
});
