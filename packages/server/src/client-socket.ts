import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  type ClientToServerFrame,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_RESULT_FRAME_BYTES,
  decodeFrame,
  PROTOCOL_VERSION,
  resultTooLarge,
  type ServerToClientFrame,
  type SessionEvent,
} from "@patchbay/protocol";
import { nanoid } from "nanoid";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import type { Authenticator, Principal } from "./auth";
import { AuthError, ServerError, toWireError } from "./errors";
import type { ServerLimits } from "./limits";
import type { LiveSession } from "./live-session";
import type { Logger } from "./logger";
import { afterSlowReader } from "./memory-reclaim";
import type { ServerMetrics } from "./metrics";
import { oversizedResult } from "./oversized-result";
import { TokenBucket } from "./rate-limit";
import type { SessionManager } from "./session-manager";
import { type ConnectionGuards, SocketGuards } from "./socket-guards";

/**
 * Limits and timings of the client socket.
 *
 * @example
 * ```ts
 * const limits: ClientSocketLimits = { maxFrameBytes: 5 * 1024 * 1024, maxBufferedBytes: 8 * 1024 * 1024, ... };
 * ```
 */
export interface ClientSocketLimits {
  /** Frames larger than this are refused with `frame_too_large` (far larger ones close the socket). */
  maxFrameBytes: number;
  /**
   * The limit of a `tool.result` frame, which may carry a 5 MiB image as base64. A result over
   * it fails its call once (`result_too_large`); frames over it plus 1 MiB close the socket (1009).
   */
  maxResultFrameBytes: number;
  /**
   * A socket with more than this waiting to be sent for longer than `slowReaderGraceMs` is
   * closed (1013). Above this plus twice the larger frame limit it is closed at once.
   */
  maxBufferedBytes: number;
  /** How long the send buffer may stay over `maxBufferedBytes` (a burst, one large frame). */
  slowReaderGraceMs: number;
  /** Burst size of the per-connection rate limit, in frames. */
  rateBurst: number;
  /** Sustained frames per second of the per-connection rate limit. */
  ratePerSecond: number;
  /** Consecutive frames over the rate limit after which the socket is closed (1008). */
  maxRateViolations: number;
  /** How often the server pings; a peer that misses two pings in a row is dropped. */
  heartbeatIntervalMs: number;
  /** How long a new socket has to send `hello`. */
  helloTimeoutMs: number;
  /** How many sessions one socket may have open. */
  maxSessionsPerSocket: number;
}

/**
 * The defaults of {@link ClientSocketLimits}.
 *
 * @example
 * ```ts
 * createServer({ clientSocket: { ...DEFAULT_CLIENT_SOCKET_LIMITS, rateBurst: 50 } });
 * ```
 */
export const DEFAULT_CLIENT_SOCKET_LIMITS: ClientSocketLimits = {
  maxFrameBytes: DEFAULT_MAX_FRAME_BYTES,
  maxResultFrameBytes: DEFAULT_MAX_RESULT_FRAME_BYTES,
  maxBufferedBytes: 8 * 1024 * 1024,
  slowReaderGraceMs: 5_000,
  rateBurst: 200,
  ratePerSecond: 100,
  maxRateViolations: 50,
  heartbeatIntervalMs: 15_000,
  helloTimeoutMs: 10_000,
  maxSessionsPerSocket: 64,
};

interface Attachment {
  live: LiveSession;
  release: () => void;
  detach: () => void;
}

const REPLAY_PAGE = 500;

/**
 * The `/v1/client` WebSocket endpoint: authenticates `hello`, opens and resumes sessions,
 * relays their events, and takes messages, interrupts, page tool results and approval
 * decisions. Each connection has its own rate limit and send buffer bound; bad frames are
 * answered with an `error` frame naming what was wrong, and nothing a connection sends reaches
 * a session it has not opened.
 *
 * @example
 * ```ts
 * const clients = new ClientSocketServer({ authenticator, sessions, logger, metrics });
 * httpServer.on("upgrade", (req, socket, head) => clients.handleUpgrade(req, socket, head));
 * ```
 */
export class ClientSocketServer {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<ClientConnection>();
  readonly limits: ClientSocketLimits;

