import {
  type ClientToServerFrame,
  decodeFrame,
  encodeResultFrame,
  PROTOCOL_VERSION,
  type ServerToClientFrame,
} from "@patchbay/protocol";
import { EventEmitter } from "eventemitter3";
import { type BackoffOptions, backoffDelay } from "./backoff";
import {
  AuthError,
  type ClientError,
  DisconnectedError,
  errorFromWire,
  ProtocolViolationError,
} from "./errors";
import { SOCKET_OPEN, type WebSocketFactory, type WebSocketLike } from "./websocket-like";

/**
 * Where the client's socket stands. `connecting` is the first dial; `reconnecting` covers the
 * wait and the redial after a socket was lost; `closed` is final (`client.close()`).
 *
 * @example
 * ```ts
 * client.on("state", (state) => (banner.hidden = state === "open"));
 * ```
 */
export type ConnectionState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

/**
 * The credentials a socket presents in `hello`.
 *
 * @example
 * ```ts
 * const auth: HelloAuth = { kind: "user", token };
 * ```
 */
export type HelloAuth =
  | { kind: "user"; token: string }
  | { kind: "api_key"; apiKey: string; secret?: string };

const MAX_INCOMING_FRAME_BYTES = 64 * 1024 * 1024;

/** The server's `welcome` frame. */
export type WelcomeFrame = Extract<ServerToClientFrame, { type: "welcome" }>;

/**
 * How {@link Connection} dials, authenticates, keeps the socket alive and reconnects.
 *
 * @example
 * ```ts
 * const options: ConnectionOptions = { url, createSocket, auth: async () => ({ kind: "user", token }) };
 * ```
 */
export interface ConnectionOptions {
  /** The socket URL, `ws(s)://host/v1/client`. */
  url: string;
  createSocket: WebSocketFactory;
  /**
   * The credentials for the next `hello`. `refresh` is true after the server refused the last
   * ones, so a token provider can mint a fresh token.
   */
  auth: (context: { refresh: boolean }) => Promise<HelloAuth>;
  /** Whether refused credentials are worth one refresh (a token provider is set). */
  canRefreshAuth?: () => boolean;
  backoff?: BackoffOptions;
  /** Consecutive failed dials before the connection gives up and goes `idle`. Default unbounded. */
  maxReconnectAttempts?: number;
  /** Ping period. Default: what the server's `welcome` asks for. */
  heartbeatIntervalMs?: number;
  /** A socket that receives nothing for this long is dead. Default twice the ping period. */
  heartbeatTimeoutMs?: number;
  /** How long a dial may take to be welcomed. Default 10 s. */
  helloTimeoutMs?: number;
  clientInfo?: { name: string; version: string };
}

/**
 * Events of a {@link Connection}.
 *
 * @example
 * ```ts
 * connection.on("welcome", (welcome) => resumeSessions(welcome.connectionId));
 * ```
 */
export interface ConnectionEvents {
  state: [state: ConnectionState, previous: ConnectionState];
  /** A socket was authenticated; `reconnect` is false only for the first one. */
  welcome: [frame: WelcomeFrame, reconnect: boolean];
  /** A frame after `welcome` other than heartbeats. */
  frame: [frame: ServerToClientFrame];
  /** A welcomed socket went away; a reconnect follows. */
  lost: [error: DisconnectedError];
  /** The connection stopped trying (credentials refused, protocol refused, or too many failed dials). */
  failed: [error: ClientError];
  /** Something worth reporting that did not end the connection. */
  error: [error: ClientError];
}

/**
 * One WebSocket to `/v1/client`, kept alive: `hello` with auth on every dial, heartbeats with a
 * dead-connection timeout, and redials with capped exponential backoff and full jitter.
 *
 * @example
 * ```ts
 * const connection = new Connection({ url, createSocket, auth: async () => ({ kind: "user", token }) });
 * connection.on("frame", handle);
 * connection.open();
 * ```
 */
export class Connection extends EventEmitter<ConnectionEvents> {
  readonly #options: ConnectionOptions;
  #state: ConnectionState = "idle";
  #socket: WebSocketLike | undefined;
  /** Bumped per dial so that callbacks of an abandoned socket are ignored. */
  #generation = 0;
  #failedDials = 0;
  #welcomedBefore = false;
  #refreshAuth = false;
  #authRefreshed = false;
  #welcome: WelcomeFrame | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #helloTimer: ReturnType<typeof setTimeout> | undefined;
  #deadTimer: ReturnType<typeof setTimeout> | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  #pingCount = 0;

  constructor(options: ConnectionOptions) {
    super();
    this.#options = options;
  }

  /** The current state. */
  get state(): ConnectionState {
    return this.#state;
  }

  /** The `welcome` of the current socket, while it is open. */
  get welcome(): WelcomeFrame | undefined {
    return this.#state === "open" ? this.#welcome : undefined;
  }

