import type { ResponseEndEvent, ServerToClientFrame, SessionEvent } from "@patchbay/protocol";
import { isResponseEnd, PROTOCOL_VERSION } from "@patchbay/protocol";
import WebSocket from "ws";

type Frame = ServerToClientFrame;

/**
 * A bare client over `ws` speaking the protocol frames directly: the test driver for what the
 * real `@patchbay/client` hides (bad frames, floods, exact event sequences, dropped sockets).
 */
export class RawClient {
  readonly frames: Frame[] = [];
  private readonly waiters: { test: (f: Frame) => boolean; resolve: (f: Frame) => void }[] = [];
  closeInfo: { code: number; reason: string } | undefined;
  private readonly closed: Promise<{ code: number; reason: string }>;
  private cursor = 0;

  private constructor(
    readonly ws: WebSocket,
    answerPings = true,
  ) {
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as Frame;
      // The server's heartbeat: a JSON ping, answered with the same nonce (docs/protocol.md).
      if (frame.type === "ping" && answerPings) {
        ws.send(
          JSON.stringify({ type: "pong", ...(frame.nonce === undefined ? {} : { nonce: frame.nonce }) }),
        );
        return;
      }
      this.frames.push(frame);
      for (const waiter of [...this.waiters]) {
        if (waiter.test(frame)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(frame);
        }
      }
    });
    this.closed = new Promise((resolve) => {
      ws.on("close", (code, reason) => {
        this.closeInfo = { code, reason: String(reason) };
        resolve(this.closeInfo);
      });
    });
  }

  /** Opens a socket (no hello yet). `autoPong: false` makes a peer that ignores heartbeats. */
  static async connect(wsUrl: string, options: { autoPong?: boolean } = {}): Promise<RawClient> {
    const ws = new WebSocket(wsUrl, options);
    const client = new RawClient(ws, options.autoPong ?? true);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return client;
  }

  /** Connects and authenticates with a user token or the API key and secret. */
  static async open(
    wsUrl: string,
    auth: { kind: "user"; token: string } | { kind: "api_key"; apiKey: string; secret?: string },
    options: { autoPong?: boolean } = {},
  ): Promise<RawClient> {
    const client = await RawClient.connect(wsUrl, options);
    client.send({ type: "hello", protocol: PROTOCOL_VERSION, auth });
    const reply = await client.next((f) => f.type === "welcome" || f.type === "error");
    if (reply.type !== "welcome") throw new Error(`hello refused: ${JSON.stringify(reply)}`);
    return client;
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
  }

  /** The next frame (after those already taken by `next`) that passes `test`. */
  next<T extends Frame = Frame>(test: (f: Frame) => boolean, timeoutMs = 5_000): Promise<T> {
    for (let i = this.cursor; i < this.frames.length; i++) {
      const frame = this.frames[i]!;
      if (test(frame)) {
        this.cursor = i + 1;
        return Promise.resolve(frame as T);
      }
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(
          new Error(
            `timed out waiting for a frame; ${this.frames.length} received, the last: ${this.frames
              .slice(-8)
              .map((f) => f.type)
              .join(", ")}${lastError(this.frames)}`,
          ),
        );
      }, timeoutMs);
      const waiter = {
        test,
        resolve: (frame: Frame) => {
          clearTimeout(timer);
          this.cursor = this.frames.indexOf(frame) + 1;
          resolve(frame as T);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * Every frame so far that passes `test`, once there are at least `count` of them. Unlike `next`
   * it neither skips the frames `next` already took nor moves past any: for frames whose order
   * against the others is not fixed.
   */
  async matching(test: (f: Frame) => boolean, count: number, timeoutMs = 5_000): Promise<Frame[]> {
    const found = () => this.frames.filter(test);
    if (found().length >= count) return found();
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`timed out waiting for ${count} matching frames; ${found().length} received`));
      }, timeoutMs);
      const waiter = {
        test: (f: Frame) => test(f) && found().length >= count,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
    return found();
  }

  /** Waits for the next frame of a type. */
  nextOf<K extends Frame["type"]>(type: K, timeoutMs?: number): Promise<Extract<Frame, { type: K }>> {
    return this.next((f) => f.type === type, timeoutMs);
  }

  /** Creates a session and waits for `session.opened`. */
  async create(agent: string, extra: Record<string, unknown> = {}): Promise<string> {
    const requestId = `r_${Math.random().toString(36).slice(2)}`;
    this.send({ type: "session.create", requestId, agent, ...extra });
    const opened = await this.next(
      (f) =>
        (f.type === "session.opened" || f.type === "error") && "requestId" in f && f.requestId === requestId,
    );
    if (opened.type !== "session.opened") throw new Error(`create failed: ${JSON.stringify(opened)}`);
    return opened.session.id;
  }

  /** Every session event of a session received so far. */
  events(sessionId: string): SessionEvent[] {
    return this.frames.filter(
      (f): f is SessionEvent => "seq" in f && "sessionId" in f && f.sessionId === sessionId,
    ) as SessionEvent[];
  }

  /** Waits for the turn answering `commandId` to end. */
  async turnEnd(commandId: string, timeoutMs = 5_000) {
    return this.next<ResponseEndEvent>((f) => isResponseEnd(f) && f.commandId === commandId, timeoutMs);
  }

  /** Resolves when the socket closes. */
  whenClosed(): Promise<{ code: number; reason: string }> {
    return this.closed;
  }

  /** Closes like a browser tab would. */
  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close();
    await this.closed;
  }

  /** Drops the TCP connection without a closing handshake (a network failure). */
  drop(): void {
    this.ws.terminate();
  }
}

/** The last error frame received, for a timeout's message (what the server said, not only that it did). */
function lastError(frames: readonly Frame[]): string {
  const error = frames.findLast((f) => f.type === "error");
  return error ? `; the last error: ${JSON.stringify(error)}` : "";
}
