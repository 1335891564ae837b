// The floor: a raw `ws` request/reply between this process and a child, with the payload of a
// hosted tool call. Nothing sits between the socket and JSON, so no tool call over a socket
// between two processes can cost less; every Patchbay figure is read as a multiple of it.
import type { AddressInfo } from "node:net";
import type WebSocket from "ws";
import { WebSocketServer } from "ws";
import { type Peer, spawnPeer } from "./children";
import { hostedCallFrame } from "./lookup-order";
import type { Rig } from "./measure";

/**
 * Starts the floor: a socket server here, the answering peer in a child process (with Node flags
 * `execArgv`: a probe's preload).
 */
export async function startRawWsFloor(
  execArgv: string[] = [],
): Promise<Rig & { peer: Peer<unknown>; peerPid: number }> {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  const port = (server.address() as AddressInfo).port;
  const connected = new Promise<WebSocket>((resolve) => server.once("connection", resolve));
  const peer = await spawnPeer("raw-ws-peer", { args: [`ws://127.0.0.1:${port}`], execArgv });
  const socket = await connected;

  const pending = new Map<string, () => void>();
  socket.on("message", (data) => {
    const frame = JSON.parse(String(data)) as { callId: string };
    const resolve = pending.get(frame.callId);
    pending.delete(frame.callId);
    resolve?.();
  });
  let next = 0;
  return {
    name: "raw ws",
    peer,
    peerPid: peer.child.pid ?? 0,
    call() {
      const callId = `call_${(next++).toString(36)}`;
      return new Promise<void>((resolve) => {
        pending.set(callId, resolve);
        socket.send(JSON.stringify(hostedCallFrame(callId)));
      });
    },
    async close() {
      socket.terminate();
      await peer.kill();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
