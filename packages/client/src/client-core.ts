import type {
  ApprovalOutcome,
  ApprovalRequest,
  ClientToServerFrame,
  JsonObject,
  ServerToClientFrame,
  SessionInfo,
  User,
} from "@patchbay/protocol";
import { type IdempotencyStore, Tools } from "@patchbay/tools";
import { EventEmitter } from "eventemitter3";
import type { BackoffOptions } from "./backoff";
import { Connection, type ConnectionState, type HelloAuth } from "./connection";
import { AuthError, type ClientError, DisconnectedError, errorFromWire, TimeoutError } from "./errors";
import { HttpApi, type ReplyResult, type SessionSnapshot } from "./http-api";
import { PageToolRunner } from "./page-tool-runner";
import { Session, type SessionHost } from "./session";
import { createUserToken, tokenExpiresAt, type UserTokenOptions } from "./user-token";
import type { WebSocketFactory } from "./websocket-like";

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

interface PendingRequest {
  frame: Extract<ClientToServerFrame, { type: "session.create" | "session.resume" }>;
  /** Written on the current socket. */
  sent: boolean;
  /** Safe to write again after a reconnect (a resume is; a create is not). */
  repeatable: boolean;
  tools: Tools | undefined;
  session: Session | undefined;
  beforeReplay?: ((session: Session) => void) | undefined;
  resolve: (session: Session) => void;
  reject: (error: ClientError) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Renew a user token this long before it expires, so a dial never presents a stale one. */
const TOKEN_RENEW_MARGIN_MS = 10_000;

/**
 * The shared implementation of `Client`. The package entries bind it to a WebSocket: `ws` in
 * Node, the native one in browsers.
 *
 * @example
 * ```ts
 * class MyClient extends ClientCore { constructor(o: ClientOptions) { super(o, (url) => new WebSocket(url)); } }
 * ```
 */
export class ClientCore extends EventEmitter<ClientEvents> {
  readonly #options: ClientOptions;
  readonly #createSocket: WebSocketFactory;
  readonly #http: HttpApi;
  readonly #agents = new Map<string, AgentHandle>();
  readonly #sessions = new Map<string, Session>();
  readonly #requests = new Map<string, PendingRequest>();
  #connection: Connection | undefined;
  #user: User | undefined;
  #token: string | undefined;
  #tokenRefresh: Promise<string> | undefined;
  readonly #sessionHost: SessionHost;

  constructor(options: ClientOptions, createSocket: WebSocketFactory) {
    super();
    if (!options.baseUrl) throw new TypeError("Client needs a baseUrl");
    this.#options = options;
    this.#createSocket = options.createSocket ?? createSocket;
    const http: ConstructorParameters<typeof HttpApi>[0] = {
      baseUrl: options.baseUrl,
      headers: (context) => this.#httpHeaders(context.refresh),
      canRefreshAuth: () => this.#canRefreshToken(),
      timeoutMs: this.#requestTimeoutMs,
    };
    if (options.fetch) http.fetch = options.fetch;
    this.#http = new HttpApi(http);
    this.#sessionHost = {
      send: (frame) => this.#connection?.send(frame) ?? false,
      connectionState: () => this.state,
      fetchEvents: (sessionId, after) => this.#http.events(sessionId, { after }),
      forget: (session) => {
        if (this.#sessions.get(session.id) === session) this.#sessions.delete(session.id);
      },
      requestTimeoutMs: this.#requestTimeoutMs,
      newId: () => this.#newId(),
    };
  }

  /** The connection state: `idle` until something needs the socket. */
  get state(): ConnectionState {
    return this.#connection?.state ?? "idle";
  }

  /** The user set with `setUser`, if any. */
  get user(): User | undefined {
    return this.#user;
  }

