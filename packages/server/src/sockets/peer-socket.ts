import {
  DEFAULT_MAX_JSON_DEPTH,
  type DecodeResult,
  decodeFrame,
  FrameDecodeError,
  type FrameOf,
} from "@patchbay/protocol";
import { holdWritesForTick, writeHeldNow } from "@patchbay/protocol/runtime";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import type { Logger } from "../observability/logger";
import { FrameInbox, type FrameScheduler, sharedFrameScheduler } from "./frame-inbox";
import { startBeating, stopBeating } from "./heartbeat-wheel";
import { type TooDeep, tooDeep } from "./json-depth";
import { afterSlowReader } from "./memory-reclaim";
import { TokenBucket, type TokenBucketOptions } from "./rate-limit";
import type { ConnectionGuards } from "./socket-guards";

// The server's end of one peer socket, whatever the peer is (a page or backend on /v1/client, a
// worker on /v1/worker): what comes in is charged (pre-auth limits, byte quotas, frame rate) and
// decoded, what goes out is bounded (a peer that stops reading is closed), the peer has a time
// to say hello, and once it has, both sides heartbeat with JSON ping/pong. What a frame means is
// the endpoint's business (client-socket.ts, workers/worker-socket.ts).

/** The channels a peer sends the server frames on. */
export type PeerChannel = "client-to-server" | "worker-to-server";

/** Close codes the peer socket itself uses (an endpoint may add its own). */
export const PeerCloseCodes = {
  /** Nothing arrived for more than two heartbeat intervals. */
  heartbeat: 4408,
  /** A frame far over the limit, or over the pre-authentication limit. */
  tooBig: 1009,
  /** The peer flooded: too many frames refused in a row. */
  flood: 1008,
  /** The peer reads too slowly: its send buffer stayed full. */
  slowReader: 1013,
} as const;

/** Limits and timings of one peer socket. */
export interface PeerSocketLimits {
  /** Frames larger than this are refused with `frame_too_large` (far larger ones close the socket). */
  maxFrameBytes: number;
  /** The limit of a result frame (`tool.result`, `hosted.result`). */
  maxResultFrameBytes: number;
  /** More than this waiting to be sent for longer than `slowReaderGraceMs` closes the socket (1013). */
  maxBufferedBytes: number;
  slowReaderGraceMs: number;
  /** How often the server pings once the peer said hello; silence for two intervals is death. */
  heartbeatIntervalMs: number;
  /** How long a new socket has to say hello. */
  helloTimeoutMs: number;
  /** The frame-rate limit; none when left out (a worker is the operator's own process). */
  rate?: { burst: number; perSecond: number; maxViolations: number } | undefined;
}

/** What an endpoint does with the frames of its peers. */
export interface PeerEndpoint<C extends PeerChannel> {
  /** A decoded frame (after hello, `ping` and `pong` are answered here and not passed on). */
  frame(frame: FrameOf<C>): void;
  /**
   * A frame that did not decode: the endpoint answers it (and may close). `ids` are the frame's
   * top-level ids when the socket already read them (a frame nested too deep is not parsed).
   */
  invalid(error: FrameDecodeError, buffer: Buffer, ids?: TooDeep["ids"]): void;
  /** No hello within `helloTimeoutMs`. */
  helloTimeout(): void;
  /** The socket closed, for whatever reason. */
  closed(code: number, reason: string): void;
  /**
   * Whether a frame answers something the server asked for (a result of a call it waits for):
   * such a frame costs no rate-limit token, and is decoded even when the peer is over the rate.
   * Called once per frame that has a rate to pass.
   */
  freeAnswer?(frame: FrameOf<C>): boolean;
}

/** Options of a {@link PeerSocket}. */
export interface PeerSocketOptions<C extends PeerChannel> {
  channel: C;
  limits: PeerSocketLimits;
  /** The logger; a client socket's lines name its connection (`connectionId`, the socket's id). */
  logger: Logger;
  /** This socket's share of the server's socket guards (from the upgrade's admission). */
  guards?: ConnectionGuards | undefined;
  /** Counts a refused frame or a dropped peer by code (`rate_limited`, `slow_reader`, ...). */
  onRefused?: (code: string) => void;
  /** The connection's id (in logs, and `welcome.connectionId` on /v1/client). */
  id: string;
  /** Whose turns this socket's frames wait for (frame-inbox.ts); the process-wide one by default. */
  scheduler?: FrameScheduler | undefined;
}

