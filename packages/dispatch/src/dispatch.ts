// Over 400 lines on purpose: Dispatch is the worker's public face, and its methods (run, stop and
// its drain, answer, reply, host, connect, and the offers of work) share its phase, its connection
// and its running work; the pieces with a concept of their own already live apart (the socket in
// worker-connection.ts, hosted tools, channel sessions, replies, connectors, options).
import { randomUUID } from "node:crypto";
import type { ReplyResult } from "@patchbay/client";
import type { ConnectorSet } from "@patchbay/connectors";
import {
  type InboundMessage,
  MAX_CACHED_CONVERSATION_BYTES,
  MAX_CACHED_CONVERSATIONS,
  PROTOCOL_VERSION,
  type ServerToWorkerFrame,
  type WireError,
  type WorkerToServerFrame,
} from "@patchbay/protocol";
import { EventEmitter, RecentMap } from "@patchbay/protocol/runtime";
import type { Tools } from "@patchbay/tools";
import { ChannelSessions, type SessionFactory } from "./channel-sessions";
import {
  ConversationCache,
  type ConversationCacheOptions,
  DEFAULT_CONVERSATION_CACHE,
} from "./conversation-cache";
import { DispatchError } from "./dispatch-error";
import {
  type CallHandler,
  type DispatchEvents,
  type DispatchLogger,
  type DispatchOptions,
  type DispatchState,
  type MessageHandler,
  type StopOptions,
  type StopResult,
  stderrLogger,
  type WorkContext,
} from "./dispatch-options";
import { type HostableAgent, HostedTools, type HostOptions } from "./hosted-tools";
import { WorkerConnection } from "./worker-connection";
import { type ConnectOptions, startWorkerConnectors } from "./worker-connectors";
import { resolveCredentials } from "./worker-credentials";
import { WorkerReplies } from "./worker-replies";
import { workerSocketUrl } from "./worker-url";

interface ActiveWork {
  kind: "message" | "call";
  attempt: number;
  messageId: string | undefined;
  abort: AbortController;
  done: Promise<void>;
}

/** Codes of `work.done` errors that hand work back unstarted, so the server offers it elsewhere. */
export const REFUSAL_CODES = ["draining", "at_capacity", "no_handler"] as const;

const DONE_MEMORY = 1_024;

/**
 * A dispatch worker: a process on your side that connects out to the Patchbay server and takes
 * work from it (messages, incoming calls, and calls of the tools it hosts). Nothing it runs needs
 * to be reachable from outside.
 *
 * @example
 * ```ts
 * const dispatch = new Dispatch({ capacity: 8 });
 * dispatch.onMessage(async (message) => {
 *   if (message.sessionId) return dispatch.answer(message);
 *   const session = await dispatch.sessionFor(message, () => client.agent("support"));
 *   await session.responses.create(message.text);
 * });
 * const agent = client.agent("support");
 * agent.tools.register({ name: "lookup_order", description: "Look up an order", parameters, run: lookupOrder });
 * dispatch.host(agent, { toolTimeoutMs: 60_000 });
 * process.once("SIGTERM", () => dispatch.stop({ timeoutMs: 10_000 }));
 * await dispatch.run();
 * ```
 */
export class Dispatch extends EventEmitter<DispatchEvents> {
  /** How many messages and calls run at once. */
  readonly capacity: number;
  readonly #logger: DispatchLogger | undefined;
  /** This worker's stable id. */
  readonly workerId: string;
  readonly #url: string;
  readonly #apiKey: string;
  readonly #secret: string;
  readonly #options: DispatchOptions;
  #onMessage: MessageHandler | undefined;
  #onCall: CallHandler | undefined;
  readonly #hosted: HostedTools;
  /** What this worker keeps of conversations (`undefined`: nothing; every call brings it whole). */
  readonly #cacheLimits: Required<ConversationCacheOptions> | undefined;
  readonly #conversations = new ConversationCache();
  readonly #connectorSets: ConnectorSet[] = [];
  readonly #replies: WorkerReplies;
  readonly #channels: ChannelSessions;
  readonly #active = new Map<string, ActiveWork>();
  readonly #messageWork = new Map<string, string>();
  /** Recently finished work, so an offer that arrives again is answered, not run twice. */
  readonly #done = new RecentMap<WorkerToServerFrame>(DONE_MEMORY);
  #connection: WorkerConnection | undefined;
  #phase: "idle" | "running" | "draining" | "stopped" = "idle";
  #stopping: Promise<StopResult> | undefined;
  #settleRun: { resolve: () => void; reject: (error: unknown) => void } | undefined;

