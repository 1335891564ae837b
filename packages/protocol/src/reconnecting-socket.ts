import { type BackoffOptions, backoffDelay } from "./backoff";
import { SOCKET_OPEN, type WebSocketFactory, type WebSocketLike } from "./websocket-like";

/**
 * Where a {@link ReconnectingSocket} stands. `connecting` is the first dial; `reconnecting`
 * covers the wait and the redial after a socket was lost; `idle` after it gave up (it may be
 * opened again); `closed` is final.
 *
 * @example
 * ```ts
 * socket.state === "open" ? send(frame) : queue(frame);
 * ```
 */
export type ReconnectingSocketState = "idle" | "connecting" | "open" | "reconnecting" | "closed";

/**
 * What a frame that arrived before the welcome means for the handshake.
 *
 * @example
 * ```ts
 * handshake: (f) => (f.type === "worker.ready" ? { welcome: true, heartbeatIntervalMs: f.heartbeatIntervalMs } : undefined)
 * ```
 */
export type HandshakeStep =
  /** The welcome: the socket is open; the server pings every `heartbeatIntervalMs`. */
  | { welcome: true; heartbeatIntervalMs: number }
  /** Refused for good (credentials, protocol version): stop trying. */
  | { fail: Error }
  /** Dial again at once (say, with fresh credentials), without counting a failed dial. */
  | { redial: true }
  /** Not an answer to the hello: nothing happens. */
  | undefined;

/**
 * The frames a {@link ReconnectingSocket} reads: any with a `type`; it answers `ping` itself.
 *
 * @example
 * ```ts
 * const ping: HeartbeatFrame = { type: "ping", nonce: "17" };
 * ```
 */
export interface HeartbeatFrame {
  type: string;
  nonce?: string;
}

/**
 * What the channel decides on top of the socket: the hello, the reading of frames, the
 * handshake, and where frames and losses go. The client channel and the worker channel each
 * give their own.
 *
 * @example
 * ```ts
 * const hooks: ReconnectingSocketHooks<Frame> = { hello: () => JSON.stringify(hello), decode, handshake, welcome, frame, lost, reconnecting, failed, state };
 * ```
 */
export interface ReconnectingSocketHooks<F extends HeartbeatFrame> {
  /**
   * The hello to write once the socket opens, prepared before each dial (credentials may be
   * minted here). Throwing gives up with the thrown error.
   */
  hello(): string | Promise<string>;
  /** Reads one message: the frame, or undefined to drop it (the hook reports what it must). */
  decode(data: unknown): F | undefined;
  /** A frame before the welcome (heartbeats aside): what it means for the handshake. */
  handshake(frame: F): HandshakeStep;
  /** The socket is open (`reconnect`: an earlier socket was open before). */
  welcome(frame: F, reconnect: boolean): void;
  /** A frame after the welcome, heartbeats aside. */
  frame(frame: F): void;
  /** An open socket went away (`code` when it closed, undefined when it was dropped here). */
  lost(reason: string, code: number | undefined): void;
  /** A redial is scheduled after `delayMs` (attempt 1 is the first redial since the last welcome). */
  reconnecting(event: { attempt: number; delayMs: number; reason: string }): void;
  /** The socket stopped trying and went `idle`. */
  failed(error: Error): void;
  state(state: ReconnectingSocketState, previous: ReconnectingSocketState): void;
  /** Words for a socket's error event; kept as the reason of the close that follows. */
  describeError?(event: unknown): string | undefined;
  /**
   * Before the first welcome, an error `describeError` explained: an error to give up with at
   * once (a wrong address stays wrong), or undefined to retry.
   */
  unreachable?(reason: string, cause: unknown): Error | undefined;
  /** The error for giving up: after too many failed dials, or when `createSocket` threw. */
  exhausted?(message: string): Error;
}

/**
 * How a {@link ReconnectingSocket} dials.
 *
 * @example
 * ```ts
 * const options: ReconnectingSocketOptions = { url: "ws://127.0.0.1:8787/v1/worker", createSocket: (url) => new WebSocket(url) };
 * ```
 */
