// The public option and handle types of a client, apart from the class (client-core.ts).
import type { ApprovalOutcome, ApprovalRequest, JsonObject, SessionInfo, User } from "@patchbay/protocol";
import type { BackoffOptions, WebSocketFactory } from "@patchbay/protocol/runtime";
import type { IdempotencyStore, Tools } from "@patchbay/tools";
import type { ConnectionState } from "./connection";
import type { ClientError } from "./errors";
import type { ReplyResult, SessionSnapshot } from "./http-api";
import type { Session } from "./session";

/**
 * Options of `new Client(...)`. A backend passes `apiKey` and `secret` (it may then act for any
 * user and mint user tokens); a page passes only `baseUrl` and calls `setUser`.
 *
 * @example
 * ```ts
 * const backend = new Client({ baseUrl: "http://127.0.0.1:8787", apiKey, secret });
 * const page = new Client({ baseUrl: location.origin, tokenProvider: () => fetchToken() });
 * ```
 */
export interface ClientOptions {
  /** The server, `http(s)://host[:port]`; the socket goes to `ws(s)://host[:port]/v1/client`. */
  baseUrl: string;
  apiKey?: string;
  secret?: string;
  /**
   * Mints a fresh user token when the current one is expired or was refused, before a
   * (re)connect or an HTTP call. A page usually asks its backend.
   */
  tokenProvider?: (user: User | undefined) => Promise<string> | string;
  /** Reconnect backoff and how many consecutive failed dials to allow. */
  reconnect?: BackoffOptions & { maxAttempts?: number };
  /** Ping period; default what the server asks for in `welcome`. */
  heartbeatIntervalMs?: number;
  /** A socket silent for this long is dead and is replaced. Default twice the ping period. */
  heartbeatTimeoutMs?: number;
  /** How long `create`, `resume` and HTTP calls wait for an answer. Default 15 s. */
  requestTimeoutMs?: number;
  /** Replaces the runtime's WebSocket (the Node entry uses `ws`, the browser entry the native one). */
  createSocket?: WebSocketFactory;
  /** Replaces the global `fetch` for the HTTP API. */
  fetch?: typeof fetch;
  /**
   * Where page tools keep finished results by call, so a call delivered again (a reconnect, a
   * reload) is answered without running twice. The browser entry defaults to `sessionStorage`
   * (a `WebStorageIdempotencyStore`, kept across reloads of the tab); Node to memory.
   */
  idempotencyStore?: IdempotencyStore;
}

/**
 * Typed events of a {@link Client}.
 *
 * @example
 * ```ts
 * client.on("state", (state) => console.log("connection", state));
 * ```
 */
export interface ClientEvents {
  /** The connection state changed. */
  state: [state: ConnectionState, previous: ConnectionState];
  /** An error that no pending call could be told about (a refused token, a broken frame). */
  error: [error: ClientError];
}

/**
 * Options of `sessions.create`.
 *
 * @example
 * ```ts
 * await agent.sessions.create({ tools, metadata: { page: "checkout" } });
 * ```
 */
export interface CreateSessionOptions {
  /** Tools that run in this page for the session. */
  tools?: Tools;
  metadata?: JsonObject;
  /** The user the session is for; only a backend (API key) may name one. */
  userId?: string;
}

/**
 * Options of `sessions.resume`.
 *
 * @example
 * ```ts
 * await agent.sessions.resume(savedId, { tools });
 * ```
 */
export interface ResumeSessionOptions {
  /** Tools that run in this page for the session. */
  tools?: Tools;
  /**
   * Called with the session as soon as it exists, before the replayed events are applied, to
   * attach listeners that should see them (each replayed event is emitted once). `resume`
   * itself resolves only after the replay, with `conversation` and `approvals` complete.
   */
  beforeReplay?: (session: Session) => void;
}

/**
 * The sessions of one agent.
 *
 * @example
 * ```ts
 * const { sessions } = client.agent("support");
 * const session = await sessions.create({ tools });
 * ```
 */
export interface AgentSessions {
  /** Opens a new session over the socket. */
  create(options?: CreateSessionOptions): Promise<Session>;
  /** Attaches to an existing session (after a page reload) and replays its events. */
  resume(sessionId: string, options?: ResumeSessionOptions): Promise<Session>;
  /** Reads a session and its conversation over HTTP. */
  get(sessionId: string): Promise<SessionSnapshot>;
  /** Lists the agent's sessions over HTTP (a backend may filter by user). */
  list(options?: { userId?: string }): Promise<SessionInfo[]>;
  /** Deletes a session over HTTP. */
  delete(sessionId: string): Promise<void>;
  /**
   * Replies in the backend's own words, over HTTP (API key only), to the message a dispatch
   * worker is handling (`dispatch.text: enabled`) instead of calling `answer`: the reply is added
   * as an assistant message and the user's turn ends with it (`answered_by_worker`). Give
   * `messageId` to make sure it answers that message; `commandId` makes a retry safe (one is
   * made up when left out). A `conflict` error when no turn of the session waits for a worker.
   */
  reply(sessionId: string, text: string, options?: ReplyOptions): Promise<ReplyResult>;
  /** The approvals of a session waiting for the user, over HTTP (a backend, or the session's user). */
  approvals(sessionId: string): Promise<ApprovalRequest[]>;
  /**
   * Answers one approval of a session over HTTP, without attaching to it; resolves with how it
   * ended (`"expired"` when the answer came too late), like `session.decide`.
   */
  decide(
    sessionId: string,
    approvalId: string,
    decision: { allowed: boolean; reason?: string },
  ): Promise<ApprovalOutcome>;
}

/**
 * Options of `sessions.reply`.
 *
 * @example
 * ```ts
 * await client.agent("support").sessions.reply(message.sessionId!, "A colleague will call you.", { messageId: message.id });
 * ```
 */
export interface ReplyOptions {
  /** The user message it answers; the reply is refused (`conflict`) when the turn answers another. */
  messageId?: string;
  /** Makes a retried reply change nothing. Default: a new id per call. */
  commandId?: string;
}

/**
 * One agent as the client sees it: its sessions, and a `Tools` registry for a dispatch worker
 * to host for every session of the agent.
 *
 * @example
 * ```ts
 * const agent = client.agent("support");
 * agent.tools.register({ name: "lookup_order", description: "Look up an order", run });
 * ```
 */
export interface AgentHandle {
  readonly name: string;
  readonly tools: Tools;
  readonly sessions: AgentSessions;
}