// The bits of PeerSocket.flags.
const AUTHENTICATED = 1;
const CLOSING = 2;
const GONE = 4;
const BEATING = 8;

const LOADED_AT = Date.now();
/**
 * Milliseconds since this module loaded as a 32-bit integer (a small integer V8 keeps in the
 * field, where `Date.now()` is a boxed double). It wraps after about 24 days, so times are only
 * compared as `(later - earlier) | 0`, which is right for spans under that.
 */
const clock = () => (Date.now() - LOADED_AT) | 0;

/** Bytes of read frames a socket may have waiting for their turn before it is paused (frame-inbox.ts). */
const MAX_QUEUED_BYTES = 1024 * 1024;

/**
 * A WebSocket server for peer sockets: upgrades are handed to it by the HTTP server. With
 * `clientTracking: false` it keeps no set of its sockets (and no close listener on each): for an
 * endpoint that tracks its connections itself.
 */
export function peerSocketServer(
  limits: Pick<PeerSocketLimits, "maxFrameBytes" | "maxResultFrameBytes">,
  options: { clientTracking?: boolean } = {},
) {
  // ws refuses frames over maxPayload by closing with 1009. The headroom lets frames just over
  // the protocol limit reach decodeFrame, which answers with a clear error and keeps the socket.
  // decodeFrame also answers text that is not UTF-8 (invalid_json) where ws would close with 1007.
  return new WebSocketServer({
    noServer: true,
    maxPayload: Math.max(limits.maxFrameBytes, limits.maxResultFrameBytes) + 1024 * 1024,
    perMessageDeflate: false,
    skipUTF8Validation: true,
    clientTracking: options.clientTracking ?? true,
  });
}

/**
 * The server's end of one peer socket: the hello timer, the charge and decode of every frame
 * (pre-auth limits, byte quotas, frame rate, with a refused flood closed), heartbeats once the
 * peer said hello, and the write path with its slow-reader bound.
 */
export class PeerSocket<C extends PeerChannel> {
  readonly id: string;
  private readonly bucket: TokenBucket | undefined;
  /**
   * Refused frames allowed in a 10 s window before the socket is closed as a flood; made at the
   * first refusal (until then it would be full), so a well-behaved socket holds none.
   */
  private violations: TokenBucket | undefined;
  private helloTimer: ReturnType<typeof setTimeout> | undefined;
  /** {@link AUTHENTICATED}, {@link CLOSING}, {@link GONE} and {@link BEATING}: one field, not four. */
  private flags = 0;
  private slowTimer: ReturnType<typeof setTimeout> | undefined;
  /** When a frame last arrived (see {@link clock}). */
  private lastHeard = clock();
  private pings = 0;
  private readonly baseLogger: Logger;
  private readonly limits: PeerSocketLimits;
  // The options' fields this socket reads later, kept as its own (the options object is made per
  // connection and would be held whole: an idle connection's memory is mostly what it holds).
  private readonly channel: C;
  private readonly guards: ConnectionGuards | undefined;
  private readonly onRefused: ((code: string) => void) | undefined;
  /** Frames read and waiting for their turn (frame-inbox.ts). */
  private readonly inbox: FrameInbox;

  constructor(
    private readonly ws: WebSocket,
    options: PeerSocketOptions<C>,
    private readonly endpoint: PeerEndpoint<C>,
  ) {
    this.id = options.id;
    this.limits = options.limits;
    this.baseLogger = options.logger;
    this.channel = options.channel;
    this.guards = options.guards;
    this.onRefused = options.onRefused;
    const rate = options.limits.rate;
    if (rate) {
      this.bucket = new TokenBucket(frameRate(rate));
    }
    // Timers and listeners below are shared functions given this socket, not closures: an idle
    // connection holds none of its own.
    this.helloTimer = setTimeout(PeerSocket.onHelloTimeout, options.limits.helloTimeoutMs, this);
    this.inbox = new FrameInbox(
      options.scheduler ?? sharedFrameScheduler,
      this.receive,
      ws,
      MAX_QUEUED_BYTES,
      this,
    );
    (ws as PeeredWebSocket)[PEER] = this;
    ws.on("message", PeerSocket.onMessage);
    ws.on("close", PeerSocket.onClose);
    ws.on("error", PeerSocket.onError);
  }

