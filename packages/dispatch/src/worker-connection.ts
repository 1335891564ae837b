import {
  DEFAULT_MAX_FRAME_BYTES,
  decodeFrame,
  encodeResultFrame,
  type ServerToWorkerFrame,
  type WorkerToServerFrame,
} from "@patchbay/protocol";
import { EventEmitter } from "eventemitter3";
import WebSocket from "ws";
import { type BackoffPolicy, workerBackoffDelay } from "./backoff";
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

/** The heartbeat interval used until the server names its own in `worker.ready`. */
const DEFAULT_HEARTBEAT_MS = 15_000;

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
  reconnecting: (event: { attempt: number; delayMs: number }) => void;
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
 * The worker's socket to `/v1/worker`: opens it, says hello, keeps it alive with heartbeats,
 * reconnects with backoff, and makes sure frames that finish work are not lost to a reconnect.
 * Internal to `Dispatch`.
 */
export class WorkerConnection extends EventEmitter<WorkerConnectionEvents> {
  #options: WorkerConnectionOptions;
  #socket: WebSocket | undefined;
  #state: ConnectionState = "idle";
  #attempt = 0;
  #everReady = false;
  #closing = false;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;
  #connectTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeatMs = DEFAULT_HEARTBEAT_MS;
  /** The size limit of a `hosted.result`, as the server said in `worker.ready`. */
  #maxResultFrameBytes = DEFAULT_MAX_FRAME_BYTES;
  #lastHeard = 0;
  #pingNonce = 0;
  /** Durable frames that could not be sent while the socket was down. */
  #outbox: WorkerToServerFrame[] = [];
  /** Durable frames sent on the current socket, replayed after a reconnect (see `#onReady`). */
  #sent: SentFrame[] = [];
  #closed: Promise<void>;
  #resolveClosed!: () => void;