  constructor(
    private readonly options: {
      authenticator: Authenticator;
      sessions: SessionManager;
      logger: Logger;
      metrics: ServerMetrics;
      limits?: Partial<ClientSocketLimits>;
      /** Schema limits, byte quotas and pre-authentication limits (see limits.ts). */
      quotas?: ServerLimits;
    },
  ) {
    this.limits = { ...DEFAULT_CLIENT_SOCKET_LIMITS, ...options.limits };
    // ws refuses frames over maxPayload by closing with 1009. The headroom lets frames just over
    // the protocol limit reach decodeFrame, which answers with a clear error and keeps the socket.
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: Math.max(this.limits.maxFrameBytes, this.limits.maxResultFrameBytes) + 1024 * 1024,
      perMessageDeflate: false,
      // decodeFrame answers invalid UTF-8 with an invalid_json error frame (docs/protocol.md);
      // ws would close the socket with 1007 instead.
      skipUTF8Validation: true,
    });
    this.guards = options.quotas ? new SocketGuards(options.quotas) : undefined;
  }

  private readonly guards: SocketGuards | undefined;

  /** Takes over an HTTP upgrade request for `/v1/client`. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const admitted = this.guards?.admit(request, socket);
    if (admitted === null) return;
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      const connection = new ClientConnection(ws, { ...this.options, guards: admitted }, this.limits, () => {
        this.connections.delete(connection);
        this.options.metrics.connectedClients.set(this.connections.size);
      });
      this.connections.add(connection);
      this.options.metrics.connectedClients.set(this.connections.size);
    });
  }

  /** How many client sockets are connected. */
  get size(): number {
    return this.connections.size;
  }

  /** Closes every connection with `code` and `reason` (shutdown: 1001). */
  async close(code = 1001, reason = "server shutting down"): Promise<void> {
    for (const connection of this.connections) connection.close(code, reason);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

class ClientConnection {
  readonly id = `k_${nanoid(12)}`;
  private principal: Principal | undefined;
  private readonly attached = new Map<string, Attachment>();
  private readonly bucket: TokenBucket;
  /** Refused frames allowed in a 10 s window before the socket is closed as a flood. */
  private readonly violations: TokenBucket;
  private slowTimer: ReturnType<typeof setTimeout> | undefined;
  private alive = true;
  private closed = false;
  private readonly helloTimer: ReturnType<typeof setTimeout>;
  private readonly heartbeat: ReturnType<typeof setInterval>;
  private readonly logger: Logger;
  /** Frames are handled one after another, so a resume's replay and a send cannot interleave. */
  private work: Promise<void> = Promise.resolve();

  constructor(
    private readonly ws: WebSocket,
    private readonly options: {
      authenticator: Authenticator;
      sessions: SessionManager;
      logger: Logger;
      metrics: ServerMetrics;
      guards?: ConnectionGuards | undefined;
    },
    private readonly limits: ClientSocketLimits,
    private readonly onGone: () => void,
  ) {
    this.logger = options.logger.child({ connectionId: this.id });
    this.bucket = new TokenBucket({ capacity: limits.rateBurst, refillPerSecond: limits.ratePerSecond });
    this.violations = new TokenBucket({
      capacity: limits.maxRateViolations,
      refillPerSecond: limits.maxRateViolations / 10,
    });
    this.helloTimer = setTimeout(
      () => this.close(1008, "no hello within the time allowed"),
      limits.helloTimeoutMs,
    );
    this.heartbeat = setInterval(() => {
      if (!this.alive) {
        this.logger.info("client missed heartbeats; dropping it");
        this.ws.terminate();
        return;
      }
      this.alive = false;
      if (this.ws.readyState === this.ws.OPEN) this.ws.ping();
    }, limits.heartbeatIntervalMs);
    ws.on("pong", () => {
      this.alive = true;
    });
    ws.on("message", (data, isBinary) => this.onMessage(data, isBinary));
    ws.on("close", () => this.cleanup());
    ws.on("error", (error) => this.logger.debug("client socket error", { error }));
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.ws.close(code, reason);
    } catch {
      this.ws.terminate();
    }
    // A reader that stopped reading never completes the closing handshake.
    setTimeout(() => this.ws.terminate(), 2_000).unref();
  }

  private cleanup(): void {
    clearTimeout(this.helloTimer);
    clearInterval(this.heartbeat);
    clearTimeout(this.slowTimer);
    this.options.guards?.gone();
    for (const [sessionId] of this.attached) this.detach(sessionId);
    this.closed = true;
    this.onGone();
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    this.alive = true;
    if (this.closed) return;
    const refused = this.options.guards?.charge(data, this.principal !== undefined);
    if (refused) {
      this.options.metrics.framesRejected.inc({ code: refused.code });
      if (refused.close) {
        this.close(1009, refused.message);
        return;
      }
      if (!this.violations.take()) {
        this.close(1008, "rate limit exceeded");
        return;
      }
      this.send({ type: "error", code: refused.code, message: refused.message });
      return;
    }
    const charged = this.bucket.take();
    // Over the limit, a frame is still decoded when it may be a free answer (see answersCall):
    // a flood costs at most maxRateViolations decodes before the socket closes.
    const free = !charged && !isBinary ? this.answersCall(data) : undefined;
    if (!charged && !free) {
      this.options.metrics.framesRejected.inc({ code: "rate_limited" });
      if (!this.violations.take()) {
        this.close(1008, "rate limit exceeded");
        return;
      }
      this.send({
        type: "error",
        code: "rate_limited",
        message: `too many frames: at most ${this.limits.ratePerSecond} per second (bursts of ${this.limits.rateBurst})`,
        retryAfterMs: this.bucket.retryAfterMs(),
      });
      return;
    }
    if (isBinary) {
      this.reject({ code: "invalid_frame", message: "frames must be UTF-8 JSON text, not binary" });
      return;
    }
    const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    const decoded = free ?? this.decode(buffer);
    if (charged && decoded.ok && this.isAnswer(decoded.frame)) this.bucket.refund();
    if (!decoded.ok) {
      const error = decoded.error;
      if (error.code === "frame_too_large" && this.failOversizedResult(buffer)) return;
      const ids = correlation(buffer);
      this.reject({
        code: error.code,
        message: error.message,
        ...(error.path === undefined ? {} : { path: error.path }),
        ...ids,
      });
      return;
    }
    const frame = decoded.frame;
    this.work = this.work.then(() =>
      this.handle(frame).catch((error) => {
        if (!(error instanceof ServerError))
          this.logger.error("client frame failed", { type: frame.type, error });
        this.reject({ ...toWireError(error), ...correlationOf(frame) });
        if (error instanceof AuthError) this.close(1008, "unauthorized");
      }),
    );
  }

  /**
   * The rate limit guards against a peer sending what nobody asked for. A `tool.result` that
   * answers a page tool call of a session attached here, which the server still waits for, was
   * asked for: the server bounds how many there are (one free answer per delivery; repeats pay),
   * so it costs no token, and a page answering calls flat out is not cut at `ratePerSecond`
   * calls per second. Progress, say and hold frames a page may send any number of, so they are
   * charged like any other frame.
   */
  private isAnswer(frame: ClientToServerFrame): boolean {
    if (frame.type !== "tool.result") return false;
    return this.attached.get(frame.sessionId)?.live.pages.claimAnswer(frame.callId, frame.attempt) ?? false;
  }

  /** The decoded frame when `data` is a free answer (see {@link isAnswer}). */
  private answersCall(data: RawData): ReturnType<typeof decodeFrame<"client-to-server">> | undefined {
    const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
    const decoded = this.decode(buffer);
    return decoded.ok && this.isAnswer(decoded.frame) ? decoded : undefined;
  }

  private decode(buffer: Buffer): ReturnType<typeof decodeFrame<"client-to-server">> {
    return decodeFrame(buffer, {
      channel: "client-to-server",
      maxBytes: this.limits.maxFrameBytes,
      maxResultBytes: this.limits.maxResultFrameBytes,
      ...(this.options.guards ? { maxDepth: this.options.guards.maxJsonDepth } : {}),
    });
  }

  /**
   * A `tool.result` over the result limit (from a client that did not check it) fails its call
   * once with a sentence the model can act on, instead of leaving it to its timeout. The client
   * gets the `frame_too_large` error too. Returns whether the frame was such a result.
   */
  private failOversizedResult(buffer: Buffer): boolean {
    const big = oversizedResult(buffer, "tool.result");
    if (!big?.sessionId) return false;
    const attachment = this.attached.get(big.sessionId);
    if (!attachment) return false;
    const limit = this.limits.maxResultFrameBytes;
    this.logger.warn("page tool result over the size limit; the call fails", {
      sessionId: big.sessionId,
      callId: big.callId,
      bytes: big.bytes,
      limit,
    });
    attachment.live.pages.result(big.callId, big.attempt ?? 1, resultTooLarge(big.bytes, limit));
    this.reject({
      code: "frame_too_large",
      message: `tool.result for ${big.callId} is ${big.bytes} bytes, over the limit of ${limit} bytes; the call failed`,
      sessionId: big.sessionId,
    });
    return true;
  }

  private async handle(frame: ClientToServerFrame): Promise<void> {
    if (frame.type === "ping") {
      this.send({ type: "pong", ...(frame.nonce === undefined ? {} : { nonce: frame.nonce }) });
      return;
    }
    if (frame.type === "hello") return this.hello(frame);
    const principal = this.principal;
    if (!principal) throw new AuthError("missing", "the first frame must be 'hello'");
    switch (frame.type) {
      case "session.create": {
        this.options.guards?.checkTools(frame.tools);
        const info = await this.options.sessions.create(principal, frame.agent, {
          ...(frame.userId === undefined ? {} : { userId: frame.userId }),
          ...(frame.metadata === undefined ? {} : { metadata: frame.metadata }),
        });
        await this.attach(principal, info.id, frame.requestId, 0, frame.tools);
        return;
      }
      case "session.resume":
        this.options.guards?.checkTools(frame.tools);
        await this.attach(principal, frame.sessionId, frame.requestId, frame.afterSeq, frame.tools);
        return;
      case "session.close":
        this.attachment(frame.sessionId);
        this.detach(frame.sessionId);
        return;
      case "message.send": {
        const { live } = this.attachment(frame.sessionId);
        await live.sendMessage({
          commandId: frame.commandId,
          text: frame.text,
          sender: this.principal?.kind ?? "user",
          ...(frame.images === undefined ? {} : { images: frame.images }),
        });
        return;
      }
      case "interrupt":
        await this.attachment(frame.sessionId).live.interrupt(frame.commandId);
        return;
      case "tools.update": {
        const { live } = this.attachment(frame.sessionId);
        this.options.guards?.checkTools(frame.tools);
        live.runtime.setPageTools(this.id, frame.tools);
        return;
      }
      case "tool.progress":
        this.attachment(frame.sessionId).live.pages.progress(frame.callId, frame.text);
        return;
      case "tool.say":
        this.attachment(frame.sessionId).live.pages.say(frame.callId, frame.text);
        return;
      case "tool.hold": {
        const answer = this.attachment(frame.sessionId).live.pages.hold(frame.callId, frame.attempt);
        this.send({
          type: "tool.hold.ack",
          sessionId: frame.sessionId,
          callId: frame.callId,
          attempt: answer.attempt,
          accepted: answer.accepted,
          ...(answer.reason === undefined ? {} : { reason: answer.reason }),
        });
        return;
      }
      case "tool.result":
        this.attachment(frame.sessionId).live.pages.result(frame.callId, frame.attempt, frame.result);
        return;
      case "approval.decide":
        this.attachment(frame.sessionId).live.approvals.decide(frame.approvalId, frame.allowed, frame.reason);
        return;
    }
  }

  private async hello(frame: Extract<ClientToServerFrame, { type: "hello" }>): Promise<void> {
    if (this.principal) {
      throw new ServerError("invalid_frame", "hello: this socket is already authenticated", { path: "type" });
    }
    if (frame.protocol !== PROTOCOL_VERSION) {
      this.send({
        type: "error",
        code: "protocol_version",
        message: `protocol ${frame.protocol} is not spoken here; this server speaks ${PROTOCOL_VERSION}`,
        path: "protocol",
      });
      this.close(1002, "unsupported protocol version");
      return;
    }
    this.principal = await this.options.authenticator.fromHello(frame.auth);
    clearTimeout(this.helloTimer);
    this.options.guards?.authenticated(this.principal.kind === "user" ? this.principal.userId : undefined);
    this.send({
      type: "welcome",
      protocol: PROTOCOL_VERSION,
      connectionId: this.id,
      user: this.principal.kind === "user" ? { id: this.principal.userId } : null,
      heartbeatIntervalMs: this.limits.heartbeatIntervalMs,
      maxFrameBytes: this.limits.maxFrameBytes,
      maxResultFrameBytes: this.limits.maxResultFrameBytes,
    });
  }

  /**
   * Attaches a session: `session.opened`, then every logged event after `afterSeq`, then live
   * events, with none lost or doubled. The live subscription starts before the log is read;
   * events that arrive meanwhile wait, and anything at or below the last sequence number sent
   * is skipped.
   */
  private async attach(
    principal: Principal,
    sessionId: string,
    requestId: string,
    afterSeq: number,
    tools: Parameters<LiveSession["runtime"]["setPageTools"]>[1],
  ): Promise<void> {
    if (!this.attached.has(sessionId) && this.attached.size >= this.limits.maxSessionsPerSocket) {
      throw new ServerError(
        "conflict",
        `a socket may have at most ${this.limits.maxSessionsPerSocket} sessions open`,
      );
    }
    const { live, release } = await this.options.sessions.acquire(principal, sessionId);
    this.detach(sessionId);
    let lastSent = afterSeq;
    let replaying = true;
    const waiting: SessionEvent[] = [];
    const unsubscribe = live.runtime.subscribe((event) => {
      if (replaying) waiting.push(event);
      else if (event.seq > lastSent) {
        lastSent = event.seq;
        this.send(event);
      }
    });
    const onClosed = (reason: string) => {
      if (reason !== "deleted") return;
      this.attached.delete(sessionId);
      release();
      this.send({
        type: "error",
        code: "not_found",
        message: `session ${sessionId} was deleted`,
        sessionId,
        path: "sessionId",
      });
    };
    live.runtime.on("closed", onClosed);
    const detach = () => {
      live.runtime.off("closed", onClosed);
      unsubscribe();
      live.runtime.setPageTools(this.id, []);
      release();
    };
    this.attached.set(sessionId, { live, release, detach });
    live.runtime.setPageTools(this.id, tools);
    this.send({ type: "session.opened", requestId, session: live.runtime.info });
    try {
      for (let round = 0; round < 1_000_000; round++) {
        const events = await live.runtime.readEvents(lastSent, REPLAY_PAGE);
        for (const event of events) {
          lastSent = event.seq;
          this.send(event);
        }
        if (events.length < REPLAY_PAGE || this.closed) break;
        await this.drained();
      }
    } finally {
      replaying = false;
      for (const event of waiting) {
        if (event.seq > lastSent) {
          lastSent = event.seq;
          this.send(event);
        }
      }
    }
    if (tools.length > 0) await live.pages.redeliver();
  }

  private attachment(sessionId: string): Attachment {
    const attachment = this.attached.get(sessionId);
    if (!attachment) {
      throw new ServerError(
        "not_found",
        `session ${sessionId} is not open on this socket (send session.resume first)`,
        {
          path: "sessionId",
        },
      );
    }
    return attachment;
  }

  private detach(sessionId: string): void {
    const attachment = this.attached.get(sessionId);
    if (!attachment) return;
    this.attached.delete(sessionId);
    attachment.detach();
  }

  /** Waits (bounded) until the send buffer is half empty, so a long replay cannot flood it. */
  private async drained(): Promise<void> {
    for (let i = 0; i < 1_000 && this.ws.bufferedAmount > this.limits.maxBufferedBytes / 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  private reject(error: {
    code: string;
    message: string;
    path?: string;
    requestId?: string;
    commandId?: string;
    sessionId?: string;
  }): void {
    this.options.metrics.framesRejected.inc({ code: error.code });
    this.send({ type: "error", ...error });
  }

  private send(frame: ServerToClientFrame): void {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return;
    const hardCap =
      this.limits.maxBufferedBytes + 2 * Math.max(this.limits.maxFrameBytes, this.limits.maxResultFrameBytes);
    if (this.ws.bufferedAmount > hardCap) {
      this.tooSlow();
      return;
    }
    this.ws.send(JSON.stringify(frame));
    // One large frame or a burst may sit over the bound for a moment; a reader that stays
    // behind for the whole grace period is not reading.
    if (this.ws.bufferedAmount > this.limits.maxBufferedBytes && !this.slowTimer) {
      this.slowTimer = setTimeout(() => {
        this.slowTimer = undefined;
        if (this.ws.bufferedAmount > this.limits.maxBufferedBytes) this.tooSlow();
      }, this.limits.slowReaderGraceMs);
    }
  }

  private tooSlow(): void {
    this.logger.warn("client reads too slowly; closing", { bufferedAmount: this.ws.bufferedAmount });
    this.options.metrics.framesRejected.inc({ code: "slow_reader" });
    this.close(1013, "send buffer full: the client reads too slowly");
    afterSlowReader();
  }
}

type Correlation = { requestId?: string; commandId?: string; sessionId?: string };

function correlationOf(frame: ClientToServerFrame): Correlation {
  const ids: Correlation = {};
  if ("requestId" in frame && typeof frame.requestId === "string") ids.requestId = frame.requestId;
  if ("commandId" in frame && typeof frame.commandId === "string") ids.commandId = frame.commandId;
  if ("sessionId" in frame && typeof frame.sessionId === "string") ids.sessionId = frame.sessionId;
  return ids;
}

/** The ids of a frame that failed to decode, when it is JSON enough to have them. */
function correlation(buffer: Buffer): Correlation {
  if (buffer.byteLength > 64 * 1024) return {};
  try {
    const value = JSON.parse(buffer.toString("utf8")) as Record<string, unknown>;
    const ids: Correlation = {};
    for (const key of ["requestId", "commandId", "sessionId"] as const) {
      const id = value?.[key];
      if (typeof id === "string" && id.length > 0 && id.length <= 256) ids[key] = id;
    }
    return ids;
  } catch {
    return {};
  }
}