  /** Starts dialing if the connection is idle; does nothing otherwise. */
  open(): void {
    if (this.#state === "idle") void this.#dial("connecting");
  }

  /**
   * Writes a frame if the socket is open and welcomed. Returns false (and writes nothing)
   * otherwise: callers keep what must survive a reconnect and send it again after `welcome`.
   */
  send(frame: ClientToServerFrame): boolean {
    if (this.#state !== "open" || !this.#socket || this.#socket.readyState !== SOCKET_OPEN) return false;
    const welcome = this.#welcome;
    // A result too large for the server becomes a failed result: the call fails once instead
    // of being refused (and waiting out its timeout).
    this.#socket.send(
      frame.type === "tool.result" && welcome
        ? encodeResultFrame(frame, welcome.maxResultFrameBytes ?? welcome.maxFrameBytes)
        : JSON.stringify(frame),
    );
    return true;
  }

  /** Drops the current socket (if any) and dials again at once, e.g. after new credentials. */
  reconnect(): void {
    if (this.#state === "closed") return;
    this.#abandonSocket(4000, "reconnecting");
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    if (wasOpen) this.emit("lost", new DisconnectedError("reconnecting with new credentials"));
    this.#failedDials = 0;
    void this.#dial(this.#welcomedBefore ? "reconnecting" : "connecting");
  }

  /** Closes the socket for good. */
  close(): void {
    if (this.#state === "closed") return;
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    this.#abandonSocket(1000, "client closed", true);
    this.#setState("closed");
    if (wasOpen) this.emit("lost", new DisconnectedError("the client was closed"));
  }

  async #dial(state: "connecting" | "reconnecting"): Promise<void> {
    this.#setState(state);
    const generation = ++this.#generation;
    let auth: HelloAuth;
    try {
      auth = await this.#options.auth({ refresh: this.#refreshAuth });
    } catch (error) {
      if (generation !== this.#generation || this.#state === "closed") return;
      this.#giveUp(
        error instanceof AuthError ? error : new AuthError(`no credentials: ${(error as Error).message}`),
      );
      return;
    }
    this.#refreshAuth = false;
    if (generation !== this.#generation || this.#state === "closed") return;

    let socket: WebSocketLike;
    try {
      socket = this.#options.createSocket(this.#options.url);
    } catch (error) {
      this.emit("error", new DisconnectedError(`cannot open ${this.#options.url}`, { cause: error }));
      this.#scheduleRedial();
      return;
    }
    this.#socket = socket;
    this.#helloTimer = setTimeout(
      () => this.#drop(generation, "no welcome in time"),
      this.#options.helloTimeoutMs ?? 10_000,
    );
    socket.onopen = () => {
      if (generation !== this.#generation) return;
      const hello: ClientToServerFrame = { type: "hello", protocol: PROTOCOL_VERSION, auth };
      if (this.#options.clientInfo) hello.client = this.#options.clientInfo;
      socket.send(JSON.stringify(hello));
    };
    socket.onmessage = (event) => this.#onMessage(generation, event.data);
    socket.onclose = (event) => this.#onClosed(generation, `closed ${event.code} ${event.reason}`.trim());
    // The close event that follows an error carries everything; this only keeps it from being thrown.
    socket.onerror = () => {};
  }

  #onMessage(generation: number, data: unknown): void {
    if (generation !== this.#generation) return;
    this.#armDeadTimer(generation);
    if (typeof data !== "string") {
      this.emit("error", new ProtocolViolationError("the server sent a binary frame"));
      return;
    }
    // The server's frame limit bounds what it accepts, not what it sends: a conversation item
    // with a 5 MiB image is more than 5 MiB of JSON. The socket already holds the frame anyway.
    const decoded = decodeFrame(data, { channel: "server-to-client", maxBytes: MAX_INCOMING_FRAME_BYTES });
    if (!decoded.ok) {
      // Newer servers may send frame types this client does not know: ignoring them is the rule.
      if (decoded.error.code === "unknown_frame_type") return;
      this.emit(
        "error",
        new ProtocolViolationError(`undecodable frame from the server: ${decoded.error.message}`, {
          wireCode: decoded.error.code,
          ...(decoded.error.path === undefined ? {} : { path: decoded.error.path }),
        }),
      );
      return;
    }
    const frame = decoded.frame;
    if (frame.type === "ping") {
      this.#socket?.send(
        JSON.stringify(frame.nonce === undefined ? { type: "pong" } : { type: "pong", nonce: frame.nonce }),
      );
      return;
    }
    if (frame.type === "pong") return;
    if (this.#state !== "open") {
      this.#beforeWelcome(generation, frame);
      return;
    }
    this.emit("frame", frame);
  }

  #beforeWelcome(generation: number, frame: ServerToClientFrame): void {
    if (frame.type === "welcome") {
      clearTimeout(this.#helloTimer);
      this.#welcome = frame;
      this.#failedDials = 0;
      this.#authRefreshed = false;
      const reconnect = this.#welcomedBefore;
      this.#welcomedBefore = true;
      this.#setState("open");
      this.#startHeartbeat(generation, frame.heartbeatIntervalMs);
      this.emit("welcome", frame, reconnect);
      return;
    }
    if (frame.type === "error") {
      const error = errorFromWire(frame);
      if (error instanceof AuthError) {
        if (!this.#authRefreshed && (this.#options.canRefreshAuth?.() ?? false)) {
          // One refresh per refusal: a provider that keeps handing out bad tokens must not loop.
          this.#authRefreshed = true;
          this.#refreshAuth = true;
          this.#abandonSocket(4001, "refreshing credentials");
          this.#clearTimers();
          void this.#dial(this.#state === "reconnecting" ? "reconnecting" : "connecting");
          return;
        }
        this.#giveUp(error);
        return;
      }
      if (frame.code === "protocol_version") {
        this.#giveUp(error);
        return;
      }
      // Anything else before welcome: report it and let the close (or the hello timeout) redial.
      this.emit("error", error);
    }
  }

  #startHeartbeat(generation: number, serverIntervalMs: number): void {
    const interval = this.#options.heartbeatIntervalMs ?? serverIntervalMs;
    this.#pingTimer = setInterval(() => {
      if (generation !== this.#generation) return;
      this.#pingCount += 1;
      this.send({ type: "ping", nonce: String(this.#pingCount) });
    }, interval);
    this.#armDeadTimer(generation);
  }

  #armDeadTimer(generation: number): void {
    if (this.#state !== "open") return;
    clearTimeout(this.#deadTimer);
    const interval = this.#options.heartbeatIntervalMs ?? this.#welcome?.heartbeatIntervalMs ?? 15_000;
    const timeout = this.#options.heartbeatTimeoutMs ?? interval * 2;
    this.#deadTimer = setTimeout(() => this.#drop(generation, `nothing received for ${timeout} ms`), timeout);
  }

  /** Gives up on a socket that is silent (dead) or never welcomed us. */
  #drop(generation: number, reason: string): void {
    if (generation !== this.#generation) return;
    this.#abandonSocket(4000, reason);
    this.#handleLoss(reason);
  }

  #onClosed(generation: number, reason: string): void {
    if (generation !== this.#generation) return;
    this.#generation += 1;
    this.#socket = undefined;
    this.#handleLoss(reason);
  }

  #handleLoss(reason: string): void {
    this.#clearTimers();
    if (this.#state === "closed" || this.#state === "idle") return;
    if (this.#state === "open") this.emit("lost", new DisconnectedError(`connection lost: ${reason}`));
    this.#scheduleRedial();
  }

  #scheduleRedial(): void {
    const max = this.#options.maxReconnectAttempts ?? Number.POSITIVE_INFINITY;
    if (this.#failedDials >= max) {
      this.#giveUp(new DisconnectedError(`gave up after ${this.#failedDials} failed reconnect attempts`));
      return;
    }
    const delay = backoffDelay(this.#failedDials, this.#options.backoff);
    this.#failedDials += 1;
    this.#setState("reconnecting");
    this.#retryTimer = setTimeout(() => void this.#dial("reconnecting"), delay);
  }

  #giveUp(error: ClientError): void {
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    this.#abandonSocket(1000, error.message.slice(0, 100));
    this.#failedDials = 0;
    this.#authRefreshed = false;
    this.#setState("idle");
    if (wasOpen) this.emit("lost", new DisconnectedError(error.message, { cause: error }));
    this.emit("failed", error);
  }

  #abandonSocket(code: number, reason: string, graceful = false): void {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#generation += 1;
    if (!socket) return;
    socket.onopen = null;
    socket.onmessage = null;
    socket.onclose = null;
    socket.onerror = () => {};
    try {
      // A dead peer never answers the closing handshake; `ws` can cut the socket at once.
      if (socket.terminate && !graceful) socket.terminate();
      else socket.close(code, reason);
    } catch {
      // Closing a socket that never opened throws in some runtimes; it is gone either way.
    }
  }

  #clearTimers(): void {
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#helloTimer);
    clearTimeout(this.#deadTimer);
    clearInterval(this.#pingTimer);
    this.#retryTimer = undefined;
    this.#helloTimer = undefined;
    this.#deadTimer = undefined;
    this.#pingTimer = undefined;
  }

  #setState(state: ConnectionState): void {
    if (state === this.#state) return;
    const previous = this.#state;
    this.#state = state;
    this.emit("state", state, previous);
  }
}