  private get authenticated(): boolean {
    return (this.flags & AUTHENTICATED) !== 0;
  }
  private set authenticated(on: boolean) {
    this.flags = on ? this.flags | AUTHENTICATED : this.flags & ~AUTHENTICATED;
  }
  private get closing(): boolean {
    return (this.flags & CLOSING) !== 0;
  }
  private set closing(on: boolean) {
    this.flags = on ? this.flags | CLOSING : this.flags & ~CLOSING;
  }
  private get gone(): boolean {
    return (this.flags & GONE) !== 0;
  }
  private set gone(on: boolean) {
    this.flags = on ? this.flags | GONE : this.flags & ~GONE;
  }
  /** Whether the heartbeat wheel beats this socket (heartbeat-wheel.ts). */
  private get beating(): boolean {
    return (this.flags & BEATING) !== 0;
  }
  private set beating(on: boolean) {
    this.flags = on ? this.flags | BEATING : this.flags & ~BEATING;
  }

  private static onHelloTimeout(self: PeerSocket<PeerChannel>): void {
    self.helloTimer = undefined;
    if (!self.authenticated && !self.closing) self.endpoint.helloTimeout();
  }

  // Function expressions: `this` is the WebSocket that emitted (EventEmitter calls them so).
  private static readonly onMessage = function (this: PeeredWebSocket, data: RawData): void {
    this[PEER]?.arrive(data);
  };

  private static readonly onClose = function (this: PeeredWebSocket, code: number, reason: Buffer): void {
    this[PEER]?.cleanup(code, String(reason));
  };

  private static readonly onError = function (this: PeeredWebSocket, error: Error): void {
    this[PEER]?.logError(error);
  };

  /**
   * The logger, with the connection's id on a client socket's lines: made when a line is
   * written, as a child logger held by each idle socket would cost about 80 bytes.
   */
  private get logger(): Logger {
    return this.channel === "client-to-server"
      ? this.baseLogger.child({ connectionId: this.id })
      : this.baseLogger;
  }

  /** Whether frames may still be sent (open, and not closing). */
  get isOpen(): boolean {
    return !this.closing && this.ws.readyState === this.ws.OPEN;
  }

  private logError(error: Error): void {
    this.logger.debug("peer socket error", { error });
  }

  /** Bytes queued to be sent. */
  get bufferedAmount(): number {
    return this.ws.bufferedAmount;
  }

  /**
   * The peer said hello and was let in: the hello timer stops, the socket leaves the pre-auth
   * gate (sharing `userId`'s byte bucket when given; `byteQuotas: false` ends byte charging, for a
   * worker), and heartbeats start.
   */
  authenticate(userId: string | undefined, options: { byteQuotas?: boolean } = {}): void {
    if (this.authenticated) return;
    this.authenticated = true;
    clearTimeout(this.helloTimer);
    this.helloTimer = undefined;
    this.guards?.authenticated(userId, options.byteQuotas ?? true);
    if (this.gone) return;
    this.beating = true;
    startBeating(this, this.limits.heartbeatIntervalMs);
  }