  constructor(options: WorkerConnectionOptions) {
    super();
    this.#options = options;
    this.#closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  /** Where the link stands. */
  get state(): ConnectionState {
    return this.#state;
  }

  /** Resolves once the connection is closed for good. */
  get closed(): Promise<void> {
    return this.#closed;
  }

  /** Opens the first socket. */
  start(): void {
    if (this.#state !== "idle") return;
    this.#connect();
  }

  /**
   * Sends a frame. A durable frame (one that finishes work: results, `work.done`, `answer`) is
   * queued while the socket is down and sent after the next `worker.ready`; the rest (progress,
   * load) describe a moment and are dropped, since a fresh `worker.hello` says the same.
   */
  send(frame: WorkerToServerFrame, options: { durable?: boolean } = {}): void {
    const socket = this.#socket;
    if (this.#state === "ready" && socket && socket.readyState === WebSocket.OPEN) {
      // A result too large for the server becomes a failed result: the call fails once instead
      // of being refused (and waiting out its timeout).
      socket.send(
        frame.type === "hosted.result"
          ? encodeResultFrame(frame, this.#maxResultFrameBytes)
          : JSON.stringify(frame),
      );
      if (options.durable) {
        this.#sent.push({ frame, at: Date.now() });
        if (this.#sent.length > MAX_REPLAY) this.#sent.shift();
      }
      return;
    }
    if (options.durable && this.#state !== "closed") {
      this.#outbox.push(frame);
    }
  }

  /** Closes the socket for good and stops reconnecting. */
  close(reason = "worker stopping"): Promise<void> {
    if (this.#state === "closed") return this.#closed;
    this.#closing = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#connectTimer);
    this.#stopHeartbeat();
    const socket = this.#socket;
    if (socket && (socket.readyState === WebSocket.OPEN || socket.readyState === WebSocket.CONNECTING)) {
      // A socket that does not finish its closing handshake in time is cut.
      const cut = setTimeout(() => socket.terminate(), 2_000);
      socket.once("close", () => clearTimeout(cut));
      if (socket.readyState === WebSocket.OPEN) socket.close(1000, reason);
      else socket.terminate();
    } else {
      this.#finish();
    }
    return this.#closed;
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.emit("state", { state });
  }

  #connect(): void {
    this.#setState("connecting");
    const socket = new WebSocket(this.#options.url, {
      handshakeTimeout: this.#options.connectTimeoutMs,
      maxPayload: WORKER_RECEIVE_BYTES,
    });
    this.#socket = socket;
    // The hello handshake has its own bound: a server that accepts the socket but never answers
    // must not hold the worker in `connecting` forever.
    this.#connectTimer = setTimeout(() => {
      if (this.#socket === socket && this.#state === "connecting") socket.terminate();
    }, this.#options.connectTimeoutMs);

    socket.on("open", () => {
      socket.send(JSON.stringify({ ...this.#options.hello(), maxFrameBytes: WORKER_RECEIVE_BYTES }));
    });
    socket.on("message", (data, isBinary) => {
      if (this.#socket !== socket) return;
      this.#lastHeard = Date.now();
      const text = isBinary ? new Uint8Array(data as Buffer) : String(data);
      const decoded = decodeFrame(text, { channel: "server-to-worker", maxBytes: WORKER_RECEIVE_BYTES });
      if (!decoded.ok) {
        this.emit(
          "error",
          new DispatchError(
            "protocol",
            `server sent a frame this worker cannot read: ${decoded.error.message}`,
            {
              cause: decoded.error,
            },
          ),
        );
        return;
      }
      this.#onFrame(socket, decoded.frame);
    });
    socket.on("error", () => {
      // Every socket error is followed by `close`, which decides what happens next.
    });
    socket.on("close", (code, reasonBuffer) => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      clearTimeout(this.#connectTimer);
      this.#stopHeartbeat();
      const reason = String(reasonBuffer);
      const wasUp = this.#state === "ready";
      if (wasUp) this.emit("disconnected", { code, reason });
      if (this.#closing || this.#state === "closed") {
        this.#finish();
        return;
      }
      this.#scheduleReconnect();
    });
  }

  #onFrame(socket: WebSocket, frame: ServerToWorkerFrame): void {
    if (frame.type === "ping") {
      socket.send(
        JSON.stringify({ type: "pong", ...(frame.nonce === undefined ? {} : { nonce: frame.nonce }) }),
      );
      return;
    }
    if (frame.type === "pong") return;
    if (this.#state === "connecting") {
      if (frame.type === "worker.ready") {
        this.#onReady(socket, frame);
        return;
      }
      if (frame.type === "error") {
        const fatal = frame.code === "unauthorized" || frame.code === "protocol_version";
        const error = new DispatchError(
          frame.code === "unauthorized"
            ? "unauthorized"
            : frame.code === "protocol_version"
              ? "protocol_version"
              : "protocol",
          `server refused the worker: ${frame.message}`,
        );
        // A wrong key or protocol stays wrong however often the worker retries; anything else
        // (a server still starting, a rate limit) is worth another attempt.
        if (fatal) {
          this.#closing = true;
          this.emit("refused", error);
          socket.close(1000, "refused");
        } else {
          this.emit("error", error);
        }
        return;
      }
      return;
    }
    this.emit("frame", frame);
  }

  #onReady(socket: WebSocket, frame: ServerToWorkerFrame & { type: "worker.ready" }): void {
    clearTimeout(this.#connectTimer);
    this.#heartbeatMs = frame.heartbeatIntervalMs;
    this.#maxResultFrameBytes = frame.maxResultFrameBytes ?? frame.maxFrameBytes;
    const reconnected = this.#everReady;
    this.#everReady = true;
    this.#attempt = 0;
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
    this.#startHeartbeat(socket);
    for (const f of [...replay, ...queued]) this.send(f, { durable: true });
    this.emit("ready", {
      workerId: frame.workerId,
      heartbeatIntervalMs: frame.heartbeatIntervalMs,
      reconnected,
    });
  }

  #startHeartbeat(socket: WebSocket): void {
    this.#stopHeartbeat();
    this.#lastHeard = Date.now();
    this.#heartbeatTimer = setInterval(() => {
      // A server that has said nothing for two intervals (not even a pong) is gone, even if the
      // TCP connection looks open: cut it and reconnect.
      if (Date.now() - this.#lastHeard > 2 * this.#heartbeatMs) {
        socket.terminate();
        return;
      }
      if (socket.readyState === WebSocket.OPEN) {
        this.#pingNonce = (this.#pingNonce + 1) % 1_000_000;
        socket.send(JSON.stringify({ type: "ping", nonce: String(this.#pingNonce) }));
      }
    }, this.#heartbeatMs);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
  }

  #scheduleReconnect(): void {
    const attempt = this.#attempt++;
    const delayMs = workerBackoffDelay(attempt, this.#options.backoff, this.#options.random);
    this.#setState("reconnecting");
    this.emit("reconnecting", { attempt: attempt + 1, delayMs });
    this.#retryTimer = setTimeout(() => {
      if (this.#closing) return;
      this.#connect();
    }, delayMs);
  }

  #finish(): void {
    if (this.#state === "closed") return;
    this.#outbox = [];
    this.#sent = [];
    this.#setState("closed");
    this.#resolveClosed();
  }
}