export interface ReconnectingSocketOptions {
  url: string;
  createSocket: WebSocketFactory;
  backoff?: BackoffOptions;
  /** Consecutive failed dials before it gives up and goes `idle`. Default unbounded. */
  maxReconnectAttempts?: number;
  /** How long a dial may take to be welcomed. Default 10 s. */
  helloTimeoutMs?: number;
  /** Overrides the heartbeat interval the welcome names. */
  heartbeatIntervalMs?: number;
  /** A socket on which nothing arrived for this long is dead. Default twice the interval. */
  heartbeatTimeoutMs?: number;
  /**
   * Called with the socket before each write. Node peers pass `holdWritesForTick`, so the frames
   * of one turn of the event loop leave in one write; a browser's `WebSocket` has nothing to hold
   * (and its bundle does not carry the code).
   */
  holdWrites?: (socket: WebSocketLike) => void;
}

/** How long a closing handshake may take before the socket is cut. */
const CLOSE_GRACE_MS = 2_000;

/**
 * One peer's end of a Patchbay channel (a page's `/v1/client`, a worker's `/v1/worker`), kept
 * alive: a hello on every dial, a welcome within `helloTimeoutMs`, redials with capped
 * exponential backoff and full jitter, and the heartbeat both channels share: the server sends
 * `ping` with a nonce every interval and this end answers `pong` with the same nonce; when
 * nothing arrived for one interval it asks with a `ping` of its own, and a socket on which
 * nothing arrived for two intervals is dead (dropped, then redialled and resumed by the
 * channel's `welcome` hook).
 *
 * @example
 * ```ts
 * const socket = new ReconnectingSocket<Frame>({ url, createSocket }, hooks);
 * socket.open();
 * socket.send(JSON.stringify({ type: "load", running: 1 }));
 * ```
 */
export class ReconnectingSocket<F extends HeartbeatFrame> {
  readonly #options: ReconnectingSocketOptions;
  readonly #hooks: ReconnectingSocketHooks<F>;
  #state: ReconnectingSocketState = "idle";
  #socket: WebSocketLike | undefined;
  /** Bumped per dial so that callbacks of an abandoned socket are ignored. */
  #generation = 0;
  #failedDials = 0;
  #welcomedBefore = false;
  #lastHeard = 0;
  /** When this end last sent a ping of its own. */
  #askedAt = 0;
  #lastFailure = "";
  #pingNonce = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #helloTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeatTimer: ReturnType<typeof setInterval> | undefined;

  constructor(options: ReconnectingSocketOptions, hooks: ReconnectingSocketHooks<F>) {
    this.#options = options;
    this.#hooks = hooks;
  }

  get state(): ReconnectingSocketState {
    return this.#state;
  }