  constructor(options: DispatchOptions = {}) {
    super();
    const env = options.env ?? (typeof process === "undefined" ? {} : process.env);
    if (options.capacity !== undefined && (!Number.isInteger(options.capacity) || options.capacity < 1)) {
      throw new DispatchError(
        "invalid_capacity",
        `capacity must be a positive integer (how many messages and calls run at once); got ${String(options.capacity)}`,
        { path: "capacity" },
      );
    }
    const { url, apiKey, secret } = resolveCredentials({
      url: options.url,
      apiKey: options.apiKey,
      secret: options.secret,
      client: options.client,
      env,
    });
    const cache = options.conversationCache;
    for (const [name, value] of [
      ["connectTimeoutMs", options.connectTimeoutMs],
      ["maxChannelSessions", options.maxChannelSessions],
      ["conversationCache.sessions", cache ? cache.sessions : undefined],
    ] as const) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
        throw new DispatchError(
          "invalid_options",
          `${name} must be a positive integer; got ${String(value)}`,
          { path: name },
        );
      }
    }
    if (cache && cache.bytes !== undefined && (!Number.isInteger(cache.bytes) || cache.bytes < 0)) {
      throw new DispatchError(
        "invalid_options",
        `conversationCache.bytes must be a whole number of bytes, 0 or more; got ${String(cache.bytes)}`,
        { path: "conversationCache.bytes" },
      );
    }
    this.#cacheLimits =
      cache === false
        ? undefined
        : {
            sessions: Math.min(
              cache?.sessions ?? DEFAULT_CONVERSATION_CACHE.sessions,
              MAX_CACHED_CONVERSATIONS,
            ),
            bytes: Math.min(cache?.bytes ?? DEFAULT_CONVERSATION_CACHE.bytes, MAX_CACHED_CONVERSATION_BYTES),
          };
    // 0: offered no messages or calls (a worker that only hosts tools); run() checks handlers.
    this.capacity = options.capacity ?? 0;
    this.workerId = options.workerId ?? `w_${randomUUID()}`;
    this.#url = workerSocketUrl(url);
    this.#apiKey = apiKey;
    this.#secret = secret;
    this.#replies = new WorkerReplies({ url: this.#url, apiKey, secret });
    this.#options = options;
    this.#channels = new ChannelSessions(options.maxChannelSessions ?? 10_000);
    this.#logger = options.logger === false ? undefined : (options.logger ?? stderrLogger);
    this.#hosted = new HostedTools(
      {
        send: (frame, durable) => this.#connection?.send(frame, { durable }),
        emit: (event, payload) => (this.emit as (e: string, p: unknown) => boolean)(event, payload),
        listens: (event) => this.listenerCount(event as keyof DispatchEvents) > 0,
      },
      {
        onToolError: ({ callId, name, sessionId, error, step }) =>
          this.#logger?.warn(step === "when" ? `approval.when of tool ${name} threw` : `tool ${name} threw`, {
            tool: name,
            callId,
            sessionId,
            error,
          }),
      },
    );
  }

  /** Where the worker stands. */
  get state(): DispatchState {
    if (this.#phase === "draining") return "draining";
    if (this.#phase === "stopped") return "closed";
    return this.#connection?.state ?? "idle";
  }

  /** How many messages and calls run right now. */
  get active(): number {
    return this.#active.size;
  }

  /** How many hosted tool calls run right now (they do not count against capacity). */
  get hostedCalls(): number {
    return this.#hosted.running;
  }

  /**
   * Handle each message the server routes to this worker.
   *
   * @example
   * ```ts
   * dispatch.onMessage(async (message) => dispatch.answer(message));
   * ```
   */
  onMessage(handler: MessageHandler): this {
    this.#mustNotRun("onMessage");
    this.#onMessage = handler;
    return this;
  }

  /**
   * Handle each incoming phone call the server routes to this worker.
   *
   * @example
   * ```ts
   * dispatch.onCall(async (call) => crm.logCall(call.from, call.customData));
   * ```
   */
  onCall(handler: CallHandler): this {
    this.#mustNotRun("onCall");
    this.#onCall = handler;
    return this;
  }

  /**
   * Host an agent's tools for every session of the agent: an agent handle
   * (`client.agent("support")`, whose `tools` you registered), or the agent's name and a `Tools`
   * registry, with no `Client` needed. Call before `run()`: the worker tells the server what it
   * hosts when it connects. A tool registered on the registry later (after `run()`) is offered
   * too: the worker tells the server again (`worker.hosts`).
   *
   * @example
   * ```ts
   * const tools = new Tools().register({ name: "lookup_order", description: "Look up an order", parameters, run });
   * dispatch.host("support", tools, { toolTimeoutMs: 60_000 });
   * ```
   */
  host(agent: HostableAgent, options?: HostOptions): this;
  host(agent: string, tools: Tools, options?: HostOptions): this;
  host(agent: HostableAgent | string, toolsOrOptions?: Tools | HostOptions, options?: HostOptions): this {
    this.#mustNotRun("host");
    if (typeof agent === "string") {
      const tools = toolsOrOptions as Tools | undefined;
      if (typeof tools?.register !== "function" || typeof tools.list !== "function") {
        throw new DispatchError(
          "invalid_options",
          `tools: host("${agent}", tools) needs a Tools registry from @patchbay/tools as its second argument`,
          { path: "tools" },
        );
      }
      this.#hosted.host({ name: agent, tools }, options ?? {});
      return this;
    }
    this.#hosted.host(agent, (toolsOrOptions as HostOptions | undefined) ?? {});
    return this;
  }

  /**
   * Hosts connectors for an agent in this worker, so their credentials and network access stay
   * on your backend: `config` is a YAML file with a `connectors:` list (the worker's own config)
   * or the entries themselves, in the agent YAML's shape. The tools are offered as
   * `<connector>__<tool>` next to the agent's own (`agent.tools`, when you pass the agent). Await
   * it before `run()`; the connectors close when the worker stops. Bad config throws a
   * `ConnectorConfigError` with the file, line and field; a connector that cannot connect does
   * not throw (see the returned set's `status()`), and its allowed tools answer with the reason.
   *
   * @example
   * ```ts
   * await dispatch.connect("support", [{ name: "memory", mcp: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"] } }]);
   * await dispatch.run();
   * ```
   */
  async connect(
    agent: string | HostableAgent,
    config: string | readonly unknown[],
    options: ConnectOptions = {},
  ): Promise<ConnectorSet> {
    this.#mustNotRun("connect");
    const env = options.env ?? this.#options.env ?? process.env;
    const { set, hostable } = await startWorkerConnectors(agent, config, options, env);
    this.#connectorSets.push(set);
    this.host(hostable, options.host);
    return set;
  }

  /**
   * Let the model reply to a message that the server sent here first (`dispatch.text: enabled`).
   *
   * @example
   * ```ts
   * dispatch.onMessage(async (message) => {
   *   if (message.sessionId) await dispatch.answer(message);
   * });
   * ```
   */
  async answer(message: InboundMessage): Promise<void> {
    if (!message.sessionId) {
      throw new DispatchError(
        "no_session",
        `message ${message.id} came from a channel, not a session; open one with sessionFor(message, factory)`,
      );
    }
    if (this.#phase === "stopped") {
      throw new DispatchError("stopped", "the worker is stopped; it cannot answer any more");
    }
    if (!this.#connection) {
      throw new DispatchError("invalid_options", "answer() needs a running worker; call run() first");
    }
    const workId = this.#messageWork.get(message.id);
    this.#connection.send(
      {
        type: "answer",
        sessionId: message.sessionId,
        messageId: message.id,
        ...(workId === undefined ? {} : { workId }),
      },
      { durable: true },
    );
  }

  /**
   * Reply in your own words instead of the model's, to a message that the server sent here
   * first (`dispatch.text: enabled`): `text` is added to the session as the assistant's message
   * and the user's turn ends with it (`response.completed`, reason `answered_by_worker`). Call
   * it instead of `answer`, before the handler returns. One reply per message: a second one
   * changes nothing (`duplicate: true`). Goes over the server's HTTP API
   * (`POST /v1/sessions/:id/replies`) with the worker's credentials.
   *
   * @example
   * ```ts
   * dispatch.onMessage(async (message) => {
   *   if (/refund/i.test(message.text)) await dispatch.reply(message, "A colleague will call you about the refund today.");
   *   else await dispatch.answer(message);
   * });
   * ```
   */
  reply(message: InboundMessage, text: string): Promise<ReplyResult> {
    return this.#replies.reply(message, text);
  }

  /**
   * The session answering the message's channel: opened from the factory's agent the first time
   * the channel writes, reused after.
   *
   * @example
   * ```ts
   * const session = await dispatch.sessionFor(message, () => client.agent("support"));
   * await session.responses.create(message.text);
   * ```
   */
  sessionFor<S>(message: InboundMessage, factory: SessionFactory<S>): Promise<S> {
    return this.#channels.get(message, factory);
  }

  /**
   * Connect to the server and take work until `stop()`. Resolves when the worker has stopped;
   * rejects when the server refuses it (a wrong key or protocol version).
   *
   * @example
   * ```ts
   * await dispatch.run();
   * ```
   */
  run(): Promise<void> {
    if (this.#phase === "stopped") {
      return Promise.reject(new DispatchError("stopped", "this worker was stopped; create a new Dispatch"));
    }
    if (this.#phase !== "idle") {
      return Promise.reject(new DispatchError("already_running", "run() was already called"));
    }
    // A hosted registry with no tools yet is something to run: a tool registered on it later is
    // offered then (worker.hosts).
    if (!this.#onMessage && !this.#onCall && this.#hosted.agentCount === 0) {
      return Promise.reject(
        new DispatchError(
          "nothing_to_run",
          "the worker has nothing to do: register onMessage or onCall, or host an agent, before run()",
        ),
      );
    }
    if ((this.#onMessage || this.#onCall) && this.capacity === 0) {
      return Promise.reject(
        new DispatchError(
          "invalid_capacity",
          "capacity: a worker with onMessage or onCall needs one (how many messages and calls run at once), e.g. new Dispatch({ capacity: 8 }); only a worker that just hosts tools may leave it out",
          { path: "capacity" },
        ),
      );
    }
    this.#phase = "running";
    const connection = new WorkerConnection({
      url: this.#url,
      hello: () => this.#hello(),
      backoff: this.#options.backoff ?? {},
      random: Math.random,
      connectTimeoutMs: this.#options.connectTimeoutMs ?? 10_000,
    });
    this.#connection = connection;
    connection.on("state", ({ state }) => {
      if (this.#phase === "running") this.emit("state", { state });
    });
    connection.on("ready", ({ workerId, reconnected }) => {
      // The server keeps nothing of the last connection's conversations either.
      this.#conversations.clear();
      if (reconnected) this.#hosted.reattached();
      this.emit("ready", { workerId, reconnected });
      this.#sendLoad();
    });
    connection.on("disconnected", (event) => this.emit("disconnected", event));
    connection.on("reconnecting", (event) => {
      this.#logger?.warn(
        `cannot reach ${event.url}: ${event.reason}; retrying in ${(event.delayMs / 1000).toFixed(1)} s (attempt ${event.attempt})`,
      );
      this.emit("reconnecting", event);
    });
    connection.on("error", (error) => this.emit("error", error));
    connection.on("frame", (frame) => this.#onFrame(frame));
    const settled = new Promise<void>((resolve, reject) => {
      this.#settleRun = { resolve, reject };
    });
    connection.on("refused", (error) => {
      // The server will not take this worker; nothing it runs can report anywhere.
      for (const work of this.#active.values()) work.abort.abort(error);
      this.#hosted.abortAll();
      this.#phase = "stopped";
      this.#settleRun?.reject(error);
    });
    connection.start();
    return settled;
  }

  /**
   * Stop taking work, let running messages, calls and hosted tool calls finish (up to
   * `timeoutMs`, then they are aborted), and close the connection. Resolves with what did not
   * finish in time.
   *
   * @example
   * ```ts
   * process.once("SIGTERM", async () => {
   *   const { drained } = await dispatch.stop({ timeoutMs: 10_000 });
   *   process.exit(drained ? 0 : 1);
   * });
   * ```
   */
  stop(options: StopOptions = {}): Promise<StopResult> {
    if (this.#stopping) return this.#stopping;
    const timeoutMs = options.timeoutMs ?? 30_000;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
      return Promise.reject(
        new DispatchError("invalid_options", `timeoutMs must be zero or more; got ${String(timeoutMs)}`),
      );
    }
    this.#stopping = this.#drain(timeoutMs);
    return this.#stopping;
  }

  async #drain(timeoutMs: number): Promise<StopResult> {
    if (this.#phase !== "running") {
      this.#phase = "stopped";
      await this.#closeConnectors();
      const result = { drained: true, unfinished: { work: [], calls: [] } };
      this.emit("stopped", result);
      return result;
    }
    this.#phase = "draining";
    this.emit("draining");
    this.emit("state", { state: "draining" });
    // Capacity 0 tells the server to offer nothing more; the slots it holds are already ours.
    this.#sendLoad();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const finished = Promise.all([
      ...[...this.#active.values()].map((w) => w.done),
      this.#hosted.idle(),
    ]).then(() => "done" as const);
    const outcome = await Promise.race([finished, timedOut]);
    clearTimeout(timer);
    const unfinished = { work: [...this.#active.keys()], calls: this.#hosted.runningIds() };
    if (outcome === "timeout") {
      const reason = new DispatchError("stopped", `the worker stopped after ${timeoutMs} ms`);
      for (const work of this.#active.values()) work.abort.abort(reason);
      this.#hosted.abortAll();
      // Handlers that honour the signal report in a moment; the rest are left behind, and the
      // server offers their work again once this socket is gone.
      await Promise.race([
        Promise.all([...this.#active.values()].map((w) => w.done)),
        new Promise((r) => setTimeout(r, Math.min(500, timeoutMs))),
      ]);
    }
    await this.#connection?.close("worker stopped");
    this.#phase = "stopped";
    this.#hosted.close();
    await this.#closeConnectors();
    this.#replies.close();
    const result: StopResult = { drained: outcome === "done", unfinished };
    this.emit("state", { state: "closed" });
    this.emit("stopped", result);
    this.#settleRun?.resolve();
    return result;
  }

  async #closeConnectors(): Promise<void> {
    await Promise.all(this.#connectorSets.splice(0).map((set) => set.close()));
  }

  #mustNotRun(method: string): void {
    if (this.#phase !== "idle") {
      throw new DispatchError(
        this.#phase === "stopped" ? "stopped" : "already_running",
        `${method}() must be called before run(): the server learns what a worker handles and hosts when it connects`,
      );
    }
  }

  #hello(): WorkerToServerFrame & { type: "worker.hello" } {
    return {
      type: "worker.hello",
      protocol: PROTOCOL_VERSION,
      apiKey: this.#apiKey,
      secret: this.#secret,
      workerId: this.workerId,
      capacity: this.#phase === "draining" ? 0 : this.capacity,
      handles: { messages: this.#onMessage !== undefined, calls: this.#onCall !== undefined },
      hosts: this.#hosted.specs(),
      running: { work: [...this.#active.keys()], calls: this.#hosted.runningIds() },
      ...(this.#cacheLimits ? { conversationCache: this.#cacheLimits } : {}),
    };
  }

  #sendLoad(): void {
    const load = { active: this.#active.size, capacity: this.#phase === "draining" ? 0 : this.capacity };
    this.#connection?.send({ type: "load", ...load });
    this.emit("load", load);
  }

  #onFrame(frame: ServerToWorkerFrame): void {
    switch (frame.type) {
      case "work.offered":
        this.#onOffer(frame);
        return;
      case "hosted.call": {
        const conversation = this.#conversations.read(frame);
        if (conversation === undefined) {
          // Only a new connection, which starts both ends empty, puts them back in step; the
          // server delivers the call again then.
          this.emit(
            "error",
            new DispatchError(
              "protocol",
              `hosted.call ${frame.callId} names a conversation item this worker does not keep; reconnecting`,
            ),
          );
          this.#connection?.reconnect("conversation out of step");
          return;
        }
        // The frame is this worker's own parse: it carries its whole conversation from here on.
        frame.conversation = conversation;
        this.#hosted.call(frame);
        return;
      }
      case "hosted.cancel":
        this.#hosted.cancel(frame);
        return;
      case "hosted.hold.ack":
        this.#hosted.holdAnswered(frame);
        return;
      case "hosted.approval.ack":
        this.#hosted.approvalAnswered(frame);
        return;
      case "error":
        this.emit("error", new DispatchError("protocol", `server error ${frame.code}: ${frame.message}`));
        return;
      default:
        return;
    }
  }

  #onOffer(frame: ServerToWorkerFrame & { type: "work.offered" }): void {
    const { workId, attempt, work } = frame;
    const send = (f: WorkerToServerFrame, durable = false) => this.#connection?.send(f, { durable });
    if (this.#active.has(workId)) {
      // Offered again while it still runs here (the server lost track across a reconnect).
      send({ type: "work.accepted", workId });
      return;
    }
    const finished = this.#done.get(workId);
    if (finished) {
      send(finished, true);
      return;
    }
    const refuse = (code: (typeof REFUSAL_CODES)[number], message: string) => {
      send({ type: "work.done", workId, error: { code, message } }, true);
      this.emit("work.refused", { workId, code });
    };
    if (this.#phase !== "running") {
      refuse("draining", "the worker is stopping");
      return;
    }
    if (this.#active.size >= this.capacity) {
      refuse("at_capacity", `the worker is full (${this.#active.size}/${this.capacity})`);
      return;
    }
    const handler = work.kind === "message" ? this.#onMessage : this.#onCall;
    if (!handler) {
      refuse("no_handler", `the worker has no ${work.kind === "message" ? "onMessage" : "onCall"} handler`);
      return;
    }
    const abort = new AbortController();
    const context: WorkContext = { workId, attempt, signal: abort.signal };
    const messageId = work.kind === "message" ? work.message.id : undefined;
    if (messageId !== undefined) this.#messageWork.set(messageId, workId);
    const entry: ActiveWork = { kind: work.kind, attempt, messageId, abort, done: Promise.resolve() };
    this.#active.set(workId, entry);
    send({ type: "work.accepted", workId }, true);
    this.#sendLoad();
    this.emit("work.started", { workId, kind: work.kind, attempt });
    entry.done = (async () => {
      let error: WireError | undefined;
      try {
        await (work.kind === "message"
          ? (handler as MessageHandler)(work.message, context)
          : (handler as CallHandler)(work.call, context));
      } catch (thrown) {
        error = toWireError(thrown);
      }
      const done: WorkerToServerFrame = { type: "work.done", workId, ...(error ? { error } : {}) };
      this.#active.delete(workId);
      if (messageId !== undefined) this.#messageWork.delete(messageId);
      this.#done.set(workId, done);
      send(done, true);
      this.#sendLoad();
      this.emit("work.finished", { workId, kind: work.kind, ...(error ? { error } : {}) });
    })();
  }
}

function toWireError(thrown: unknown): WireError {
  if (thrown instanceof Error) {
    const code = (thrown as { code?: unknown }).code;
    return {
      code: typeof code === "string" && code.length > 0 ? code : "handler_failed",
      message: thrown.message,
    };
  }
  return { code: "handler_failed", message: String(thrown) };
}
