import { decodeFrame, type ServerToWorkerFrame, type WorkerToServerFrame } from "@patchbay/protocol";
import WebSocket from "ws";

type Hello = WorkerToServerFrame & { type: "worker.hello" };

/**
 * A worker socket the test drives by hand over a real WebSocket: it says hello, records every
 * frame the server sends (each must decode against the protocol), and answers pings unless told
 * not to. For the dispatch module's tests.
 */
export class TestWorkerSocket {
  readonly frames: ServerToWorkerFrame[] = [];
  /** The size in bytes of each frame in `frames`, same order. */
  readonly sizes: number[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  answerPings = true;
  #ws: WebSocket;
  #waiters: Array<() => void> = [];

  private constructor(ws: WebSocket) {
    this.#ws = ws;
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })),
    );
    ws.on("message", (data: Buffer) => {
      // No size limit here: the tests check the sizes the server sends against what it promised.
      const decoded = decodeFrame(String(data), { channel: "server-to-worker", maxBytes: 2 ** 30 });
      if (!decoded.ok) throw new Error(`server sent an invalid frame: ${decoded.error.message}`);
      if (decoded.frame.type === "ping" && this.answerPings) {
        const { nonce } = decoded.frame;
        this.send(nonce === undefined ? { type: "pong" } : { type: "pong", nonce });
      }
      this.frames.push(decoded.frame);
      this.sizes.push(data.byteLength);
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  static async connect(baseUrl: string, hello: Partial<Hello> = {}): Promise<TestWorkerSocket> {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/v1/worker`, { maxPayload: 2 ** 30 });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    const socket = new TestWorkerSocket(ws);
    socket.send({
      type: "worker.hello",
      protocol: 1,
      apiKey: "pk_test",
      secret: "sk_test",
      workerId: `w_${Math.random().toString(36).slice(2)}`,
      capacity: 1,
      handles: { messages: true, calls: true },
      hosts: [],
      running: { work: [], calls: [] },
      ...hello,
    });
    return socket;
  }

  send(frame: WorkerToServerFrame): void {
    this.#ws.send(JSON.stringify(frame));
  }

  /** Sends text as it is, whatever its size or content. */
  sendText(text: string): void {
    this.#ws.send(text);
  }

  /** Sends bytes as a text message (`binary: false`) whatever they hold, e.g. text that is not UTF-8. */
  sendTextBytes(bytes: Uint8Array): void {
    this.#ws.send(bytes, { binary: false });
  }

  /** Whether the socket is still open. */
  get open(): boolean {
    return this.#ws.readyState === WebSocket.OPEN;
  }

  drop(): void {
    this.#ws.terminate();
  }

  close(): void {
    this.#ws.close();
  }

  /** The first frame of `type` matching `where`, already received or still to come. */
  async next<T extends ServerToWorkerFrame["type"]>(
    type: T,
    where: (frame: ServerToWorkerFrame & { type: T }) => boolean = () => true,
    timeoutMs = 5_000,
  ): Promise<ServerToWorkerFrame & { type: T }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.frames.find(
        (f): f is ServerToWorkerFrame & { type: T } =>
          f.type === type && where(f as ServerToWorkerFrame & { type: T }),
      );
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no '${type}' frame within ${timeoutMs} ms; got ${this.frames.map((f) => f.type)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