  /** Starts dialing when idle; does nothing otherwise. */
  open(): void {
    if (this.#state === "idle") void this.#dial("connecting");
  }

  /** Writes a message if the socket is open and welcomed; false (nothing written) otherwise. */
  send(text: string): boolean {
    const socket = this.#socket;
    if (this.#state !== "open" || !socket || socket.readyState !== SOCKET_OPEN) return false;
    this.#options.holdWrites?.(socket);
    socket.send(text);
    return true;
  }

  /** Drops the current socket (if any) and dials again at once, e.g. with new credentials. */
  reconnect(reason: string): void {
    if (this.#state === "closed") return;
    const wasOpen = this.#state === "open";
    this.#abandon(4000, reason);
    this.#clearTimers();
    if (wasOpen) this.#hooks.lost(reason, undefined);
    this.#failedDials = 0;
    void this.#dial(this.#welcomedBefore ? "reconnecting" : "connecting");
  }

  /**
   * Closes for good. Resolves once the socket finished its closing handshake (cut after 2 s).
   */
  close(code = 1000, reason = "closing"): Promise<void> {
    if (this.#state === "closed") return Promise.resolve();
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    const closed = this.#abandon(code, reason, true);
    this.#setState("closed");
    if (wasOpen) this.#hooks.lost(reason, code);
    return closed;
  }

  async #dial(state: "connecting" | "reconnecting"): Promise<void> {
    this.#setState(state);
    const generation = ++this.#generation;
    let hello: string;
    try {
      hello = await this.#hooks.hello();
    } catch (error) {
      if (generation === this.#generation && this.#state !== "closed") this.#giveUp(error as Error);
      return;
    }
    if (generation !== this.#generation || this.#state === "closed") return;
    const url = this.#options.url;
    let socket: WebSocketLike;
    try {
      socket = this.#options.createSocket(url);
    } catch (error) {
      // The socket could not even be made (a URL that is not one, a scheme it does not take, a
      // page's mixed content): dialling again gives the same, so the dial is given up at once.
      const message = `cannot open ${url}: ${(error as Error)?.message}`;
      this.#giveUp(this.#hooks.exhausted?.(message) ?? new Error(message));
      return;
    }
    this.#socket = socket;
    const helloTimeoutMs = this.#options.helloTimeoutMs ?? 10_000;
    this.#helloTimer = setTimeout(
      () => this.#drop(generation, `no welcome within ${helloTimeoutMs} ms`),
      helloTimeoutMs,
    );
    socket.onopen = () => {
      if (generation === this.#generation) socket.send(hello);
    };
    socket.onmessage = (event) => this.#receive(generation, event.data);
    let failure: { reason: string; cause: unknown } | undefined;
    // The close event that follows an error decides what happens next.
    socket.onerror = (event) => {
      const reason = this.#hooks.describeError?.(event);
      if (reason !== undefined) failure = { reason, cause: event?.error ?? event };
    };
    socket.onclose = (event) => {
      if (generation !== this.#generation) return;
      if (failure && !this.#welcomedBefore) {
        // Refused, DNS, TLS: the channel may say so at once instead of retrying behind a timeout.
        const error = this.#hooks.unreachable?.(failure.reason, failure.cause);
        if (error) {
          this.#giveUp(error);
          return;
        }
      }
      this.#generation += 1;
      this.#socket = undefined;
      const closed = `the socket closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`;
      this.#handleLoss(failure?.reason ?? closed, event.code);
    };
  }

  #receive(generation: number, data: unknown): void {
    if (generation !== this.#generation) return;
    this.#lastHeard = Date.now();
    const frame = this.#hooks.decode(data);
    if (frame === undefined) return;
    if (frame.type === "ping") {
      const socket = this.#socket;
      if (!socket) return;
      this.#options.holdWrites?.(socket);
      socket.send(
        JSON.stringify(frame.nonce === undefined ? { type: "pong" } : { type: "pong", nonce: frame.nonce }),
      );
      return;
    }
    if (frame.type === "pong") return;
    if (this.#state === "open") {
      this.#hooks.frame(frame);
      return;
    }
    const step = this.#hooks.handshake(frame);
    if (step === undefined) return;
    if ("fail" in step) this.#giveUp(step.fail);
    else if ("redial" in step) {
      this.#abandon(4001, "dialing again");
      this.#clearTimers();
      void this.#dial(this.#state === "reconnecting" ? "reconnecting" : "connecting");
    } else this.#welcome(generation, frame, step.heartbeatIntervalMs);
  }

  #welcome(generation: number, frame: F, serverIntervalMs: number): void {
    clearTimeout(this.#helloTimer);
    this.#failedDials = 0;
    const reconnect = this.#welcomedBefore;
    this.#welcomedBefore = true;
    this.#setState("open");
    const interval = this.#options.heartbeatIntervalMs ?? serverIntervalMs;
    const timeout = this.#options.heartbeatTimeoutMs ?? 2 * interval;
    const every = Math.min(interval, timeout / 2);
    this.#heartbeatTimer = setInterval(() => this.#beat(generation, interval, timeout, every), every);
    this.#hooks.welcome(frame, reconnect);
  }

  #beat(generation: number, interval: number, timeout: number, every: number): void {
    if (generation !== this.#generation) return;
    const now = Date.now();
    const silence = now - this.#lastHeard;
    // Dead only once the ping of the beat before went unanswered: silence alone could skip the
    // ping (timers can fire early against Date.now), and a beat late after that ping means this
    // process stalled (timers run before the input that arrived meanwhile is read), so the
    // silence is ours: it asks again and judges at the next beat.
    if (silence >= timeout && this.#askedAt >= this.#lastHeard && now - this.#askedAt <= 1.5 * every) {
      this.#drop(generation, `nothing received for ${timeout} ms`);
      return;
    }
    // Silent for an interval: ask, so a server that only answers still keeps the socket alive.
    if (silence >= interval || silence >= timeout) {
      this.#askedAt = now;
      this.send(JSON.stringify({ type: "ping", nonce: String(++this.#pingNonce) }));
    }
  }

  /** Gives up on a socket that is silent (dead) or never welcomed us. */
  #drop(generation: number, reason: string): void {
    if (generation !== this.#generation) return;
    this.#abandon(4000, reason);
    this.#handleLoss(reason, undefined);
  }

  #handleLoss(reason: string, code: number | undefined): void {
    this.#clearTimers();
    if (this.#state === "closed" || this.#state === "idle") return;
    if (this.#state === "open") this.#hooks.lost(reason, code);
    this.#lastFailure = reason;
    this.#scheduleRedial();
  }

  #scheduleRedial(): void {
    const max = this.#options.maxReconnectAttempts ?? Number.POSITIVE_INFINITY;
    if (this.#failedDials >= max) {
      const message = `gave up after ${this.#failedDials} failed reconnect attempts`;
      this.#giveUp(this.#hooks.exhausted?.(message) ?? new Error(message));
      return;
    }
    const delayMs = backoffDelay(this.#failedDials, this.#options.backoff);
    this.#failedDials += 1;
    this.#setState("reconnecting");
    this.#hooks.reconnecting({ attempt: this.#failedDials, delayMs, reason: this.#lastFailure });
    this.#retryTimer = setTimeout(() => void this.#dial("reconnecting"), delayMs);
  }

  #giveUp(error: Error): void {
    const wasOpen = this.#state === "open";
    this.#clearTimers();
    this.#abandon(1000, error.message.slice(0, 100));
    this.#failedDials = 0;
    this.#setState("idle");
    if (wasOpen) this.#hooks.lost(error.message, undefined);
    this.#hooks.failed(error);
  }

  /** Forgets the current socket and closes it; resolves once it is closed. */
  #abandon(code: number, reason: string, graceful = false): Promise<void> {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#generation += 1;
    if (!socket) return Promise.resolve();
    socket.onopen = null;
    socket.onmessage = null;
    socket.onerror = () => {};
    return new Promise<void>((resolve) => {
      let cut: ReturnType<typeof setTimeout> | undefined;
      socket.onclose = () => {
        clearTimeout(cut);
        resolve();
      };
      try {
        // A dead peer never answers the closing handshake; `ws` can cut the socket at once.
        if (socket.terminate && (!graceful || socket.readyState !== SOCKET_OPEN)) socket.terminate();
        else {
          socket.close(code, reason);
          cut = setTimeout(() => {
            socket.terminate?.();
            resolve();
          }, CLOSE_GRACE_MS);
        }
      } catch {
        // Closing a socket that never opened throws in some runtimes; it is gone either way.
        resolve();
      }
      if (socket.readyState === 3) resolve();
    });
  }

  #clearTimers(): void {
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#helloTimer);
    clearInterval(this.#heartbeatTimer);
  }

  #setState(state: ReconnectingSocketState): void {
    if (state === this.#state) return;
    const previous = this.#state;
    this.#state = state;
    this.#hooks.state(state, previous);
  }
}
