// The kit's eyes: a WebSocket proxy between the worker under test and the real server. It records
// every frame both ways (and checks each frame the worker sends against the protocol), and lets a
// scenario drop a socket, go silent, inject frames the real server would never send, and keep the
// worker's answers to those to itself.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { decodeFrame, type WorkerToServerFrame } from "@patchbay/protocol";
import { WebSocket, WebSocketServer } from "ws";

/** A JSON frame as it crossed the proxy. */
export type Frame = { type: string; [field: string]: unknown };

/** One worker socket through the proxy. */
export class ProxiedConnection {
  readonly fromWorker: Frame[] = [];
  readonly toWorker: Frame[] = [];
  /** Worker frames that did not decode against the protocol, with the decoder's complaint. */
  readonly invalid: string[] = [];
  readonly closed: Promise<void>;
  /** Server-to-worker frames are swallowed while true (the server looks silent to the worker). */
  silent = false;
  /** Call ids of injected hosted calls: their results stay in the proxy. */
  readonly intercepted = new Set<string>();
  /** Nonces of injected pings: their pongs stay in the proxy. */
  readonly interceptedNonces = new Set<string>();
  #waiters: Array<() => void> = [];
  #markClosed!: () => void;

  constructor(
    readonly index: number,
    readonly worker: WebSocket,
    readonly upstream: WebSocket,
  ) {
    this.closed = new Promise((resolve) => {
      this.#markClosed = resolve;
    });
  }

  get hello(): Frame | undefined {
    return this.fromWorker.find((f) => f.type === "worker.hello");
  }

  get isClosed(): boolean {
    return this.worker.readyState === WebSocket.CLOSED || this.worker.readyState === WebSocket.CLOSING;
  }

  /** Sends a frame to the worker as if the server had sent it. */
  inject(frame: Frame | string): void {
    const text = typeof frame === "string" ? frame : JSON.stringify(frame);
    if (typeof frame !== "string") this.toWorker.push(frame);
    this.worker.send(text);
  }

  /** Cuts both sides without a closing handshake, like a lost network. */
  drop(): void {
    this.worker.terminate();
    this.upstream.terminate();
  }

  /** The first frame from the worker of `type` matching `where`, seen already or within `timeoutMs`. */
  next(type: string, where: (f: Frame) => boolean = () => true, timeoutMs = 5_000): Promise<Frame> {
    return waitFor(
      () => this.fromWorker.find((f) => f.type === type && where(f)),
      (wake) => this.#waiters.push(wake),
      timeoutMs,
      () => `no '${type}' frame from the worker within ${timeoutMs} ms; it sent: ${this.types()}`,
    );
  }

  /** The first frame to the worker of `type` matching `where`. */
  nextToWorker(type: string, where: (f: Frame) => boolean = () => true, timeoutMs = 5_000): Promise<Frame> {
    return waitFor(
      () => this.toWorker.find((f) => f.type === type && where(f)),
      (wake) => this.#waiters.push(wake),
      timeoutMs,
      () => `no '${type}' frame reached the worker within ${timeoutMs} ms`,
    );
  }

  types(): string {
    return this.fromWorker.map((f) => f.type).join(", ") || "nothing";
  }

  wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  markClosed(): void {
    this.#markClosed();
    this.wake();
  }
}

