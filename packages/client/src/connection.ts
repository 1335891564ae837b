import type { ClientToServerFrame, ServerToClientFrame } from "@patchbay/protocol";
import { decodeServerFrame, encodeResultFrame, PROTOCOL_VERSION } from "@patchbay/protocol/lite";
import {
  EventEmitter,
  type HandshakeStep,
  ReconnectingSocket,
  type ReconnectingSocketOptions,
} from "@patchbay/protocol/runtime";
import {
  AuthError,
  type ClientError,
  DisconnectedError,
  errorFromWire,
  ProtocolViolationError,
} from "./errors";

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
 */
export interface ConnectionOptions extends ReconnectingSocketOptions {
  /**
   * The credentials for the next `hello`. `refresh` is true after the server refused the last
   * ones, so a token provider can mint a fresh token.
   */
  auth: (context: { refresh: boolean }) => Promise<HelloAuth>;
  /** Whether refused credentials are worth one refresh (a token provider is set). */
  canRefreshAuth?: () => boolean;
  clientInfo?: { name: string; version: string };
  /** Why a connection could not be made, where the runtime says (Node); see connect-failure.ts. */
  connectFailure?: (error: unknown) => string | undefined;
}

/**
 * Events of a {@link Connection}.
 */
export interface ConnectionEvents {
  state: [state: ConnectionState, previous: ConnectionState];
  /** A socket was authenticated; `reconnect` is false only for the first one. */
  welcome: [frame: WelcomeFrame, reconnect: boolean];
  /** A frame after `welcome` other than heartbeats. */
  frame: [frame: ServerToClientFrame];
  /**
   * A welcomed socket went away (why, as a sentence); a reconnect follows. A string, not an
   * error: a deliberate close made one with its stack for nothing to throw.
   */
  lost: [why: string];
  /** The connection stopped trying (credentials refused, protocol refused, or too many failed dials). */
  failed: [error: ClientError];
  /** Something worth reporting that did not end the connection. */
  error: [error: ClientError];
}

/**
 * The page's end of `/v1/client`: a {@link ReconnectingSocket} (hello, heartbeat, backoff) with
 * the client channel's rules on top: `hello` with auth on every dial (one refresh of refused
 * credentials), a wrong address or a refused protocol reported at once, frames decoded without
 * zod, and results too large for the server sent as failed results.
 */
export class Connection extends EventEmitter<ConnectionEvents> {
  readonly #options: ConnectionOptions;
  readonly #socket: ReconnectingSocket<ServerToClientFrame>;
  #welcome: WelcomeFrame | undefined;
  #welcomedBefore = false;
  #refreshAuth = false;
  #authRefreshed = false;

  constructor(options: ConnectionOptions) {
    super();
    this.#options = options;
    const { url } = options;
    this.#socket = new ReconnectingSocket<ServerToClientFrame>(options, {
      hello: () => this.#hello(),
      decode: (data) => this.#decode(data),
      handshake: (frame) => this.#handshake(frame),
      welcome: (frame, reconnect) => {
        this.#welcome = frame as WelcomeFrame;
        this.#welcomedBefore = true;
        this.#authRefreshed = false;
        this.emit("welcome", frame as WelcomeFrame, reconnect);
      },
      frame: (frame) => this.emit("frame", frame),
      lost: (reason) => this.emit("lost", `connection lost: ${reason}`),
      reconnecting: () => {},
      failed: (error) => {
        this.#authRefreshed = false;
        this.emit("failed", error as ClientError);
      },
      state: (state, previous) => this.emit("state", state, previous),
      describeError: options.connectFailure,
      // Only before the first welcome: a server that was there and went away is waited for.
      unreachable: (reason, cause) =>
        this.#welcomedBefore
          ? undefined
          : new DisconnectedError(`cannot connect to ${url}: ${reason}`, { cause }),
      exhausted: (message) => new DisconnectedError(message),
    });
  }

  /** The current state. */
  get state(): ConnectionState {
    return this.#socket.state;
  }

  /** The `welcome` of the current socket, while it is open. */
  get welcome(): WelcomeFrame | undefined {
    return this.#socket.state === "open" ? this.#welcome : undefined;
  }

  /** Starts dialing if the connection is idle; does nothing otherwise. */
  open(): void {
    this.#socket.open();
  }

  /**
   * Writes a frame if the socket is open and welcomed. Returns false (and writes nothing)
   * otherwise: callers keep what must survive a reconnect and send it again after `welcome`.
   */
  send(frame: ClientToServerFrame): boolean {
    if (this.#socket.state !== "open") return false;
    const welcome = this.#welcome;
    // A result too large for the server becomes a failed result: the call fails once instead
    // of being refused (and waiting out its timeout).
    return this.#socket.send(
      frame.type === "tool.result" && welcome
        ? encodeResultFrame(frame, welcome.maxResultFrameBytes ?? welcome.maxFrameBytes)
        : JSON.stringify(frame),
    );
  }

  /** Drops the current socket (if any) and dials again at once, e.g. after new credentials. */
  reconnect(): void {
    this.#socket.reconnect("reconnecting with new credentials");
  }

  /** Closes the socket for good. */
  close(): void {
    void this.#socket.close(1000, "the client was closed");
  }

  async #hello(): Promise<string> {
    let auth: HelloAuth;
    try {
      auth = await this.#options.auth({ refresh: this.#refreshAuth });
    } catch (error) {
      throw error instanceof AuthError ? error : new AuthError(`no credentials: ${(error as Error).message}`);
    }
    this.#refreshAuth = false;
    const hello: ClientToServerFrame = { type: "hello", protocol: PROTOCOL_VERSION, auth };
    if (this.#options.clientInfo) hello.client = this.#options.clientInfo;
    return JSON.stringify(hello);
  }

  #decode(data: unknown): ServerToClientFrame | undefined {
    if (typeof data !== "string") {
      this.emit("error", new ProtocolViolationError("the server sent a binary frame"));
      return undefined;
    }
    // The server's frame limit bounds what it accepts, not what it sends: a conversation item
    // with a 5 MiB image is more than 5 MiB of JSON. The socket already holds the frame anyway.
    const decoded = decodeServerFrame(data, { maxBytes: MAX_INCOMING_FRAME_BYTES });
    if (decoded.ok) return decoded.frame;
    // Newer servers may send frame types this client does not know: ignoring them is the rule.
    if (decoded.error.code !== "unknown_frame_type") {
      this.emit(
        "error",
        new ProtocolViolationError(`undecodable frame from the server: ${decoded.error.message}`, {
          wireCode: decoded.error.code,
          path: decoded.error.path,
        }),
      );
    }
    return undefined;
  }

  #handshake(frame: ServerToClientFrame): HandshakeStep {
    if (frame.type === "welcome") return { welcome: true, heartbeatIntervalMs: frame.heartbeatIntervalMs };
    if (frame.type !== "error") return undefined;
    const error = errorFromWire(frame);
    if (error instanceof AuthError) {
      if (!this.#authRefreshed && (this.#options.canRefreshAuth?.() ?? false)) {
        // One refresh per refusal: a provider that keeps handing out bad tokens must not loop.
        this.#authRefreshed = true;
        this.#refreshAuth = true;
        return { redial: true };
      }
      return { fail: error };
    }
    if (frame.code === "protocol_version") return { fail: error };
    // Anything else before welcome: report it and let the close (or the hello timeout) redial.
    this.emit("error", error);
    return undefined;
  }
}
