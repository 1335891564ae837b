import type { ServerToClientFrame, User } from "@patchbay/protocol";
import type { WebSocketFactory, WebSocketLike } from "@patchbay/protocol/runtime";
import { EventEmitter } from "@patchbay/protocol/runtime";
import { Tools } from "@patchbay/tools";
import { ClientAuth } from "./client-auth";
import type {
  AgentHandle,
  ClientEvents,
  ClientOptions,
  CreateSessionOptions,
  ResumeSessionOptions,
} from "./client-options";
import { Connection, type ConnectionState } from "./connection";
import { type ClientError, DisconnectedError, errorFromWire, TimeoutError } from "./errors";
import { HttpApi } from "./http-api";
import { PageToolRunner } from "./page-tool-runner";
import { PendingRequests, type RequestFrame } from "./pending-requests";
import type { Session } from "./session";
import { SessionChannel, type SessionHost } from "./session-channel";
import type { UserTokenOptions } from "./user-token";

/**
 * What a package entry gives the client of its runtime: how to open a socket, and (Node only:
 * a browser hides the reason, and its WebSocket has no stream to hold) why a connection could
 * not be made and how to hold a turn's writes for one flush.
 */
export interface ClientRuntime {
  createSocket: WebSocketFactory;
  connectFailure?: (error: unknown) => string | undefined;
  holdWrites?: (socket: WebSocketLike) => void;
}

