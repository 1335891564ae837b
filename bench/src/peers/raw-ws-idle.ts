// The memory baseline: a bare `ws` server (the options the Patchbay client socket uses) holding
// idle connections. Answers `memory`, `heap-snapshot` and `heap-spaces` like the server peer.
import type { AddressInfo } from "node:net";
import { getHeapSpaceStatistics, writeHeapSnapshot } from "node:v8";
import { WebSocketServer } from "ws";
import { measureMemory } from "./memory";
import { failed, onRequest, ready } from "./peer-runtime";

const server = new WebSocketServer({ host: "127.0.0.1", port: 0, perMessageDeflate: false });
server.on("error", failed);
server.on("connection", (ws) => ws.on("message", (data) => ws.send(data)));
server.on("listening", () => ready({ url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}` }));
onRequest(async (message) => {
  if (message.type === "memory") return { ...(await measureMemory()), connections: server.clients.size };
  if (message.type === "heap-spaces") {
    const { rss } = await measureMemory();
    return { rss, spaces: getHeapSpaceStatistics(), external: process.memoryUsage().external };
  }
  if (message.type === "heap-snapshot") {
    await measureMemory();
    return { file: writeHeapSnapshot(String(message.file)) };
  }
  throw new Error(`unknown request ${String(message.type)}`);
});
