// Probe: the frames one whole turn (scenario 4) puts on the client's socket, each way, with
// their types and bytes. Runs scenario 4's server and worker processes and one client here.
//   node --import tsx src/probes/turn-frames.ts [--turns 20] [--show]
import { Client } from "@patchbay/client";
import WebSocket from "ws";
import { spawnPeer } from "../children";
import { BENCH_API_KEY, BENCH_SECRET } from "../credentials";
import { BENCH_AGENT, BENCH_USER, TURN_TEXT } from "../lookup-order";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const turns = arg("turns", 20);
const show = process.argv.includes("--show");

interface Tally {
  frames: number;
  /** Runs of frames that arrived in one turn of the event loop (about one socket write each). */
  bursts: number;
  open: boolean;
  bytes: number;
  types: Map<string, number>;
}
const tally = (): Tally => ({ frames: 0, bursts: 0, open: false, bytes: 0, types: new Map() });
let sent = tally();
let received = tally();
const shown: string[] = [];
const count = (t: Tally, text: string, dir: string) => {
  t.frames++;
  if (!t.open) {
    t.bursts++;
    t.open = true;
    setImmediate(() => {
      t.open = false;
    });
  }
  t.bytes += Buffer.byteLength(text);
  let type = "?";
  try {
    const frame = JSON.parse(text) as { type?: string; event?: { type?: string } };
    type = frame.event?.type ? `${frame.type}:${frame.event.type}` : String(frame.type);
  } catch {}
  t.types.set(type, (t.types.get(type) ?? 0) + 1);
  if (show) shown.push(`${dir} ${text.length} ${text.slice(0, 400)}`);
};
const proto = WebSocket.prototype as unknown as {
  send: (data: unknown, ...rest: unknown[]) => void;
  emit: (event: string, ...args: unknown[]) => boolean;
};
const send = proto.send;
proto.send = function (this: unknown, data: unknown, ...rest: unknown[]) {
  count(sent, String(data), ">");
  return send.call(this, data, ...rest);
};
const emit = proto.emit;
proto.emit = function (this: unknown, event: string, ...args: unknown[]) {
  if (event === "message") count(received, String(args[0]), "<");
  return emit.call(this, event, ...args);
};

const server = await spawnPeer<{ url: string }>("server-process");
const worker = await spawnPeer("worker", { args: [server.ready.url] });
const client = new Client({ baseUrl: server.ready.url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
try {
  const session = await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id });
  await session.responses.create(TURN_TEXT);
  sent = tally();
  received = tally();
  shown.length = 0;
  for (let i = 0; i < turns; i++) await session.responses.create(TURN_TEXT);
  for (const [name, t] of [
    ["client -> server", sent],
    ["server -> client", received],
  ] as const) {
    const types = [...t.types].map(([k, v]) => `${k} ${(v / turns).toFixed(2)}`).join(", ");
    console.log(
      `${name}: ${(t.frames / turns).toFixed(2)} frames in ${(t.bursts / turns).toFixed(2)} bursts, ${Math.round(t.bytes / turns)} bytes per turn (${types})`,
    );
  }
  if (show) console.log(shown.slice(0, Math.ceil(shown.length / turns)).join("\n"));
} finally {
  client.close();
  await worker.kill();
  await server.kill();
}
process.exit(0);
