import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import {
  type ClientToServerFrame,
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_RESULT_FRAME_BYTES,
  type FrameDecodeError,
  PROTOCOL_VERSION,
  resultTooLarge,
  type ServerToClientFrame,
} from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { WebSocket, WebSocketServer } from "ws";
import type { Authenticator, Principal } from "../auth/auth";
import { AuthError, ServerError, SessionElsewhereError, toWireError } from "../errors";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import type { SessionDirectory } from "../sessions/session-directory";
import type { ClientRelay, EdgeRelay } from "./client-relay";
import { type Correlation, correlation, correlationOf } from "./frame-correlation";
import { oversizedResult } from "./oversized-result";
import { type PeerEndpoint, PeerSocket, type PeerSocketLimits, peerSocketServer } from "./peer-socket";
import { SessionAttachments } from "./session-attachments";
import { answerPageCall, handleSessionFrame } from "./session-frames";
import { admissionOf, type ConnectionGuards } from "./socket-guards";

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
  /**
   * How often the server sends a JSON `ping` once the client said hello; a socket on which
   * nothing arrived for two intervals is closed (4408).
   */
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

/** The peer-socket limits of a client socket. */
function peerLimits(limits: ClientSocketLimits): PeerSocketLimits {
  return {
    maxFrameBytes: limits.maxFrameBytes,
    maxResultFrameBytes: limits.maxResultFrameBytes,
    maxBufferedBytes: limits.maxBufferedBytes,
    slowReaderGraceMs: limits.slowReaderGraceMs,
    heartbeatIntervalMs: limits.heartbeatIntervalMs,
    helloTimeoutMs: limits.helloTimeoutMs,
    rate: {
      burst: limits.rateBurst,
      perSecond: limits.ratePerSecond,
      maxViolations: limits.maxRateViolations,
    },
  };
}

/**
 * The `/v1/client` WebSocket endpoint: authenticates `hello`, opens and resumes sessions,
 * relays their events, and takes messages, interrupts, page tool results and approval
 * decisions. Each connection is a {@link PeerSocket} (hello timeout, heartbeats, rate limit,
 * quotas, send buffer bound); bad frames are answered with an `error` frame naming what was
 * wrong, and nothing a connection sends reaches a session it has not opened.
 */
export class ClientSocketServer {
  private readonly wss: WebSocketServer;
  private readonly connections = new Set<ClientConnection>();
  readonly limits: ClientSocketLimits;
  private readonly shared: ConnectionShared;

  constructor(
    private readonly options: {
      authenticator: Authenticator;
      sessions: SessionDirectory;
      logger: Logger;
      metrics: ServerMetrics;
      limits?: Partial<ClientSocketLimits>;
      /** Cluster mode: sessions other nodes own are served by them across the bus. */
      relay?: ClientRelay;
    },
  ) {
    this.limits = { ...DEFAULT_CLIENT_SOCKET_LIMITS, ...options.limits };
    // The connections are tracked here (`connections`), so ws keeps no set of its own: one
    // close listener (a closure) less on each socket, an idle connection's memory being mostly
    // what it holds.
    this.wss = peerSocketServer(this.limits, { clientTracking: false });
    const { metrics } = options;
    // What every connection shares, made once: an idle connection holds no copy of it.
    this.shared = {
      ...options,
      limits: this.limits,
      peerLimits: peerLimits(this.limits),
      onRefused: (code) => metrics.framesRejected.inc({ code }),
      gone: (connection) => {
        this.connections.delete(connection);
        metrics.connectedClients.set(this.connections.size);
      },
    };
  }

  /** Takes over an HTTP upgrade request for `/v1/client` (admitted by the server's socket guards). */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const guards = admissionOf(request);
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      const connection = new ClientConnection(ws, this.shared, guards);
      // The peer socket tells the guards when it closes (ws emits close after the socket's).
      guards?.handOver(socket);
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
    for (const connection of this.connections) connection.peer.close(code, reason);
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }
}

/** What the connections of one {@link ClientSocketServer} share. */
interface ConnectionShared {
  authenticator: Authenticator;
  sessions: SessionDirectory;
  logger: Logger;
  metrics: ServerMetrics;
  relay?: ClientRelay | undefined;
  limits: ClientSocketLimits;
  peerLimits: PeerSocketLimits;
  onRefused: (code: string) => void;
  /** The connection closed: the server forgets it. */
  gone: (connection: ClientConnection) => void;
}

/** The work chain of a connection with no frame waiting. */
const IDLE: Promise<void> = Promise.resolve();

/** One client socket: what its frames mean (the transport is its {@link PeerSocket}). */
class ClientConnection implements PeerEndpoint<"client-to-server"> {
  readonly id = `k_${nanoid(12)}`;
  readonly peer: PeerSocket<"client-to-server">;
  private principal: Principal | undefined;
  private readonly sessions: SessionAttachments;
  /** This connection's sessions that other nodes own (cluster mode). */
  private readonly edge: EdgeRelay | undefined;
  /**
   * Frames are handled one after another, so a resume's replay and a send cannot interleave.
   * Back to the shared settled promise once none is waiting (an idle connection holds none).
   */
  private work: Promise<void> = IDLE;
  /** Frames queued on {@link work} and not yet handled. */
  private handling = 0;

