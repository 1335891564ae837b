import type { AddressInfo } from "node:net";
import { decodeFrame, type ServerToWorkerFrame, type WorkerToServerFrame } from "@patchbay/protocol";
import { type WebSocket, WebSocketServer } from "ws";

type Hello = WorkerToServerFrame & { type: "worker.hello" };

/** What a scripted server does when a worker says hello. */
export interface ScriptedServerOptions {
  /** Answer hello with `worker.ready` (default), refuse it with an error code, or say nothing. */
  onHello?: "ready" | "silent" | { refuse: string };
  heartbeatIntervalMs?: number;
  /** Answer the worker's pings (default true). A server that does not looks dead to the worker. */
  answerPings?: boolean;
}

/**
 * One worker socket as the test sees it: the hello it sent, every later frame, and a way to
 * script the server's side. Every frame the worker sends must decode against the protocol, so a
 * test also proves the worker speaks the wire contract.
 */
export class ScriptedSocket {
  readonly hello: Hello;
  readonly frames: WorkerToServerFrame[] = [];
  readonly invalid: string[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  #socket: WebSocket;
  #waiters: Array<{ match: (f: WorkerToServerFrame) => boolean; resolve: (f: WorkerToServerFrame) => void }> =
    [];

  constructor(socket: WebSocket, hello: Hello) {
    this.#socket = socket;
    this.hello = hello;
    this.closed = new Promise((resolve) => {
      socket.on("close", (code, reason) => resolve({ code, reason: String(reason) }));
    });
  }

  /** Called for each frame after hello. */
  receive(frame: WorkerToServerFrame): void {
    this.frames.push(frame);
    this.#waiters = this.#waiters.filter((w) => {
      if (!w.match(frame)) return true;
      w.resolve(frame);
      return false;
    });
  }

  send(frame: ServerToWorkerFrame): void {
    this.#socket.send(JSON.stringify(frame));
  }

  /** Cuts the socket without a closing handshake, like a crashed server or a lost network. */
  drop(): void {
    this.#socket.terminate();
  }

  /** The first frame of `type` (already received or still to come) matching `where`. */
  next<T extends WorkerToServerFrame["type"]>(
    type: T,
    where: (frame: WorkerToServerFrame & { type: T }) => boolean = () => true,
    timeoutMs = 5_000,
  ): Promise<WorkerToServerFrame & { type: T }> {
    const match = (f: WorkerToServerFrame) =>
      f.type === type && where(f as WorkerToServerFrame & { type: T });
    const seen = this.frames.find(match);
    if (seen) return Promise.resolve(seen as WorkerToServerFrame & { type: T });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no '${type}' frame within ${timeoutMs} ms; got ${this.types().join(", ")}`)),
        timeoutMs,
      );
      this.#waiters.push({
        match,
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f as WorkerToServerFrame & { type: T });
        },
      });
    });
  }

  types(): string[] {
    return this.frames.map((f) => f.type);
  }
}

/** A `/v1/worker` server on 127.0.0.1 whose every move the test scripts. */
export interface ScriptedServer {
  url: string;
  port: number;
  sockets: ScriptedSocket[];
  /** The next worker socket to say hello (or one that already did and was not yet taken). */
  nextSocket(timeoutMs?: number): Promise<ScriptedSocket>;
  setOptions(options: ScriptedServerOptions): void;
  close(): Promise<void>;
}

export async function startScriptedServer(
  initial: ScriptedServerOptions = {},
  port = 0,
): Promise<ScriptedServer> {
  let options = initial;
  const wss = new WebSocketServer({ host: "127.0.0.1", port, path: "/v1/worker" });
  await new Promise<void>((resolve, reject) => {
    wss.once("listening", resolve);
    wss.once("error", reject);
  });
  const sockets: ScriptedSocket[] = [];
  let taken = 0;
  let waiting: Array<() => void> = [];

  wss.on("connection", (ws) => {
    let scripted: ScriptedSocket | undefined;
    ws.on("message", (data) => {
      const text = String(data);
      const decoded = decodeFrame(text, { channel: "worker-to-server" });
      if (!decoded.ok) {
        scripted?.invalid.push(`${decoded.error.message}: ${text}`);
        return;
      }
      const frame = decoded.frame;
      if (!scripted) {
        if (frame.type !== "worker.hello") return;
        scripted = new ScriptedSocket(ws, frame);
        sockets.push(scripted);
        const onHello = options.onHello ?? "ready";
        if (onHello === "ready") {
          scripted.send({
            type: "worker.ready",
            protocol: 1,
            workerId: frame.workerId,
            heartbeatIntervalMs: options.heartbeatIntervalMs ?? 15_000,
            maxFrameBytes: 5 * 1024 * 1024,
          });
        } else if (onHello !== "silent") {
          scripted.send({ type: "error", code: onHello.refuse, message: `refused: ${onHello.refuse}` });
        }
        const wake = waiting;
        waiting = [];
        for (const w of wake) w();
        return;
      }
      if (frame.type === "ping" && options.answerPings !== false) {
        ws.send(JSON.stringify({ type: "pong", ...(frame.nonce ? { nonce: frame.nonce } : {}) }));
      }
      scripted.receive(frame);
    });
  });

  const address = wss.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    sockets,
    setOptions: (next) => {
      options = next;
    },
    nextSocket: async (timeoutMs = 5_000) => {
      const deadline = Date.now() + timeoutMs;
      while (sockets.length <= taken) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`no worker said hello within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiting.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return sockets[taken++]!;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
}
