import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { ToolSpec } from "@patchbay/protocol";
import type { RawData } from "ws";
import type { ServerLimits } from "../config/limits";
import { checkDeclaredTools } from "../tools/declared-tools";
import { PreAuthGate } from "./pre-auth-gate";
import { TokenBucket, type TokenBucketOptions } from "./rate-limit";

/** Seconds of the sustained rate a byte quota lets through at once. */
const BURST_SECONDS = 8;

/** A byte quota's bucket options: `rate` bytes per second, bursts of {@link BURST_SECONDS} of it. */
function byteRate(rate: number): TokenBucketOptions {
  return { capacity: rate * BURST_SECONDS, refillPerSecond: rate };
}

/** Why a frame was refused before it was decoded; `close` when the socket is to go. */
export interface Refusal {
  code: "quota_exceeded" | "frame_too_large";
  message: string;
  close: boolean;
}

/** The guards each admitted upgrade request got (see {@link SocketGuards.admit}). */
const admittedRequests = new WeakMap<IncomingMessage, ConnectionGuards>();

/** The guards an upgrade request was admitted with, for the endpoint that takes it over. */
export function admissionOf(request: IncomingMessage): ConnectionGuards | undefined {
  return admittedRequests.get(request);
}

/**
 * The limits of limits.ts as they apply to sockets, server-wide: unauthenticated sockets in total
 * and per address (client and worker sockets alike), and one byte bucket per user shared by all
 * of that user's sockets.
 */
export class SocketGuards {
  /** Sockets waiting for hello (ConnectionGuards releases its own). */
  readonly gate: PreAuthGate;
  private readonly users = new Map<string, { bucket: TokenBucket; sockets: number }>();
  /** The byte rate of one socket and of one user, shared by their buckets. */
  readonly connectionRate: TokenBucketOptions;
  private readonly userRate: TokenBucketOptions;

  constructor(readonly limits: ServerLimits) {
    this.gate = new PreAuthGate(limits);
    this.connectionRate = byteRate(limits.connectionBytesPerSecond);
    this.userRate = byteRate(limits.userBytesPerSecond);
  }

  /**
   * The guards of a new socket, or `null` after answering 503 when too many wait for `hello`.
   * Every WebSocket upgrade passes here; the socket leaves the gate when it authenticates or
   * closes, whichever endpoint (or none) takes it.
   */
  admit(request: IncomingMessage, socket: Duplex): ConnectionGuards | null {
    const address = request.socket.remoteAddress ?? "unknown";
    const limit = this.gate.admit(address);
    if (limit !== undefined) {
      socket.end(
        `HTTP/1.1 503 Service Unavailable\r\nretry-after: 5\r\nconnection: close\r\ncontent-type: text/plain\r\n\r\ntoo many sockets waiting to authenticate (limit ${limit})\n`,
      );
      return null;
    }
    const guards = new ConnectionGuards(this, address);
    // One listener shared by every socket (close is emitted once): no closure per connection.
    (socket as GuardedSocket)[GUARDS] = guards;
    socket.on("close", closeGuards);
    admittedRequests.set(request, guards);
    return guards;
  }

  /** Sockets connected but not yet authenticated. */
  get waiting(): number {
    return this.gate.size;
  }

  userBucket(userId: string): TokenBucket {
    let entry = this.users.get(userId);
    if (!entry) {
      entry = { bucket: new TokenBucket(this.userRate), sockets: 0 };
      this.users.set(userId, entry);
    }
    entry.sockets += 1;
    return entry.bucket;
  }

  releaseUser(userId: string): void {
    const entry = this.users.get(userId);
    if (entry && --entry.sockets <= 0) this.users.delete(userId);
  }
}

/** One socket's share: its byte bucket, its user's, and its place at the pre-auth gate. */
export class ConnectionGuards {
  private readonly bucket: TokenBucket;
  private userBucket: TokenBucket | undefined;
  private userId: string | undefined;
  /** Authenticated without byte quotas (a worker): frames are no longer charged. */
  private exempt = false;
  private done = false;
  /** Still counted by the pre-authentication gate. */
  private gated = true;

  constructor(
    private readonly server: SocketGuards,
    private readonly address: string,
  ) {
    this.bucket = new TokenBucket(server.connectionRate);
  }

  /** The deepest nesting a frame may have (`maxJsonDepth`). */
  get maxJsonDepth(): number {
    return this.server.limits.maxJsonDepth;
  }

  /** Charges a frame's bytes; a refusal says why. Before `hello`, frames are kept small. */
  charge(data: RawData, authenticated: boolean): Refusal | undefined {
    if (authenticated && this.exempt) return undefined;
    const limits = this.server.limits;
    const bytes = size(data);
    if (!authenticated && bytes > limits.maxPreAuthFrameBytes) {
      return {
        code: "frame_too_large",
        message: `a frame before hello may have at most ${limits.maxPreAuthFrameBytes} bytes (limit maxPreAuthFrameBytes)`,
        close: true,
      };
    }
    if (!this.bucket.take(bytes)) {
      return {
        code: "quota_exceeded",
        message: `this socket sends more than ${limits.connectionBytesPerSecond} bytes per second (limit connectionBytesPerSecond)`,
        close: false,
      };
    }
    if (this.userBucket && !this.userBucket.take(bytes)) {
      this.bucket.refund(bytes);
      return {
        code: "quota_exceeded",
        message: `this user's sockets send more than ${limits.userBytesPerSecond} bytes per second (limit userBytesPerSecond)`,
        close: false,
      };
    }
    return undefined;
  }

  /**
   * The socket said `hello`: it leaves the gate and, for a user, shares that user's bucket.
   * Without `byteQuotas` (a worker, the operator's own process) its frames are no longer charged.
   */
  authenticated(userId: string | undefined, byteQuotas = true): void {
    this.leaveGate();
    if (!byteQuotas) this.exempt = true;
    if (userId !== undefined && this.userId === undefined && !this.done) {
      this.userId = userId;
      this.userBucket = this.server.userBucket(userId);
    }
  }

  /** Leaves the pre-authentication gate, once. */
  private leaveGate(): void {
    if (!this.gated) return;
    this.gated = false;
    this.server.gate.release(this.address);
  }

  /**
   * The socket's endpoint took it over and calls {@link gone} when it closes: the socket's own
   * close listener (for sockets no endpoint takes) is removed, so an idle socket holds one
   * listener less (and no array of two).
   */
  handOver(socket: Duplex): void {
    if ((socket as GuardedSocket)[GUARDS] !== this) return;
    socket.off("close", closeGuards);
  }

  /** Refuses tools whose schemas could not be checked in bounded time (`invalid_tool_spec`). */
  checkTools(tools: readonly ToolSpec[] | undefined): void {
    if (tools) checkDeclaredTools(tools, this.server.limits);
  }

  gone(): void {
    if (this.done) return;
    this.done = true;
    this.leaveGate();
    if (this.userId !== undefined) this.server.releaseUser(this.userId);
  }
}

const GUARDS = Symbol("patchbay.guards");
type GuardedSocket = Duplex & { [GUARDS]?: ConnectionGuards };

function closeGuards(this: GuardedSocket): void {
  this[GUARDS]?.gone();
}

function size(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.byteLength, 0);
  return (data as ArrayBuffer | Buffer).byteLength;
}
