import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ClientToServerFrame, ServerToClientFrame } from "@patchbay/protocol";
import { type WebSocket, WebSocketServer } from "ws";

/**
 * One client socket as a test sees it: every frame the client sent, in order, and the means to
 * answer, stall or drop it.
 */
export class ScriptedSocket {
  readonly received: ClientToServerFrame[] = [];
  readonly #socket: WebSocket;
  #cursor = 0;
  readonly #waiters = new Set<() => void>();
  closed = false;

  constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.on("message", (data) => {
      this.received.push(JSON.parse(String(data)) as ClientToServerFrame);
      this.#wake();
    });
    socket.on("close", () => {
      this.closed = true;
      this.#wake();
    });
  }

  /**
   * The next frame of a type the test has not consumed yet (frames of other types are skipped).
   * Rejects after `timeoutMs`.
   */
  async next<T extends ClientToServerFrame["type"]>(
    type: T,
    timeoutMs = 5_000,
  ): Promise<Extract<ClientToServerFrame, { type: T }>> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (; this.#cursor < this.received.length; this.#cursor += 1) {
        const frame = this.received[this.#cursor]!;
        if (frame.type === type) {
          this.#cursor += 1;
          return frame as Extract<ClientToServerFrame, { type: T }>;
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    throw new Error(
      `no '${type}' frame within ${timeoutMs} ms; got ${this.received.map((f) => f.type).join(", ")}`,
    );
  }

  /** Every frame of a type received so far. */
  all<T extends ClientToServerFrame["type"]>(type: T): Array<Extract<ClientToServerFrame, { type: T }>> {
    return this.received.filter((f) => f.type === type) as Array<Extract<ClientToServerFrame, { type: T }>>;
  }

  send(frame: ServerToClientFrame | Record<string, unknown>): void {
    this.#socket.send(JSON.stringify(frame));
  }

  sendRaw(text: string): void {
    this.#socket.send(text);
  }

  welcome(overrides: Partial<Extract<ServerToClientFrame, { type: "welcome" }>> = {}): void {
    this.send({
      type: "welcome",
      protocol: 1,
      connectionId: "k_test",
      user: { id: "u_1" },
      heartbeatIntervalMs: 15_000,
      maxFrameBytes: 5 * 1024 * 1024,
      ...overrides,
    });
  }

  /** Cuts the connection without a closing handshake, as a crashed server or a dead network would. */
  drop(): void {
    this.#socket.terminate();
  }

  close(code = 1000, reason = ""): void {
    this.#socket.close(code, reason);
  }

  #wake(): void {
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const wake of waiters) wake();
  }
}

/**
 * A real `ws` server on 127.0.0.1 (port 0) whose every answer the test scripts. HTTP requests
 * go to `onHttp` when set.
 */
export class ScriptedServer {
  readonly sockets: ScriptedSocket[] = [];
  onHttp: ((req: IncomingMessage, res: ServerResponse, body: string) => void) | undefined;
  readonly #http: Server;
  readonly #wss: WebSocketServer;
  #claimed = 0;
  readonly #waiters = new Set<() => void>();

  private constructor(http: Server, wss: WebSocketServer) {
    this.#http = http;
    this.#wss = wss;
    wss.on("connection", (socket) => {
      this.sockets.push(new ScriptedSocket(socket));
      const waiters = [...this.#waiters];
      this.#waiters.clear();
      for (const wake of waiters) wake();
    });
  }

  static async start(): Promise<ScriptedServer> {
    let server: ScriptedServer | undefined;
    const http = createServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += chunk;
      });
      req.on("end", () => {
        if (server?.onHttp) server.onHttp(req, res, body);
        else res.writeHead(404).end();
      });
    });
    const wss = new WebSocketServer({ server: http, path: "/v1/client" });
    server = new ScriptedServer(http, wss);
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    return server;
  }

  get baseUrl(): string {
    const { port } = this.#http.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** The next socket the test has not claimed yet. */
  async nextConnection(timeoutMs = 5_000): Promise<ScriptedSocket> {
    const deadline = Date.now() + timeoutMs;
    while (this.sockets.length <= this.#claimed) {
      if (Date.now() >= deadline) throw new Error(`no new connection within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.#waiters.add(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const socket = this.sockets[this.#claimed]!;
    this.#claimed += 1;
    return socket;
  }

  /** Claims the next socket, reads its hello and welcomes it. */
  async accept(): Promise<ScriptedSocket> {
    const socket = await this.nextConnection();
    await socket.next("hello");
    socket.welcome();
    return socket;
  }

  async close(): Promise<void> {
    for (const client of this.#wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.#http.close(() => resolve()));
  }
}