  constructor(
    ws: WebSocket,
    private readonly options: ConnectionShared,
    private readonly guards: ConnectionGuards | undefined,
  ) {
    const limits = options.limits;
    this.peer = new PeerSocket(
      ws,
      {
        id: this.id,
        channel: "client-to-server",
        limits: options.peerLimits,
        logger: options.logger,
        guards,
        onRefused: options.onRefused,
      },
      this,
    );
    // The peer socket is the attachments' socket as it is (no facade object and closures per
    // connection: an idle session's memory is mostly what its connection holds).
    this.sessions = new SessionAttachments(this.peer, options.sessions, limits.maxSessionsPerSocket);
    this.edge = options.relay?.edge(this.id, (frame) => this.send(frame));
  }

  /**
   * A logger whose lines name the connection: made when a line is written, as an idle
   * connection holding a child logger would cost about 80 bytes and most never write one.
   */
  private get logger(): Logger {
    return this.options.logger.child({ connectionId: this.id });
  }

  helloTimeout(): void {
    this.peer.close(1008, "no hello within the time allowed");
  }

  closed(): void {
    this.sessions.detachAll();
    this.edge?.close();
    this.options.gone(this);
  }

  frame(frame: ClientToServerFrame): void {
    // A page's answer to a call while no other frame of this socket is in hand is taken at once:
    // it would be handled next anyway, and the promises a queued frame goes through cost a page
    // tool call more than the answer itself.
    if (
      this.handling === 0 &&
      frame.type === "tool.result" &&
      this.principal !== undefined &&
      this.edge?.ownerOf(frame) === undefined
    ) {
      try {
        answerPageCall(frame, this.sessions);
      } catch (error) {
        this.failed(frame, error);
      }
      return;
    }
    this.handling++;
    this.work = this.work.then(async () => {
      try {
        await this.handle(frame);
      } catch (error) {
        this.failed(frame, error);
      } finally {
        if (--this.handling === 0) this.work = IDLE;
      }
    });
  }

  private failed(frame: ClientToServerFrame, error: unknown): void {
    if (!(error instanceof ServerError))
      this.logger.error("client frame failed", { type: frame.type, error });
    this.reject({ ...toWireError(error), ...correlationOf(frame) });
    if (error instanceof AuthError) this.peer.close(1008, "unauthorized");
  }

  invalid(error: FrameDecodeError, buffer: Buffer, ids?: Correlation): void {
    if (error.code === "frame_too_large" && this.failOversizedResult(buffer)) return;
    this.reject({
      code: error.code,
      message: error.message,
      ...(error.path === undefined ? {} : { path: error.path }),
      ...(ids ?? correlation(buffer)),
    });
  }

  /**
   * The rate limit guards against a peer sending what nobody asked for. A `tool.result` that
   * answers a page tool call of a session attached here, which the server still waits for, was
   * asked for: the server bounds how many there are (one free answer per delivery; repeats pay),
   * so it costs no token, and a page answering calls flat out is not cut at `ratePerSecond`
   * calls per second. Progress, say and hold frames a page may send any number of, so they are
   * charged like any other frame.
   */
  freeAnswer(frame: ClientToServerFrame): boolean {
    if (frame.type !== "tool.result") return false;
    return this.sessions.get(frame.sessionId)?.live.pages.claimAnswer(frame.callId, frame.attempt) ?? false;
  }

  /**
   * A `tool.result` over the result limit (from a client that did not check it) fails its call
   * once with a sentence the model can act on, instead of leaving it to its timeout. The client
   * gets the `frame_too_large` error too. Returns whether the frame was such a result.
   */
  private failOversizedResult(buffer: Buffer): boolean {
    const big = oversizedResult(buffer, "tool.result");
    if (!big?.sessionId) return false;
    const attachment = this.sessions.get(big.sessionId);
    if (!attachment) return false;
    const limit = this.options.limits.maxResultFrameBytes;
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
    // After hello the peer socket answers pings itself; before it, they are answered here.
    if (frame.type === "ping") {
      this.send({ type: "pong", ...(frame.nonce === undefined ? {} : { nonce: frame.nonce }) });
      return;
    }
    if (frame.type === "pong") return;
    if (frame.type === "hello") return this.hello(frame);
    const principal = this.principal;
    if (!principal) throw new AuthError("missing", "the first frame must be 'hello'");
    const owner = this.edge?.ownerOf(frame);
    if (owner) return this.edge!.forward(owner, principal, frame);
    try {
      await handleSessionFrame(frame, {
        principal,
        connectionId: this.id,
        directory: this.options.sessions,
        attachments: this.sessions,
        checkTools: this.guards ? (tools) => this.guards!.checkTools(tools) : undefined,
        send: (reply) => this.send(reply),
      });
    } catch (error) {
      // Cluster mode: another node owns the session; it serves this client across the bus.
      if (this.edge && error instanceof SessionElsewhereError && frame.type === "session.resume")
        return this.edge.forward(error.owner, principal, frame);
      throw error;
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
      this.peer.close(1002, "unsupported protocol version");
      return;
    }
    this.principal = await this.options.authenticator.fromHello(frame.auth);
    this.peer.authenticate(this.principal.kind === "user" ? this.principal.userId : undefined);
    this.send({
      type: "welcome",
      protocol: PROTOCOL_VERSION,
      connectionId: this.id,
      user: this.principal.kind === "user" ? { id: this.principal.userId } : null,
      heartbeatIntervalMs: this.options.limits.heartbeatIntervalMs,
      maxFrameBytes: this.options.limits.maxFrameBytes,
      maxResultFrameBytes: this.options.limits.maxResultFrameBytes,
    });
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
    this.peer.send(frame);
  }
}
