// Preloaded (`--import`) into a probe's processes by turn-hops.ts: marks every socket write
// (`write`, and `uncork`, where ws writes corked frames), every chunk read (`data`), and, where
// better-sqlite3 is loaded by @patchbay/server, the start and end of each `BEGIN` and `COMMIT`,
// with `process.hrtime.bigint()` (CLOCK_MONOTONIC, one clock for every process of the machine),
// while on. Answers `{ hopMarks: "on" | "off" | "take" }` on the IPC channel (no `id`, so the
// peer's own request handler ignores it) with `{ hopMarksReply, marks }`.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { createRequire } from "node:module";
import net from "node:net";

/** A mark: its label, when (ns), and the socket's local and remote ports (0 when not a socket). */
export type HopMark = [label: string, ns: number, localPort: number, remotePort: number];

const marks: HopMark[] = [];
let on = false;
const now = () => Number(process.hrtime.bigint());

const mark = (label: string, socket?: net.Socket) => {
  if (on) marks.push([label, now(), socket?.localPort ?? 0, socket?.remotePort ?? 0]);
};

const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  if (!this.writableCorked) mark("write", this);
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;
const uncork = net.Socket.prototype.uncork;
net.Socket.prototype.uncork = function (this: net.Socket) {
  const outer = this.writableCorked === 1;
  mark(outer ? "flush" : "uncork", this);
  uncork.call(this);
  if (outer) mark("flush done", this);
};
const cork = net.Socket.prototype.cork;
net.Socket.prototype.cork = function (this: net.Socket) {
  if (this.writableCorked === 0) mark("cork", this);
  return cork.call(this);
};
const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]) {
  if (event === "data") mark("read", this);
  return (emit as (...a: unknown[]) => boolean).call(this, event, ...args);
} as typeof emit;

/** Marks each ws frame sent and received, by its `type` (and its event's), on the ws @patchbay/server loads. */
function markFrames(): void {
  let WebSocket: { prototype: Record<string, unknown> };
  try {
    WebSocket = createRequire(import.meta.resolve("@patchbay/server"))("ws");
  } catch {
    return;
  }
  const typeOf = (data: unknown) => {
    const head = Buffer.isBuffer(data) ? data.toString("utf8", 0, 300) : String(data).slice(0, 300);
    const types = [...head.matchAll(/"type":"([^"]+)"/g)].map((m) => m[1]);
    return types.slice(0, 2).join(":");
  };
  const send = WebSocket.prototype.send as (...a: unknown[]) => unknown;
  WebSocket.prototype.send = function (this: { _socket?: net.Socket }, data: unknown, ...rest: unknown[]) {
    if (on) mark(`send ${typeOf(data)}`, this._socket);
    return send.call(this, data, ...rest);
  };
  const emitWs = WebSocket.prototype.emit as (...a: unknown[]) => boolean;
  WebSocket.prototype.emit = function (this: { _socket?: net.Socket }, event: string, ...args: unknown[]) {
    if (on && event === "message") mark(`got ${typeOf(args[0])}`, this._socket);
    return emitWs.call(this, event, ...args);
  };
}
markFrames();

/** Marks `BEGIN`/`COMMIT` (start and end) when this process loads @patchbay/server's better-sqlite3. */
function markSql(): void {
  let require: NodeJS.Require;
  try {
    require = createRequire(import.meta.resolve("@patchbay/server"));
  } catch {
    return;
  }
  let Database: new (path: string) => { prepare(sql: string): object; close(): void };
  try {
    Database = require("better-sqlite3");
  } catch {
    return;
  }
  const db = new Database(":memory:");
  const proto = Object.getPrototypeOf(db.prepare("SELECT 1")) as Record<string, unknown>;
  db.close();
  for (const method of ["get", "all"]) {
    const plain = proto[method] as (...args: unknown[]) => unknown;
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      mark(/^\s*(\w+)/.exec(this.source)?.[1]?.toUpperCase() ?? "?");
      return plain.apply(this, args);
    };
  }
  const original = proto.run as (...args: unknown[]) => unknown;
  proto.run = function (this: { source: string }, ...args: unknown[]) {
    const word = /^\s*(\w+)/.exec(this.source)?.[1]?.toUpperCase();
    if (word !== "BEGIN" && word !== "COMMIT") {
      mark(word ?? "?");
      return original.apply(this, args);
    }
    mark(word);
    try {
      return original.apply(this, args);
    } finally {
      mark(`${word} done`);
    }
  };
}
if (process.env.HOP_MARKS_SQL === "1") markSql();

/** Marks a label of this process's own (the probe marks a turn's start and end). */
export function hopMark(label: string): void {
  mark(label);
}

/** Starts or stops marking, or takes (and clears) the marks so far. */
export function hopMarks(command: "on" | "off" | "take"): HopMark[] {
  if (command === "on") on = true;
  else if (command === "off") on = false;
  else return marks.splice(0);
  return [];
}

const inspector = new Session();
/** Starts V8's sampling profiler (every `intervalUs`), or stops it and writes the profile to `file`. */
export async function hopProfile(command: "start" | "stop", arg: number | string): Promise<void> {
  const post = (method: string, params?: object) =>
    new Promise<{ profile?: object }>((resolve, reject) =>
      inspector.post(method, params, (error, result) => (error ? reject(error) : resolve(result as object))),
    );
  if (command === "start") {
    inspector.connect();
    await post("Profiler.enable");
    await post("Profiler.setSamplingInterval", { interval: Number(arg) });
    await post("Profiler.start");
    return;
  }
  const { profile } = await post("Profiler.stop");
  writeFileSync(String(arg), JSON.stringify(profile));
  inspector.disconnect();
}

process.on(
  "message",
  async (message: {
    hopMarks?: "on" | "off" | "take";
    hopProfile?: "start" | "stop";
    arg?: number | string;
  }) => {
    if (message?.hopProfile) {
      await hopProfile(message.hopProfile, message.arg ?? 100);
      process.send?.({ hopProfileReply: message.hopProfile });
    }
    if (!message?.hopMarks) return;
    process.send?.({ hopMarksReply: message.hopMarks, marks: hopMarks(message.hopMarks) });
  },
);
