import {
  DEFAULT_MAX_FRAME_BYTES,
  decodeFrame,
  encodeResultFrame,
  type ServerToWorkerFrame,
  type WorkerToServerFrame,
} from "@patchbay/protocol";
import {
  EventEmitter,
  holdWritesForTick,
  ReconnectingSocket,
  type WebSocketLike,
} from "@patchbay/protocol/runtime";
import WebSocket from "ws";
import { type BackoffPolicy, workerBackoff } from "./backoff";
import { DispatchError } from "./dispatch-error";

/**
 * Where the worker's link to the server stands.
 *
 * - `idle`: `run()` has not been called.
 * - `connecting`: a socket is opening or the server has not answered `worker.hello` yet.
 * - `ready`: the server accepted the worker; work can flow.
 * - `reconnecting`: the socket dropped; the worker waits out its backoff before trying again.
 * - `closed`: the worker stopped (or the server refused it for good).
 *
 * @example
 * ```ts
 * dispatch.on("state", ({ state }) => console.log("worker is", state));
 * ```
 */
export type ConnectionState = "idle" | "connecting" | "ready" | "reconnecting" | "closed";

/**
 * The largest frame this worker reads (its socket's receive limit), said in `worker.hello` so
 * the server never sends more: a `hosted.call` carries the conversation, images included.
 */
export const WORKER_RECEIVE_BYTES = 16 * 1024 * 1024;

/** Frames kept for replay after a reconnect, at most. */
const MAX_REPLAY = 512;

/** The events of {@link WorkerConnection}. */
export interface WorkerConnectionEvents {
  state: (event: { state: ConnectionState }) => void;
  ready: (event: { workerId: string; heartbeatIntervalMs: number; reconnected: boolean }) => void;
  disconnected: (event: { code: number; reason: string }) => void;
  reconnecting: (event: { attempt: number; delayMs: number; url: string; reason: string }) => void;
  frame: (frame: ServerToWorkerFrame) => void;
  /** The server refused the worker for good (bad key, protocol); the connection closes. */
  refused: (error: DispatchError) => void;
  error: (error: DispatchError) => void;
}

/** Options of {@link WorkerConnection}. */
export interface WorkerConnectionOptions {
  url: string;
  /** Built anew for every connect, so the server hears what the worker runs at that moment. */
  hello: () => WorkerToServerFrame & { type: "worker.hello" };
  backoff: BackoffPolicy;
  random: () => number;
  /** How long opening the socket and the hello handshake may take before the attempt is dropped. */
  connectTimeoutMs: number;
}

interface SentFrame {
  frame: WorkerToServerFrame;
  at: number;
}

/**
 * The worker's end of `/v1/worker`: a {@link ReconnectingSocket} (hello, heartbeat, backoff)
 * with the worker channel's rules on top: `worker.hello` on every connect, a refused key or
 * protocol ends it for good, and frames that finish work are not lost to a reconnect.
 * Internal to `Dispatch`.
 */
export class WorkerConnection extends EventEmitter<WorkerConnectionEvents> {
  readonly #options: WorkerConnectionOptions;
  readonly #socket: ReconnectingSocket<ServerToWorkerFrame>;
  #state: ConnectionState = "idle";
  #heartbeatMs = 0;
  /** The size limit of a `hosted.result`, as the server said in `worker.ready`. */
  #maxResultFrameBytes = DEFAULT_MAX_FRAME_BYTES;
  /** Durable frames that could not be sent while the socket was down. */
  #outbox: WorkerToServerFrame[] = [];
  /** Durable frames sent on the current socket, replayed after a reconnect (see `#onReady`). */
  #sent: SentFrame[] = [];
  #closed: Promise<void> | undefined;