/** What a request waits for besides its answer: the page's tools, or the session it resumes. */
interface RequestContext {
  tools?: Tools | undefined;
  /** Set for the resume of a session this client holds (after a reconnect, or its owner moved). */
  channel?: SessionChannel;
  /** Called with a resumed session before its replay is applied (`ResumeSessionOptions`). */
  beforeReplay?: ((session: Session) => void) | undefined;
}

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
  readonly #runtime: ClientRuntime;
  readonly #auth: ClientAuth;
  readonly #http: HttpApi;
  readonly #agents = new Map<string, AgentHandle>();
  readonly #channels = new Map<string, SessionChannel>();
  readonly #requests: PendingRequests<Session, RequestContext>;
  readonly #sessionHost: SessionHost;
  #connection: Connection | undefined;

  constructor(options: ClientOptions, runtime: ClientRuntime) {
    super();
    if (!options.baseUrl) throw new TypeError("Client needs a baseUrl");
    this.#options = options;
    this.#runtime = options.createSocket ? { ...runtime, createSocket: options.createSocket } : runtime;
    const auth = new ClientAuth(options);
    this.#auth = auth;
    const timeoutMs = options.requestTimeoutMs ?? 15_000;
    this.#requests = new PendingRequests(timeoutMs);
    this.#http = new HttpApi({
      baseUrl: options.baseUrl,
      headers: (context) => auth.headers(context.refresh),
      canRefreshAuth: () => auth.canRefresh(),
      timeoutMs,
      ...(options.fetch ? { fetch: options.fetch } : {}),
      connectFailure: runtime.connectFailure,
    });
    this.#sessionHost = {
      send: (frame) => this.#connection?.send(frame) ?? false,
      connectionState: () => this.state,
      fetchEvents: (sessionId, after) => this.#http.events(sessionId, { after }),
      forget: (channel) => {
        if (this.#channels.get(channel.id) === channel) this.#channels.delete(channel.id);
      },
      requestTimeoutMs: timeoutMs,
      newId: newId,
    };
  }

  /** The connection state: `idle` until something needs the socket. */
  get state(): ConnectionState {
    return this.#connection?.state ?? "idle";
  }

  /** The user set with `setUser`, if any. */
  get user(): User | undefined {
    return this.#auth.user;
  }

  /** The sessions this client holds open. */
  get sessions(): Session[] {
    return [...this.#channels.values()].map((channel) => channel.session);
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
    // Not an idle one (nothing to redo yet); a closed one stays closed.
    if (this.#auth.setUser(user, token) && this.state !== "idle") this.#connection?.reconnect();
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
    return this.#auth.createUserToken(userId, options);
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
      const http = this.#http;
      handle = {
        name,
        tools: new Tools(),
        sessions: {
          create: (options) => this.#createSession(name, options),
          resume: (sessionId, options) => this.#resumeSession(sessionId, options),
          get: (sessionId) => http.getSession(sessionId),
          list: (options) => http.listSessions(name, options),
          delete: async (sessionId) => {
            await http.deleteSession(sessionId);
            this.#channels.get(sessionId)?.markClosed(undefined);
          },
          approvals: (sessionId) => http.approvals(sessionId),
          decide: (sessionId, approvalId, decision) => http.decideApproval(sessionId, approvalId, decision),
          reply: (sessionId, text, options = {}) =>
            http.reply(sessionId, {
              commandId: options.commandId ?? newId(),
              text,
              messageId: options.messageId,
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
    const waitMs = this.#sessionHost.requestTimeoutMs;
    return new Promise((resolve, reject) => {
      const done = (error?: ClientError) => {
        connection.off("welcome", onWelcome);
        connection.off("failed", done);
        clearTimeout(timer);
        if (error) reject(error);
        else resolve();
      };
      const onWelcome = () => done();
      const timer = setTimeout(() => done(new TimeoutError(`no connection within ${waitMs} ms`)), waitMs);
      connection.on("welcome", onWelcome);
      connection.on("failed", done);
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
    for (const channel of [...this.#channels.values()]) channel.close();
    this.#requests.failAll(() => new DisconnectedError("the client was closed"));
    if (this.#connection) this.#connection.close();
    else this.#connection = this.#newConnection("closed");
  }

  // -------------------------------------------------------------------------------------------

  #createSession(agent: string, options: CreateSessionOptions = {}): Promise<Session> {
    const frame: RequestFrame = {
      type: "session.create",
      requestId: newId(),
      agent,
      tools: options.tools?.list() ?? [],
    };
    if (options.metadata) frame.metadata = options.metadata;
    if (options.userId !== undefined) frame.userId = options.userId;
    return this.#request(frame, false, options.tools);
  }

  #resumeSession(sessionId: string, options: ResumeSessionOptions = {}): Promise<Session> {
    const open = this.#channels.get(sessionId);
    if (open) return Promise.resolve(open.session);
    const frame: RequestFrame = {
      type: "session.resume",
      requestId: newId(),
      sessionId,
      afterSeq: 0,
      tools: options.tools?.list() ?? [],
    };
    return this.#request(frame, true, options.tools, options.beforeReplay);
  }

  #request(
    frame: RequestFrame,
    repeatable: boolean,
    tools: Tools | undefined,
    beforeReplay?: (session: Session) => void,
  ): Promise<Session> {
    if (this.#connection?.state === "closed") {
      return Promise.reject(new DisconnectedError("the client was closed"));
    }
    return new Promise<Session>((resolve, reject) => {
      const request = this.#requests.add(
        frame,
        { repeatable, context: { tools, beforeReplay }, what: frame.type },
        resolve,
        reject,
      );
      const connection = this.#ensureConnection();
      // Written now if the socket is open, else after its welcome (open() dials an idle one).
      request.sent = connection.send(frame);
      connection.open();
    });
  }

  #ensureConnection(): Connection {
    this.#connection ??= this.#newConnection();
    return this.#connection;
  }

  #newConnection(initial?: "closed"): Connection {
    const options = this.#options;
    const auth = this.#auth;
    const connection = new Connection({
      url: `${options.baseUrl.replace(/\/+$/, "").replace(/^http/, "ws")}/v1/client`,
      createSocket: this.#runtime.createSocket,
      connectFailure: this.#runtime.connectFailure,
      holdWrites: this.#runtime.holdWrites,
      auth: (context) => auth.hello(context.refresh),
      canRefreshAuth: () => auth.canRefresh(),
      backoff: options.reconnect ?? {},
      maxReconnectAttempts: options.reconnect?.maxAttempts,
      heartbeatIntervalMs: options.heartbeatIntervalMs,
      heartbeatTimeoutMs: options.heartbeatTimeoutMs,
      clientInfo: { name: "@patchbay/client", version: "0.1.0" },
    });
    if (initial === "closed") connection.close();
    connection.on("state", (state, previous) => {
      for (const channel of this.#channels.values()) channel.connectionStateChanged(state);
      this.emit("state", state, previous);
    });
    connection.on("welcome", () => this.#onWelcome(connection));
    connection.on("lost", (why) => {
      for (const channel of this.#channels.values()) channel.detached();
      // A reconnect resume of a known session: the next welcome sends a fresh one.
      this.#requests.lost(why, (request) => request.context.channel !== undefined);
    });
    connection.on("failed", (error) => {
      this.#requests.failAll(() => error);
      for (const channel of this.#channels.values()) channel.handleError(error);
      this.emit("error", error);
    });
    connection.on("frame", (frame) => this.#onFrame(frame));
    connection.on("error", (error) => this.emit("error", error));
    return connection;
  }

  #onWelcome(connection: Connection): void {
    // Sessions first: their resumes must not queue behind a slow create.
    for (const channel of this.#channels.values()) this.#reattach(channel);
    this.#requests.sendUnsent((frame) => connection.send(frame));
  }

  /**
   * Resumes a session this client holds from its last seq: on a new socket, or on this one when
   * the server said `unavailable` for it (its owner moved). Refused as `unavailable` (a dead
   * owner's lease not expired yet), it asks again every second, 30 times at most; refused
   * otherwise, the session closes with the error, which rejects what waits in it.
   */
  #reattach(channel: SessionChannel, tries = 0): void {
    const connection = this.#connection!;
    // A new socket's own: a retry is not sent on a socket that resumed the session anew.
    const welcome = connection.welcome;
    const frame = channel.resumeFrame(newId());
    this.#requests.add(
      frame,
      { repeatable: true, context: { channel }, what: `resuming session ${channel.id}` },
      () => {},
      (error) => {
        if (error.wireCode !== "unavailable" || tries > 29) channel.markClosed(error);
        else
          setTimeout(() => {
            // Not on another socket (it resumed the session itself), nor for a closed session.
            if (welcome && welcome === connection.welcome && !channel.closed)
              this.#reattach(channel, tries + 1);
          }, 1_000);
      },
    ).sent = connection.send(frame);
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
      case "tool.approval.ack":
        this.#channels.get(frame.sessionId)?.handleToolAck(frame);
        return;
      default:
        this.#channels.get(frame.sessionId)?.handleEvent(frame);
    }
  }

  #onOpened(frame: Extract<ServerToClientFrame, { type: "session.opened" }>): void {
    const request = this.#requests.get(frame.requestId);
    if (!request) return;
    let channel = request.context.channel ?? this.#channels.get(frame.session.id);
    if (!channel) {
      const tools = request.context.tools;
      const runner =
        tools === undefined
          ? undefined
          : new PageToolRunner({
              tools,
              sessionId: frame.session.id,
              send: (f) => this.#connection?.send(f) ?? false,
              conversation: () => channel?.conversation ?? [],
              idempotencyStore: this.#options.idempotencyStore,
            });
      channel = new SessionChannel(this.#sessionHost, frame.session, runner);
      this.#channels.set(channel.id, channel);
      request.context.beforeReplay?.(channel.session);
    }
    // Registered before the promise settles: the replayed events right behind this frame need it.
    channel.attached(frame.session);
    // `resume` resolves once the replay is applied, so approvals and the conversation are there.
    const opened = channel.session;
    channel.whenCaughtUp((error) => this.#requests.settle(request, error ?? { value: opened }));
  }

  #onErrorFrame(frame: Extract<ServerToClientFrame, { type: "error" }>): void {
    const error = errorFromWire(frame);
    const request = this.#requests.get(frame.requestId);
    // A held session's resume among them: #reattach decides.
    if (request) {
      this.#requests.settle(request, error);
      return;
    }
    // No session has the id undefined.
    const channel = this.#channels.get(frame.sessionId as string);
    if (!channel) {
      if (frame.commandId === undefined) this.emit("error", error);
      else for (const each of this.#channels.values()) each.handleError(error, frame.commandId);
    }
    // The session itself is gone (deleted over HTTP while attached): the server names it by
    // `path: "sessionId"`, older servers by a bare `not_found` naming no command.
    else if (
      frame.code === "not_found" &&
      (frame.path === "sessionId" || (frame.path === undefined && frame.commandId === undefined))
    )
      channel.markClosed(error);
    // This socket serves the session no more (cluster: its owner moved): attach it again, once
    // however many frames were refused; what waits in it is sent again once it is back.
    else if (frame.code === "unavailable" && frame.path === "sessionId") {
      if (channel.detached()) this.#reattach(channel);
    } else channel.handleError(error, frame.commandId);
  }
}

function newId(): string {
  return globalThis.crypto.randomUUID();
}
