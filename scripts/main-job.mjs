// The main job. Until the server lands this is a real protocol round trip over a loopback
// WebSocket: a peer sends client frames, the other side decodes them with the protocol's
// decodeFrame and answers with server frames, which are decoded in turn.
import { createRequire } from "node:module";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const require = createRequire(join(root, "packages", "server", "package.json"));
const { WebSocketServer, WebSocket } = require("ws");
const { decodeFrame, PROTOCOL_VERSION } = await import(join(root, "packages/protocol/dist/index.js"));

const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
await new Promise((resolve) => server.once("listening", resolve));
const { port } = server.address();
console.log(`protocol round trip on ws://127.0.0.1:${port}/v1/client (protocol v${PROTOCOL_VERSION})`);

server.on("connection", (socket) => {
  socket.on("message", (data) => {
    const decoded = decodeFrame(data.toString(), { channel: "client-to-server" });
    if (!decoded.ok) {
      socket.send(JSON.stringify({ type: "error", code: decoded.error.code, message: decoded.error.message, path: decoded.error.path }));
      return;
    }
    const frame = decoded.frame;
    if (frame.type === "hello") {
      socket.send(JSON.stringify({ type: "welcome", protocol: PROTOCOL_VERSION, connectionId: "k_1", user: { id: "demo" }, heartbeatIntervalMs: 15000, maxFrameBytes: 5242880 }));
    } else if (frame.type === "session.create") {
      socket.send(JSON.stringify({ type: "session.opened", requestId: frame.requestId, session: { id: "s_1", agent: frame.agent, userId: "demo", metadata: {}, createdAt: Date.now(), lastSeq: 0 } }));
    }
  });
});

const client = new WebSocket(`ws://127.0.0.1:${port}/v1/client`);
const frames = [
  { type: "hello", protocol: PROTOCOL_VERSION, auth: { kind: "user", token: "t" } },
  { type: "message.send", sessionId: "s_1", commandId: "c_1", text: 42 },
  { type: "session.create", requestId: "r_1", agent: "support", tools: [] },
];
let answered = 0;
client.on("open", () => frames.forEach((f) => { console.log(`client -> ${JSON.stringify(f)}`); client.send(JSON.stringify(f)); }));
client.on("message", (data) => {
  const decoded = decodeFrame(data.toString(), { channel: "server-to-client" });
  console.log(`client <- ${decoded.ok ? JSON.stringify(decoded.frame) : `undecodable: ${decoded.error.message}`}`);
  if (++answered === frames.length) {
    client.close();
    server.close();
  }
});