  constructor(options: WorkerConnectionOptions) {
    super();
    this.#options = options;
    const { url, connectTimeoutMs } = options;
    this.#socket = new ReconnectingSocket<ServerToWorkerFrame>(
      {
        url,
        createSocket: (target) =>
          new WebSocket(target, {
            handshakeTimeout: connectTimeoutMs,
            maxPayload: WORKER_RECEIVE_BYTES,
          }) as unknown as WebSocketLike,
        // The frames of one turn of the event loop leave in one write.
        holdWrites: holdWritesForTick,
        backoff: workerBackoff(options.backoff, options.random),
        // The hello handshake has its own bound: a server that accepts the socket but never
        // answers must not hold the worker in `connecting` forever.
        helloTimeoutMs: connectTimeoutMs,
      },
      {
        hello: () => JSON.stringify({ ...options.hello(), maxFrameBytes: WORKER_RECEIVE_BYTES }),
        decode: (data) => this.#decode(data),
        handshake: (frame) => {
          if (frame.type === "worker.ready")
            return { welcome: true, heartbeatIntervalMs: frame.heartbeatIntervalMs };
          if (frame.type !== "error") return undefined;
          const code =
            frame.code === "unauthorized" || frame.code === "protocol_version" ? frame.code : "protocol";
          const error = new DispatchError(code, `server refused the worker: ${frame.message}`);
          // A wrong key or protocol stays wrong however often the worker retries; anything else
          // (a server still starting, a rate limit) is worth another attempt.
          if (code !== "protocol") return { fail: error };
          this.emit("error", error);
          return undefined;
        },
        welcome: (frame, reconnected) =>
          this.#onReady(frame as ServerToWorkerFrame & { type: "worker.ready" }, reconnected),
        frame: (frame) => this.emit("frame", frame),
        lost: (reason, code) => this.emit("disconnected", { code: code ?? 1006, reason }),
        reconnecting: ({ attempt, delayMs, reason }) =>
          this.emit("reconnecting", { attempt, delayMs, url, reason: reason || "the connection ended" }),
        failed: (error) => {
          this.emit("refused", error as DispatchError);
          void this.close("refused");
        },
        state: (state) => {
          if (state === "closed") this.#finish();
          else if (state !== "idle") this.#setState(state === "open" ? "ready" : state);
        },
        describeError: (event) => {
          const error = (event as { error?: NodeJS.ErrnoException })?.error;
          return error ? describeSocketError(error) : undefined;
        },
      },
    );
  }

  /** Where the link stands. */
  get state(): ConnectionState {
    return this.#state;
  }

  /** Opens the first socket. */
  start(): void {
    if (this.#state === "idle") this.#socket.open();
  }

  /**
   * Sends a frame. A durable frame (one that finishes work: results, `work.done`, `answer`) is
   * queued while the socket is down and sent after the next `worker.ready`; the rest (progress,
   * load) describe a moment and are dropped, since a fresh `worker.hello` says the same.
   */
  send(frame: WorkerToServerFrame, options: { durable?: boolean } = {}): void {
    // A result too large for the server becomes a failed result: the call fails once instead
    // of being refused (and waiting out its timeout).
    const sent =
      this.#state === "ready" &&
      this.#socket.send(
        frame.type === "hosted.result"
          ? encodeResultFrame(frame, this.#maxResultFrameBytes)
          : JSON.stringify(frame),
      );
    if (!options.durable) return;
    if (sent) {
      this.#sent.push({ frame, at: Date.now() });
      if (this.#sent.length > MAX_REPLAY) this.#sent.shift();
    } else if (this.#state !== "closed") {
      this.#outbox.push(frame);
    }
  }

  /** Drops the socket and dials again at once (the worker and the server are out of step). */
  reconnect(reason: string): void {
    this.#socket.reconnect(reason);
  }

  /** Closes the socket for good and stops reconnecting. */
  close(reason = "worker stopping"): Promise<void> {
    this.#closed ??= this.#socket.close(1000, reason).then(() => this.#finish());
    return this.#closed;
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.emit("state", { state });
  }

  #decode(data: unknown): ServerToWorkerFrame | undefined {
    const text = typeof data === "string" ? data : new Uint8Array(data as Buffer);
    const decoded = decodeFrame(text, { channel: "server-to-worker", maxBytes: WORKER_RECEIVE_BYTES });
    if (decoded.ok) return decoded.frame;
    this.emit(
      "error",
      new DispatchError("protocol", `server sent a frame this worker cannot read: ${decoded.error.message}`, {
        cause: decoded.error,
      }),
    );
    return undefined;
  }

  #onReady(frame: ServerToWorkerFrame & { type: "worker.ready" }, reconnected: boolean): void {
    this.#heartbeatMs = frame.heartbeatIntervalMs;
    this.#maxResultFrameBytes = frame.maxResultFrameBytes ?? frame.maxFrameBytes;
    // A frame sent just before a socket died may never have arrived, and nothing on the wire
    // acknowledges it. Frames that finish work are therefore sent again when the link is back:
    // those from the window in which a dead socket goes unnoticed, then those queued while down.
    // The server uses a finished result or `work.done` once, so a second copy is harmless.
    const window = 2 * this.#heartbeatMs + this.#options.connectTimeoutMs;
    const now = Date.now();
    const replay = this.#sent.filter((s) => now - s.at <= window).map((s) => s.frame);
    const queued = this.#outbox;
    this.#outbox = [];
    this.#sent = [];
    this.#setState("ready");
    for (const f of [...replay, ...queued]) this.send(f, { durable: true });
    this.emit("ready", {
      workerId: frame.workerId,
      heartbeatIntervalMs: frame.heartbeatIntervalMs,
      reconnected,
    });
  }

  #finish(): void {
    if (this.#state === "closed") return;
    this.#outbox = [];
    this.#sent = [];
    this.#setState("closed");
  }
}

/** A socket error in a few words, with Node's code where there is one. */
function describeSocketError(error: NodeJS.ErrnoException): string {
  const reasons: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "the host name does not resolve (DNS)",
    EAI_AGAIN: "the DNS lookup failed",
    ECONNRESET: "the connection was reset",
    EHOSTUNREACH: "the host is unreachable",
  };
  const code = error.code;
  if (code && reasons[code]) return `${reasons[code]} (${code})`;
  return code ? `${error.message} (${code})` : error.message;
}