/** Polls `find` whenever `subscribe` wakes it, until it gives a value or the time is up. */
export async function waitFor<T>(
  find: () => T | undefined,
  subscribe: (wake: () => void) => void,
  timeoutMs: number,
  describe: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(describe());
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.min(left, 200));
      subscribe(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** The proxy: `url` is what the worker under test is given as `PATCHBAY_URL`. */
export class WorkerProxy {
  readonly connections: ProxiedConnection[] = [];
  #http: Server;
  #wss: WebSocketServer;
  #waiters: Array<() => void> = [];
  url = "";

  private constructor(readonly serverUrl: string) {
    this.#http = createServer((_req, res) => {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ error: { code: "not_found", message: "the kit's proxy forwards /v1/worker only" } }),
      );
    });
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024 });
    this.#http.on("upgrade", (req, socket, head) => {
      if (!req.url?.startsWith("/v1/worker")) {
        socket.destroy();
        return;
      }
      this.#wss.handleUpgrade(req, socket, head, (ws) => this.#connect(ws));
    });
  }

  static async start(serverUrl: string): Promise<WorkerProxy> {
    const proxy = new WorkerProxy(serverUrl);
    await new Promise<void>((resolve) => proxy.#http.listen(0, "127.0.0.1", resolve));
    proxy.url = `http://127.0.0.1:${(proxy.#http.address() as AddressInfo).port}`;
    return proxy;
  }

  /** The `n`th worker socket (0-based) once it has said hello. */
  connection(n: number, timeoutMs = 10_000): Promise<ProxiedConnection> {
    return waitFor(
      () => {
        const c = this.connections[n];
        return c?.hello ? c : undefined;
      },
      (wake) => this.#waiters.push(wake),
      timeoutMs,
      () =>
        `worker socket #${n + 1} did not say hello within ${timeoutMs} ms (${this.connections.length} opened)`,
    );
  }

  /** The socket whose worker got a hosted.call matching `where`. */
  receiverOf(where: (f: Frame) => boolean, timeoutMs = 5_000): Promise<ProxiedConnection> {
    return waitFor(
      () => this.connections.find((c) => c.toWorker.some((f) => f.type === "hosted.call" && where(f))),
      (wake) => this.#waiters.push(wake),
      timeoutMs,
      () => `no worker got the hosted call within ${timeoutMs} ms`,
    );
  }

  /** Every frame any worker socket sent, in order per socket. */
  allFromWorkers(): Frame[] {
    return this.connections.flatMap((c) => c.fromWorker);
  }

  invalidFrames(): string[] {
    return this.connections.flatMap((c) => c.invalid);
  }

  async close(): Promise<void> {
    for (const c of this.connections) c.drop();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }

  #wake(): void {
    for (const w of this.#waiters.splice(0)) w();
  }

  #connect(worker: WebSocket): void {
    const upstream = new WebSocket(`${this.serverUrl.replace(/^http/, "ws")}/v1/worker`, {
      maxPayload: 64 * 1024 * 1024,
    });
    const connection = new ProxiedConnection(this.connections.length, worker, upstream);
    this.connections.push(connection);
    const pending: string[] = [];
    const wake = () => {
      connection.wake();
      this.#wake();
    };
    upstream.on("open", () => {
      for (const text of pending.splice(0)) upstream.send(text);
    });
    upstream.on("message", (data) => {
      const text = String(data);
      if (connection.silent) return;
      try {
        connection.toWorker.push(JSON.parse(text) as Frame);
      } catch {
        // Not JSON: forwarded as it is.
      }
      if (worker.readyState === WebSocket.OPEN) worker.send(text);
      wake();
    });
    worker.on("message", (data) => {
      const text = String(data);
      const decoded = decodeFrame(text, { channel: "worker-to-server" });
      let frame: Frame | undefined;
      if (decoded.ok) {
        frame = decoded.frame as WorkerToServerFrame as Frame;
      } else {
        connection.invalid.push(
          `${decoded.error.code} at ${decoded.error.path ?? "(frame)"}: ${text.slice(0, 300)}`,
        );
        try {
          frame = JSON.parse(text) as Frame;
        } catch {
          frame = undefined;
        }
      }
      if (frame) connection.fromWorker.push(frame);
      wake();
      // Answers to what the kit injected stay here; the server never asked for them.
      if (frame?.type === "hosted.result" && connection.intercepted.has(String(frame.callId))) return;
      if (frame?.type === "pong" && connection.interceptedNonces.has(String(frame.nonce))) return;
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else if (upstream.readyState === WebSocket.CONNECTING) pending.push(text);
    });
    const closeBoth = (code: number, reason: Buffer) => {
      const safe = code >= 1000 && code < 5000 && code !== 1005 && code !== 1006 ? code : 1000;
      if (worker.readyState === WebSocket.OPEN) worker.close(safe, reason);
      if (upstream.readyState === WebSocket.OPEN) upstream.close(safe, reason);
      if (upstream.readyState === WebSocket.CONNECTING) upstream.terminate();
    };
    upstream.on("close", (code, reason) => {
      if (process.env.KIT_DEBUG)
        console.error(`upstream #${connection.index} closed ${code} ${String(reason)}`);
      if (code === 1006) worker.terminate();
      else closeBoth(code, reason);
    });
    worker.on("close", (code, reason) => {
      if (code === 1006) upstream.terminate();
      else closeBoth(code, reason);
      connection.markClosed();
      wake();
    });
    upstream.on("error", () => worker.terminate());
    worker.on("error", () => upstream.terminate());
  }
}