  /** Sends a frame (or its encoded text); returns false when it was not sent. */
  send(frame: object | string): boolean {
    if (!this.isOpen) return false;
    const hardCap =
      this.limits.maxBufferedBytes + 2 * Math.max(this.limits.maxFrameBytes, this.limits.maxResultFrameBytes);
    if (this.ws.bufferedAmount > hardCap) {
      this.tooSlow();
      return false;
    }
    // The frames of one turn of the event loop leave in one write (see holdWritesForTick); a
    // worker's socket is written before the clients' of that turn, as the worker starts work on
    // what it reads (a turn's hosted call) and a client only shows it.
    holdWritesForTick(this.ws, this.channel === "worker-to-server");
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame));
    // One large frame or a burst may sit over the bound for a moment; a reader that stays
    // behind for the whole grace period is not reading.
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes && !this.slowTimer) {
      this.slowTimer = setTimeout(() => {
        this.slowTimer = undefined;
        if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) this.tooSlow();
      }, this.limits.slowReaderGraceMs);
    }
    return true;
  }

  /**
   * Writes the frames sent this tick now rather than when the tick ends (see writeHeldNow): after
   * the frame the peer waits for.
   */
  writeNow(): void {
    writeHeldNow(this.ws);
  }

  /** Waits (bounded) until the send buffer is half empty, so a long replay cannot flood it. */
  async drained(): Promise<void> {
    for (
      let i = 0;
      i < 1_000 && this.isOpen && this.ws.bufferedAmount > this.limits.maxBufferedBytes / 2;
      i++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Closes with `code`; a peer that does not finish the closing handshake is cut after 2 s. */
  close(code: number, reason: string): void {
    if (this.closing) return;
    this.closing = true;
    try {
      this.ws.close(code, closeReason(reason));
    } catch {
      this.ws.terminate();
    }
    setTimeout(() => this.ws.terminate(), 2_000).unref();
  }

  /** Cuts the connection without a closing handshake. */
  terminate(): void {
    this.closing = true;
    this.ws.terminate();
  }

  /** One heartbeat (the wheel calls it once per interval): a ping, or the end of a silent peer. */
  beat(mayDrop: boolean): void {
    // Judged against a ping it was sent (a peer first beaten after this process stalled was
    // silent only because nothing could be heard), and not within an interval of such a stall.
    if (mayDrop && this.pings > 0 && ((clock() - this.lastHeard) | 0) > 2 * this.limits.heartbeatIntervalMs) {
      this.logger.info("peer missed its heartbeats; dropping it");
      this.onRefused?.("heartbeat");
      this.close(PeerCloseCodes.heartbeat, "heartbeat timeout");
      // A peer that does not answer pings will not finish a closing handshake either.
      this.ws.terminate();
      return;
    }
    // A nonce, so a pong can be told apart from a late answer to an earlier ping.
    this.pings += 1;
    this.send({ type: "ping", nonce: `s${this.pings}` });
  }

  /**
   * A frame as it is read: charged at once (a frame over a byte quota is refused without waiting
   * or being kept), then queued for its turn (frame-inbox.ts), where it is decoded and handled.
   */
  private arrive(data: RawData): void {
    this.lastHeard = clock();
    if (this.closing) return;
    const refused = this.guards?.charge(data, this.authenticated);
    if (refused) {
      this.onRefused?.(refused.code);
      if (refused.close) this.close(PeerCloseCodes.tooBig, refused.message);
      else if (this.violation()) this.send({ type: "error", code: refused.code, message: refused.message });
      return;
    }
    // ws hands over a Buffer of its own for each message: read it in place, without a copy.
    this.inbox.push(
      Array.isArray(data)
        ? Buffer.concat(data)
        : Buffer.isBuffer(data)
          ? data
          : Buffer.from(data as ArrayBuffer),
    );
  }

  /** A frame's turn: the frame rate, then decode, then the endpoint. */
  private receive(buffer: Buffer): void {
    if (this.closing) return;
    let decoded: DecodeResult<C> | undefined;
    if (this.bucket && !this.bucket.take()) {
      // Over the rate, a frame is still decoded when it may be a free answer: a flood costs at
      // most maxViolations decodes before the socket closes.
      if (this.endpoint.freeAnswer) decoded = this.decode(buffer);
      if (!(decoded?.ok && this.endpoint.freeAnswer?.(decoded.frame))) {
        this.onRefused?.("rate_limited");
        const rate = this.limits.rate!;
        if (this.violation()) {
          this.send({
            type: "error",
            code: "rate_limited",
            message: `too many frames: at most ${rate.perSecond} per second (bursts of ${rate.burst})`,
            retryAfterMs: this.bucket.retryAfterMs(),
          });
        }
        return;
      }
    } else {
      decoded = this.decode(buffer);
      if (this.bucket && decoded.ok && this.endpoint.freeAnswer?.(decoded.frame)) this.bucket.refund();
    }
    if (!decoded.ok) {
      const ids = (decoded.error as DeepFrameError).ids;
      this.endpoint.invalid(decoded.error, buffer, ids);
      return;
    }
    const frame = decoded.frame as { type: string; nonce?: string };
    if (this.authenticated && frame.type === "ping") {
      this.send(frame.nonce === undefined ? { type: "pong" } : { type: "pong", nonce: frame.nonce });
      return;
    }
    if (this.authenticated && frame.type === "pong") return;
    this.endpoint.frame(decoded.frame);
  }

  /** Counts a refused frame; false (and the socket closing) once the peer is flooding. */
  private violation(): boolean {
    const rate = this.limits.rate;
    if (!rate) return true;
    this.violations ??= new TokenBucket({
      capacity: rate.maxViolations,
      refillPerSecond: rate.maxViolations / 10,
    });
    if (this.violations.take()) return true;
    this.close(PeerCloseCodes.flood, "rate limit exceeded");
    return false;
  }

  /** Text and binary messages alike are decoded as UTF-8 bytes: invalid UTF-8 is `invalid_json`. */
  private decode(buffer: Buffer): DecodeResult<C> {
    const maxDepth = this.guards?.maxJsonDepth ?? DEFAULT_MAX_JSON_DEPTH;
    // Refused before it is parsed (json-depth.ts), as decodeFrame would refuse it after.
    // (A frame over maxFrameBytes is decodeFrame's: it refuses most of them by size alone.)
    const deep = buffer.byteLength <= this.limits.maxFrameBytes ? tooDeep(buffer, maxDepth) : undefined;
    if (deep) {
      const error: DeepFrameError = new FrameDecodeError("invalid_frame", deep.message, { path: deep.path });
      error.ids = deep.ids;
      return { ok: false, error };
    }
    return decodeFrame(buffer, {
      channel: this.channel,
      maxBytes: this.limits.maxFrameBytes,
      maxResultBytes: this.limits.maxResultFrameBytes,
      maxDepth,
    });
  }

  private tooSlow(): void {
    this.logger.warn("peer reads too slowly; closing", { bufferedAmount: this.ws.bufferedAmount });
    this.onRefused?.("slow_reader");
    this.close(PeerCloseCodes.slowReader, "send buffer full: the peer reads too slowly");
    afterSlowReader();
  }

  private cleanup(code: number, reason: string): void {
    if (this.gone) return;
    this.gone = true;
    this.closing = true;
    clearTimeout(this.helloTimer);
    if (this.beating) stopBeating(this, this.limits.heartbeatIntervalMs);
    clearTimeout(this.slowTimer);
    this.inbox.drop();
    this.guards?.gone();
    this.endpoint.closed(code, reason);
  }
}

/** The frame-rate bucket options of each `rate` limit, made once and shared by its sockets' buckets. */
const frameRates = new WeakMap<NonNullable<PeerSocketLimits["rate"]>, TokenBucketOptions>();

function frameRate(rate: NonNullable<PeerSocketLimits["rate"]>): TokenBucketOptions {
  let options = frameRates.get(rate);
  if (!options) {
    options = { capacity: rate.burst, refillPerSecond: rate.perSecond };
    frameRates.set(rate, options);
  }
  return options;
}

/** The peer socket a `ws` WebSocket belongs to, for the shared listeners. */
const PEER = Symbol("patchbay.peer");
type PeeredWebSocket = WebSocket & { [PEER]?: PeerSocket<PeerChannel> };

/** A decode error of a frame refused by the depth scan, with the ids the scan read. */
type DeepFrameError = FrameDecodeError & { ids?: TooDeep["ids"] };

/** A close reason within the 123 bytes a close frame allows. */
function closeReason(reason: string): string {
  if (Buffer.byteLength(reason) <= 123) return reason;
  let cut = reason.slice(0, 120);
  while (Buffer.byteLength(cut) > 120) cut = cut.slice(0, -1);
  return cut;
}