  /** The sessions this client holds open. */
  get sessions(): Session[] {
    return [...this.#sessions.values()];
  }

  /**
   * Acts as a user from now on, with a token the backend minted. A socket already open
   * re-authenticates with it (open sessions are resumed).
   *
   * @example
   * ```ts
   * client.setUser({ id: "user_42", name: "Ada" }, await fetch("/patchbay-token").then((r) => r.text()));
   * ```
   */
  setUser(user: User, token?: string): void {
    const changed = token !== this.#token || user.id !== this.#user?.id;
    this.#user = user;
    this.#token = token;
    const state = this.#connection?.state;
    if (changed && (state === "open" || state === "connecting" || state === "reconnecting")) {
      this.#connection?.reconnect();
    }
  }

  /**
   * Mints a user token for a page (backend only: needs the secret).
   *
   * @example
   * ```ts
   * app.get("/patchbay-token", async (req, res) => res.send(await client.createUserToken(req.user.id, { expiresIn: "15m" })));
   * ```
   */
  createUserToken(userId: string, options: UserTokenOptions = {}): Promise<string> {
    if (!this.#options.secret)
      return Promise.reject(new AuthError("createUserToken needs the client's secret"));
    return createUserToken(this.#options.secret, userId, options);
  }

  /**
   * The handle of one agent, the same object for the same name.
   *
   * @example
   * ```ts
   * const session = await client.agent("support").sessions.create();
   * ```
   */
  agent(name: string): AgentHandle {
    let handle = this.#agents.get(name);
    if (!handle) {
      handle = {
        name,
        tools: new Tools(),
        sessions: {
          create: (options) => this.#createSession(name, options),
          resume: (sessionId, options) => this.#resumeSession(sessionId, options),
          get: (sessionId) => this.#http.getSession(sessionId),
          list: (options) => this.#http.listSessions(name, options),
          delete: async (sessionId) => {
            await this.#http.deleteSession(sessionId);
            this.#sessions.get(sessionId)?.markClosed(undefined);
          },
          approvals: (sessionId) => this.#http.approvals(sessionId),
          decide: (sessionId, approvalId, decision) =>
            this.#http.decideApproval(sessionId, approvalId, decision),
          reply: (sessionId, text, options = {}) =>
            this.#http.reply(sessionId, {
              commandId: options.commandId ?? this.#newId(),
              text,
              ...(options.messageId === undefined ? {} : { messageId: options.messageId }),
            }),
        },
      };
      this.#agents.set(name, handle);
    }
    return handle;
  }

  /**
   * Opens the socket now instead of on first use, and waits until it is open.
   *
   * @example
   * ```ts
   * await client.connect();
   * ```
   */
  connect(): Promise<void> {
    const connection = this.#ensureConnection();
    if (connection.state === "open") return Promise.resolve();
    if (connection.state === "closed") return Promise.reject(new DisconnectedError("the client was closed"));
    return new Promise((resolve, reject) => {
      const cleanup = () => {
        connection.off("welcome", onWelcome);
        connection.off("failed", onFailed);
        clearTimeout(timer);
      };
      const onWelcome = () => {
        cleanup();
        resolve();
      };
      const onFailed = (error: ClientError) => {
        cleanup();
        reject(error);
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new TimeoutError(`no connection within ${this.#requestTimeoutMs} ms`));
      }, this.#requestTimeoutMs);
      connection.on("welcome", onWelcome);
      connection.on("failed", onFailed);
      connection.open();
    });
  }

  /**
   * Closes every session (they live on on the server) and the socket, for good.
   *
   * @example
   * ```ts
   * await client.close();
   * ```
   */
  close(): void {
    for (const session of [...this.#sessions.values()]) session.close();
    const error = new DisconnectedError("the client was closed");
    for (const [id, request] of this.#requests) this.#settle(id, request, error);
    if (this.#connection) this.#connection.close();
    else this.#connection = this.#newConnection("closed");
  }

  // -------------------------------------------------------------------------------------------

  get #requestTimeoutMs(): number {
    return this.#options.requestTimeoutMs ?? 15_000;
  }

  #createSession(agent: string, options: CreateSessionOptions = {}): Promise<Session> {
    const frame: PendingRequest["frame"] = {
      type: "session.create",
      requestId: this.#newId(),
      agent,
      tools: options.tools?.list() ?? [],
    };
    if (options.metadata) frame.metadata = options.metadata;
    if (options.userId !== undefined) frame.userId = options.userId;
    return this.#request(frame, { repeatable: false, tools: options.tools, session: undefined });
  }

  #resumeSession(sessionId: string, options: ResumeSessionOptions = {}): Promise<Session> {
    const open = this.#sessions.get(sessionId);
    if (open) return Promise.resolve(open);
    const frame: PendingRequest["frame"] = {
      type: "session.resume",
      requestId: this.#newId(),
      sessionId,
      afterSeq: 0,
      tools: options.tools?.list() ?? [],
    };
    return this.#request(frame, {
      repeatable: true,
      tools: options.tools,
      session: undefined,
      beforeReplay: options.beforeReplay,
    });
  }

