// What the attack scenario (8) shares between its processes: the server's credentials and a bare
// protocol socket. The agent and the mutated frames are the chaos suite's
// (packages/e2e/fixtures/chaos-inputs.ts).
import { PROTOCOL_VERSION } from "@patchbay/protocol";
import WebSocket from "ws";

export const HOSTILE_SECRET = "bench-hostile-secret-of-at-least-32-bytes";
export const HOSTILE_API_KEY = "pk_bench_hostile";

type Frame = { type: string; [key: string]: unknown };

/** A bare `/v1/client` socket speaking frames: the healthy client and each attacker. */
export class ProtocolSocket {
  readonly errors: Frame[] = [];
  closed = false;
  private readonly waiters = new Map<string, (frame: Frame) => void>();

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      if (frame.type === "error") {
        if (this.errors.length >= 64) this.errors.shift();
        this.errors.push(frame);
      }
      const key = waiterKey(frame);
      const waiter = key === undefined ? undefined : this.waiters.get(key);
      if (waiter && key !== undefined) {
        this.waiters.delete(key);
        waiter(frame);
      }
    });
    ws.on("close", () => {
      this.closed = true;
      for (const [key, waiter] of this.waiters) {
        this.waiters.delete(key);
        waiter({ type: "closed" });
      }
    });
    ws.on("error", () => {});
  }

  /** Connects and says hello with a user token. */
  static async open(url: string, token: string): Promise<ProtocolSocket> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    const socket = new ProtocolSocket(ws);
    const welcome = socket.wait("hello:", () =>
      socket.send({ type: "hello", protocol: PROTOCOL_VERSION, auth: { kind: "user", token } }),
    );
    const reply = await welcome;
    if (reply.type !== "welcome") throw new Error(`hello refused: ${JSON.stringify(reply)}`);
    return socket;
  }

  send(frame: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN)
      this.ws.send(typeof frame === "string" || Buffer.isBuffer(frame) ? frame : JSON.stringify(frame));
  }

  /** Creates a session and resolves with its id. */
  async create(agent: string, extra: Record<string, unknown> = {}): Promise<string> {
    const requestId = `r_${Math.random().toString(36).slice(2)}`;
    const opened = await this.wait(`request:${requestId}`, () =>
      this.send({ type: "session.create", requestId, agent, ...extra }),
    );
    if (opened.type !== "session.opened") throw new Error(`create failed: ${JSON.stringify(opened)}`);
    return (opened.session as { id: string }).id;
  }

  /** Sends a message and resolves when its turn ends (`response.completed` or `.failed`). */
  async turn(sessionId: string, commandId: string, text: string, timeoutMs: number): Promise<Frame> {
    const key = `command:${commandId}`;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.waiters.delete(key);
        const last = this.errors.at(-1);
        reject(
          new Error(`turn ${commandId} did not end within ${timeoutMs} ms (last error: ${last?.message})`),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        this.wait(key, () => this.send({ type: "message.send", sessionId, commandId, text })),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private wait(key: string, start: () => void): Promise<Frame> {
    const reply = new Promise<Frame>((resolve) => this.waiters.set(key, resolve));
    start();
    return reply;
  }

  close(): void {
    this.ws.terminate();
  }
}

/** What a waiting caller is keyed by: the hello's answer, a request's answer, a turn's end. */
function waiterKey(frame: Frame): string | undefined {
  if (frame.type === "welcome") return "hello:";
  if (frame.type === "error" && frame.requestId === undefined && frame.commandId === undefined)
    return "hello:";
  if (typeof frame.requestId === "string" && (frame.type === "session.opened" || frame.type === "error"))
    return `request:${frame.requestId}`;
  if (
    typeof frame.commandId === "string" &&
    (frame.type === "response.completed" || frame.type === "response.failed")
  )
    return `command:${frame.commandId}`;
  return undefined;
}