  #request(
    frame: PendingRequest["frame"],
    extra: Pick<PendingRequest, "repeatable" | "tools" | "session" | "beforeReplay">,
  ): Promise<Session> {
    if (this.#connection?.state === "closed") {
      return Promise.reject(new DisconnectedError("the client was closed"));
    }
    return new Promise<Session>((resolve, reject) => {
      const request: PendingRequest = { frame, sent: false, ...extra, resolve, reject, timer: undefined };
      request.timer = setTimeout(
        () =>
          this.#settle(
            frame.requestId,
            request,
            new TimeoutError(`${frame.type} got no answer within ${this.#requestTimeoutMs} ms`),
          ),
        this.#requestTimeoutMs,
      );
      this.#requests.set(frame.requestId, request);
      const connection = this.#ensureConnection();
      if (connection.state === "open") request.sent = connection.send(frame);
      else connection.open();
    });
  }

  #settle(requestId: string, request: PendingRequest, outcome: Session | ClientError): void {
    if (this.#requests.get(requestId) !== request) return;
    this.#requests.delete(requestId);
    clearTimeout(request.timer);
    if (outcome instanceof Session) request.resolve(outcome);
    else request.reject(outcome);
  }

  #ensureConnection(): Connection {
    this.#connection ??= this.#newConnection();
    return this.#connection;
  }

  #newConnection(initial?: "closed"): Connection {
    const base = this.#options.baseUrl.replace(/\/+$/, "");
    const url = `${base.replace(/^http/, "ws")}/v1/client`;
    const connection = new Connection({
      url,
      createSocket: this.#createSocket,
      auth: (context) => this.#helloAuth(context.refresh),
      canRefreshAuth: () =>
        this.#options.tokenProvider !== undefined &&
        (this.#user !== undefined || this.#options.apiKey === undefined),
      backoff: this.#options.reconnect ?? {},
      ...(this.#options.reconnect?.maxAttempts === undefined
        ? {}
        : { maxReconnectAttempts: this.#options.reconnect.maxAttempts }),
      ...(this.#options.heartbeatIntervalMs === undefined
        ? {}
        : { heartbeatIntervalMs: this.#options.heartbeatIntervalMs }),
      ...(this.#options.heartbeatTimeoutMs === undefined
        ? {}
        : { heartbeatTimeoutMs: this.#options.heartbeatTimeoutMs }),
      clientInfo: { name: "@patchbay/client", version: "0.1.0" },
    });
    if (initial === "closed") connection.close();
    connection.on("state", (state, previous) => {
      for (const session of this.#sessions.values()) session.connectionStateChanged(state);
      this.emit("state", state, previous);
    });
    connection.on("welcome", () => this.#onWelcome());
    connection.on("lost", (error) => this.#onLost(error));
    connection.on("failed", (error) => this.#onFailed(error));
    connection.on("frame", (frame) => this.#onFrame(frame));
    connection.on("error", (error) => this.emit("error", error));
    return connection;
  }

  #onWelcome(): void {
    const connection = this.#connection!;
    // Sessions first: their resumes must not queue behind a slow create.
    for (const session of this.#sessions.values()) {
      const frame = session.resumeFrame(this.#newId()) as PendingRequest["frame"];
      const request: PendingRequest = {
        frame,
        sent: false,
        repeatable: true,
        tools: undefined,
        session,
        resolve: () => {},
        reject: (error) => session.handleError(error, undefined),
        timer: undefined,
      };
      request.timer = setTimeout(
        () =>
          this.#settle(
            frame.requestId,
            request,
            new TimeoutError(
              `resuming session ${session.id} got no answer within ${this.#requestTimeoutMs} ms`,
            ),
          ),
        this.#requestTimeoutMs,
      );
      this.#requests.set(frame.requestId, request);
      request.sent = connection.send(frame);
    }
    for (const request of this.#requests.values()) {
      if (!request.sent) request.sent = connection.send(request.frame);
    }
  }

  #onLost(error: DisconnectedError): void {
    for (const session of this.#sessions.values()) session.detached();
    for (const [id, request] of [...this.#requests]) {
      if (request.session) {
        // A reconnect resume of a known session: the next welcome sends a fresh one.
        clearTimeout(request.timer);
        this.#requests.delete(id);
      } else if (request.sent && !request.repeatable) {
        // The server may or may not have created it; only the caller can decide to try again.
        this.#settle(
          id,
          request,
          new DisconnectedError(`${request.frame.type} was cut off: ${error.message}`),
        );
      } else {
        request.sent = false;
      }
    }
  }

  #onFailed(error: ClientError): void {
    for (const [id, request] of [...this.#requests]) this.#settle(id, request, error);
    for (const session of this.#sessions.values()) session.handleError(error, undefined);
    this.emit("error", error);
  }

  #onFrame(frame: ServerToClientFrame): void {
    switch (frame.type) {
      case "session.opened":
        this.#onOpened(frame);
        return;
      case "error":
        this.#onErrorFrame(frame);
        return;
      case "welcome":
      case "ping":
      case "pong":
        return;
      case "tool.hold.ack":
        this.#sessions.get(frame.sessionId)?.handleHoldAck(frame);
        return;
      default:
        this.#sessions.get(frame.sessionId)?.handleEvent(frame);
    }
  }

  #onOpened(frame: Extract<ServerToClientFrame, { type: "session.opened" }>): void {
    const request = this.#requests.get(frame.requestId);
    if (!request) return;
    let session = request.session ?? this.#sessions.get(frame.session.id);
    if (!session) {
      const tools = request.tools;
      const runner =
        tools === undefined
          ? undefined
          : new PageToolRunner({
              tools,
              sessionId: frame.session.id,
              send: (f) => this.#connection?.send(f) ?? false,
              conversation: () => session?.conversation ?? [],
              ...(this.#options.idempotencyStore === undefined
                ? {}
                : { idempotencyStore: this.#options.idempotencyStore }),
            });
      session = new Session(this.#sessionHost, frame.session, runner);
      this.#sessions.set(session.id, session);
      request.beforeReplay?.(session);
    }
    // Registered before the promise settles: the replayed events right behind this frame need it.
    session.attached(frame.session);
    // `resume` resolves once the replay is applied, so approvals and the conversation are there.
    const opened = session;
    opened.whenCaughtUp((error) => this.#settle(frame.requestId, request, error ?? opened));
  }

  #onErrorFrame(frame: Extract<ServerToClientFrame, { type: "error" }>): void {
    const error = errorFromWire(frame);
    if (frame.requestId !== undefined) {
      const request = this.#requests.get(frame.requestId);
      if (request) {
        if (request.session && error.code === "not_found") {
          this.#requests.delete(frame.requestId);
          request.session.markClosed(error);
          return;
        }
        this.#settle(frame.requestId, request, error);
        if (request.session) request.session.handleError(error, undefined);
        return;
      }
    }
    if (frame.sessionId !== undefined) {
      const session = this.#sessions.get(frame.sessionId);
      if (session && sessionIsGone(frame)) {
        session.markClosed(error);
        return;
      }
      if (session) {
        session.handleError(error, frame.commandId);
        return;
      }
    }
    if (frame.commandId !== undefined) {
      for (const session of this.#sessions.values()) session.handleError(error, frame.commandId);
      return;
    }
    this.emit("error", error);
  }

  #newId(): string {
    return globalThis.crypto.randomUUID();
  }

  async #userToken(refresh: boolean): Promise<string> {
    const provider = this.#options.tokenProvider;
    const expiresAt = this.#token === undefined ? undefined : tokenExpiresAt(this.#token);
    const stale =
      this.#token === undefined ||
      refresh ||
      (expiresAt !== undefined && expiresAt - TOKEN_RENEW_MARGIN_MS < Date.now());
    if (stale && provider) {
      // Concurrent callers (a dial and an HTTP call) share one refresh.
      this.#tokenRefresh ??= Promise.resolve(provider(this.#user)).finally(() => {
        this.#tokenRefresh = undefined;
      });
      this.#token = await this.#tokenRefresh;
    }
    if (this.#token === undefined) {
      throw new AuthError("no credentials: pass apiKey and secret, or call setUser(user, token)");
    }
    return this.#token;
  }

  async #helloAuth(refresh: boolean): Promise<HelloAuth> {
    if (this.#user !== undefined || this.#options.apiKey === undefined) {
      return { kind: "user", token: await this.#userToken(refresh) };
    }
    const auth: HelloAuth = { kind: "api_key", apiKey: this.#options.apiKey };
    if (this.#options.secret !== undefined) auth.secret = this.#options.secret;
    return auth;
  }

  #canRefreshToken(): boolean {
    return (
      this.#options.tokenProvider !== undefined &&
      (this.#user !== undefined || this.#options.apiKey === undefined)
    );
  }

  async #httpHeaders(refresh: boolean): Promise<Record<string, string>> {
    if (this.#user !== undefined || this.#options.apiKey === undefined) {
      return { authorization: `Bearer ${await this.#userToken(refresh)}` };
    }
    const headers: Record<string, string> = { "x-api-key": this.#options.apiKey };
    if (this.#options.secret !== undefined) headers.authorization = `Bearer ${this.#options.secret}`;
    return headers;
  }
}

/**
 * An error frame that says the session itself is gone (deleted over HTTP while attached): the
 * server names it by `path: "sessionId"`, older servers by a bare `not_found` naming no command.
 */
function sessionIsGone(frame: Extract<ServerToClientFrame, { type: "error" }>): boolean {
  if (frame.code !== "not_found") return false;
  return frame.path === "sessionId" || (frame.path === undefined && frame.commandId === undefined);
}
