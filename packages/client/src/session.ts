import type {
  ApprovalOutcome,
  ApprovalRequest,
  ClientToServerFrame,
  ConversationItem,
  ImageContent,
  MessageItem,
  ServerToClientFrame,
  SessionEvent,
  SessionInfo,
  ToolCallItem,
} from "@patchbay/protocol";
import { EventEmitter } from "eventemitter3";
import type { ConnectionState } from "./connection";
import {
  type ClientError,
  DisconnectedError,
  NotFoundError,
  ProtocolViolationError,
  ResponseFailedError,
  TimeoutError,
} from "./errors";
import type { EventPage } from "./http-api";
import type { PageToolRunner } from "./page-tool-runner";
import { Response, type ResponseSink } from "./response";

type EventOf<T extends SessionEvent["type"]> = Extract<SessionEvent, { type: T }>;
type MessageSendFrame = Extract<ClientToServerFrame, { type: "message.send" }>;

/**
 * Typed events of a {@link Session}. Every change to the conversation, the approvals or the
 * connection has one.
 *
 * @example
 * ```ts
 * session.on("text", ({ delta }) => output.append(delta));
 * session.on("approval", (request) => showDialog(request));
 * ```
 */
export interface SessionEvents {
  /**
   * Every session event, after it was applied, each exactly once. Replayed ones reach listeners
   * attached in `resume`'s `beforeReplay` (resume resolves after the replay).
   */
  event: [event: SessionEvent];
  /** A piece of assistant text. */
  text: [text: { responseId: string; itemId: string; delta: string }];
  /** A message was added (user) or completed (assistant). */
  message: [item: MessageItem];
  /** The conversation changed; the array is a new snapshot. */
  conversation: [items: readonly ConversationItem[]];
  /** A tool call was added or changed (status, progress, result, held). */
  toolCall: [item: ToolCallItem];
  /** A tool reported progress. */
  progress: [progress: { callId: string; text: string }];
  /** A tool asked to have exact words said. */
  say: [say: { callId: string; text: string }];
  /** A tool call disallowed interruptions. */
  held: [held: { callId: string }];
  /** The user is asked to approve a tool call. */
  approval: [request: ApprovalRequest];
  /** An approval was answered, expired or cancelled. */
  approvalResolved: [resolved: { approvalId: string; callId: string; outcome: ApprovalOutcome }];
  /** The approvals waiting for the user changed: the whole list, oldest first (empty when none). */
  approvals: [pending: ApprovalRequest[]];
  /** The agent started a reply (to any message of the session, not only this page's). */
  responseStarted: [started: { responseId: string; commandId?: string }];
  /** The agent is thinking before the model starts (a dispatch worker saw the message first). */
  thinking: [thinking: { responseId: string; reason: "dispatch" | "model" }];
  /** A reply finished. */
  responseCompleted: [completed: EventOf<"response.completed">];
  /** A reply failed; the session stays usable. */
  responseFailed: [failed: EventOf<"response.failed">];
  /** The client's connection state, as it concerns this session. */
  state: [state: ConnectionState];
  /** Something went wrong that no pending call could be told about. */
  error: [error: ClientError];
  /** The session was detached from this client (`close()`, deleted, or no longer reachable). */
  closed: [reason: ClientError | undefined];
}

/**
 * What a {@link Session} needs from the client that owns it.
 *
 * @example
 * ```ts
 * const host: SessionHost = { send: (f) => connection.send(f), connectionState: () => connection.state, ... };
 * ```
 */
export interface SessionHost {
  send(frame: ClientToServerFrame): boolean;
  connectionState(): ConnectionState;
  fetchEvents(sessionId: string, after: number): Promise<EventPage>;
  /** Removes the session from the client (it sends nothing). */
  forget(session: Session): void;
  requestTimeoutMs: number;
  newId(): string;
}

/**
 * Options of {@link Session.responses}`.create`.
 *
 * @example
 * ```ts
 * session.responses.create("What is on this photo?", { images: [{ type: "image", url: "https://..." }] });
 * ```
 */
export interface CreateResponseOptions {
  images?: ImageContent[];
}

/** Events waiting for a gap in the sequence to be filled; a server bug must not grow it forever. */
const MAX_BUFFERED_EVENTS = 10_000;
/** Ended approvals remembered to answer a late `decide` with their outcome. */
const KEPT_APPROVAL_OUTCOMES = 256;

/**
 * One agent session as this client sees it: the conversation kept current, the pending
 * approvals, replies as promises and streams, and the page's tools answering the server. It
 * survives reconnects: the client resumes it from the last sequence number it applied, so no
 * event is lost or applied twice.
 *
 * @example
 * ```ts
 * const session = await client.agent("support").sessions.create({ tools });
 * session.on("approval", (request) => session.decide(request.id, { allowed: confirm(request.title) }));
 * const reply = await session.responses.create("Where am I?");
 * ```
 */
export class Session extends EventEmitter<SessionEvents> {
  /** The session id. */
  readonly id: string;
  /** Sending messages: `responses.create(text, { images })`. */
  readonly responses: {
    /**
     * Sends a user message and returns its reply, a promise of the final text and an async
     * iterable of deltas.
     */
    create(text: string, options?: CreateResponseOptions): Response;
  };

  readonly #host: SessionHost;
  readonly #tools: PageToolRunner | undefined;
  #info: SessionInfo;
  #items: readonly ConversationItem[] = [];
  readonly #itemIndex = new Map<string, number>();
  readonly #approvals = new Map<string, ApprovalRequest>();
  /** How recent approvals ended, so a late `decide` resolves with it (oldest dropped first). */
  readonly #resolvedApprovals = new Map<string, ApprovalOutcome>();
  #lastSeq = 0;
  /** The server's last sequence number when it (re)attached us; events up to it are a replay. */
  #replayUntil = 0;
  #attached = false;
  #ready = false;
  #closed = false;
  #filling = false;
  /** Called once attached and caught up (see `whenCaughtUp`). */
  #caughtUp: Array<(error?: ClientError) => void> = [];
  readonly #buffered = new Map<number, SessionEvent>();
  readonly #pendingSends = new Map<string, MessageSendFrame>();
  readonly #responsesByCommand = new Map<string, ResponseSink>();
  readonly #responsesById = new Map<string, ResponseSink>();
  readonly #queuedInterrupts: Array<{ frame: ClientToServerFrame; resolve: () => void }> = [];
  readonly #decisions = new Map<
    string,
    {
      allowed: boolean;
      reason: string | undefined;
      resolve: (o: ApprovalOutcome) => void;
      reject: (e: ClientError) => void;
      timer: unknown;
    }
  >();

  /** @internal Sessions are made by `client.agent(name).sessions.create/resume`. */
  constructor(host: SessionHost, info: SessionInfo, tools: PageToolRunner | undefined) {
    super();
    this.id = info.id;
    this.#host = host;
    this.#info = info;
    this.#tools = tools;
    this.responses = { create: (text, options) => this.#send(text, options) };
  }

  /** The session as the server described it when this client last attached. */
  get info(): SessionInfo {
    return this.#info;
  }

  /** The conversation: messages and tool calls in order, kept current. */
  get conversation(): readonly ConversationItem[] {
    return this.#items;
  }

  /** The approval requests waiting for the user, oldest first. */
  get approvals(): ApprovalRequest[] {
    return [...this.#approvals.values()];
  }

  /** The sequence number of the last event applied. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Whether `close()` was called (or the session went away). */
  get closed(): boolean {
    return this.#closed;
  }

  /** The client's connection state. */
  get state(): ConnectionState {
    return this.#host.connectionState();
  }

  /**
   * Stops the running turn: interruptible tool calls that are not held are cancelled and the
   * reply stops streaming. Resolves once the interrupt was written to the socket.
   *
   * @example
   * ```ts
   * stopButton.onclick = () => session.interrupt();
   * ```
   */
  interrupt(): Promise<void> {
    if (this.#closed) return Promise.reject(new DisconnectedError(`session ${this.id} is closed`));
    const frame: ClientToServerFrame = {
      type: "interrupt",
      sessionId: this.id,
      commandId: this.#host.newId(),
    };
    return new Promise((resolve) => {
      if (this.#ready && this.#host.send(frame)) resolve();
      else this.#queuedInterrupts.push({ frame, resolve });
    });
  }

  /**
   * Answers an approval request. Resolves with how the approval ended once the server says so
   * (`allowed`, `declined`, or `expired` if the answer came too late). A decline may carry the
   * user's `reason` (up to 1,000 characters): the model is told it.
   *
   * @example
   * ```ts
   * await session.decide(session.approvals[0]!.id, { allowed: true });
   * ```
   */
  decide(approvalId: string, decision: { allowed: boolean; reason?: string }): Promise<ApprovalOutcome> {
    if (this.#closed) return Promise.reject(new DisconnectedError(`session ${this.id} is closed`));
    const request = this.#approvals.get(approvalId);
    if (!request) {
      // Too late: the approval already ended (expired, or answered elsewhere); say how.
      const ended = this.#resolvedApprovals.get(approvalId);
      if (ended !== undefined) return Promise.resolve(ended);
      return Promise.reject(new NotFoundError(`no pending approval ${approvalId} in session ${this.id}`));
    }
    const existing = this.#decisions.get(approvalId);
    if (existing) clearTimeout(existing.timer as ReturnType<typeof setTimeout>);
    return new Promise<ApprovalOutcome>((resolve, reject) => {
      // The server resolves an expired approval itself; this only bounds a server that never answers.
      const waitMs = Math.max(0, request.expiresAt - Date.now()) + this.#host.requestTimeoutMs;
      const timer = setTimeout(() => {
        this.#decisions.delete(approvalId);
        reject(new TimeoutError(`approval ${approvalId} was not resolved in time`));
      }, waitMs);
      const { allowed, reason } = decision;
      this.#decisions.set(approvalId, { allowed, reason, resolve, reject, timer });
      if (this.#ready) this.#writeDecision(approvalId, allowed, reason);
    });
  }

  /**
   * Detaches this client from the session; the session itself lives on on the server and can be
   * resumed later. Page tools still running are stopped.
   *
   * @example
   * ```ts
   * window.addEventListener("pagehide", () => session.close());
   * ```
   */
  close(): void {
    if (this.#closed) return;
    this.#host.send({ type: "session.close", sessionId: this.id });
    this.markClosed(undefined);
  }

  // -------------------------------------------------------------------------------------------
  // Called by the client.
  // -------------------------------------------------------------------------------------------

  /** @internal The frame that (re)attaches this session on a new socket. */
  resumeFrame(requestId: string): ClientToServerFrame {
    return {
      type: "session.resume",
      requestId,
      sessionId: this.id,
      afterSeq: this.#lastSeq,
      tools: this.#tools?.specs() ?? [],
    };
  }

  /** @internal `session.opened` arrived on the current socket. */
  attached(info: SessionInfo): void {
    if (this.#closed) return;
    this.#info = info;
    this.#attached = true;
    this.#replayUntil = info.lastSeq;
    if (this.#lastSeq >= this.#replayUntil) this.#becomeReady();
  }

  /**
   * @internal Calls `done` once this attach's replay has been applied (at once if it has), or
   * with the error that closed the session first: `resume` resolves only then.
   */
  whenCaughtUp(done: (error?: ClientError) => void): void {
    if (this.#ready) done();
    else if (this.#closed) done(new DisconnectedError(`session ${this.id} was closed`));
    else this.#caughtUp.push(done);
  }

  /** @internal The socket went away: hold everything until the next attach. */
  detached(): void {
    this.#attached = false;
    this.#ready = false;
  }

  /** @internal The connection state changed. */
  connectionStateChanged(state: ConnectionState): void {
    if (!this.#closed) this.emit("state", state);
  }

  /** @internal An error frame that names this session (and maybe one of its commands). */
  handleError(error: ClientError, commandId: string | undefined): void {
    if (commandId !== undefined && this.#pendingSends.has(commandId)) {
      this.#pendingSends.delete(commandId);
      const sink = this.#responsesByCommand.get(commandId);
      this.#responsesByCommand.delete(commandId);
      if (sink) {
        sink.failed(error);
        return;
      }
    }
    this.emit("error", error);
  }

  /** @internal The session is gone for this client: reject what waits and stop page tools. */
  markClosed(reason: ClientError | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ready = false;
    this.#tools?.stop();
    const error = reason ?? new DisconnectedError(`session ${this.id} was closed`);
    for (const sink of this.#responsesByCommand.values()) sink.failed(error);
    for (const sink of this.#responsesById.values()) sink.failed(error);
    this.#responsesByCommand.clear();
    this.#responsesById.clear();
    this.#pendingSends.clear();
    for (const decision of this.#decisions.values()) {
      clearTimeout(decision.timer as ReturnType<typeof setTimeout>);
      decision.reject(error);
    }
    this.#decisions.clear();
    this.#queuedInterrupts.length = 0;
    this.#host.forget(this);
    for (const done of this.#caughtUp.splice(0)) done(error);
    this.emit("closed", reason);
  }

  /** @internal A session event from the socket. */
  /** The server's answer to a page tool's hold (`tool.hold.ack`). */
  handleHoldAck(frame: Extract<ServerToClientFrame, { type: "tool.hold.ack" }>): void {
    this.#tools?.holdAnswered(frame);
  }

  handleEvent(event: SessionEvent): void {
    if (this.#closed || event.seq <= this.#lastSeq) return;
    if (event.seq > this.#lastSeq + 1 || this.#filling) {
      if (this.#buffered.size < MAX_BUFFERED_EVENTS) this.#buffered.set(event.seq, event);
      if (!this.#filling) void this.#fillGap();
      return;
    }
    this.#apply(event);
  }

  // -------------------------------------------------------------------------------------------

  #send(text: string, options: CreateResponseOptions = {}): Response {
    const commandId = this.#host.newId();
    const frame: MessageSendFrame = { type: "message.send", sessionId: this.id, commandId, text };
    if (options.images && options.images.length > 0) frame.images = options.images;
    return new Response(commandId, (sink) => {
      if (this.#closed) {
        sink.failed(new DisconnectedError(`session ${this.id} is closed`));
        return;
      }
      this.#responsesByCommand.set(commandId, sink);
      this.#pendingSends.set(commandId, frame);
      if (this.#ready) this.#host.send(frame);
    });
  }

  /** Fetches the missing events over HTTP, then applies what was buffered, in order. */
  async #fillGap(): Promise<void> {
    this.#filling = true;
    try {
      const page = await this.#host.fetchEvents(this.id, this.#lastSeq);
      for (const event of page.events)
        if (event.seq === this.#lastSeq + 1 && !this.#closed) this.#apply(event);
    } catch (error) {
      this.emit(
        "error",
        new ProtocolViolationError(`events after ${this.#lastSeq} are missing and could not be fetched`, {
          cause: error,
        }),
      );
    } finally {
      this.#filling = false;
    }
    const pending = [...this.#buffered.values()].sort((a, b) => a.seq - b.seq);
    this.#buffered.clear();
    for (const event of pending) {
      if (this.#closed || event.seq <= this.#lastSeq) continue;
      if (event.seq !== this.#lastSeq + 1) {
        // Still a hole after asking the log: report it rather than stall the session.
        this.emit(
          "error",
          new ProtocolViolationError(
            `events ${this.#lastSeq + 1}..${event.seq - 1} of session ${this.id} are lost`,
          ),
        );
      }
      this.#apply(event);
    }
  }

  #apply(event: SessionEvent): void {
    this.#lastSeq = event.seq;
    const replaying = !this.#ready;
    switch (event.type) {
      case "message.created":
        if (event.commandId !== undefined) this.#pendingSends.delete(event.commandId);
        this.#upsert(event.item);
        this.emit("message", event.item);
        break;
      case "response.started": {
        if (event.commandId !== undefined) {
          this.#pendingSends.delete(event.commandId);
          const sink = this.#responsesByCommand.get(event.commandId);
          if (sink) {
            sink.started(event.responseId);
            this.#responsesById.set(event.responseId, sink);
          }
        }
        const started: { responseId: string; commandId?: string } = { responseId: event.responseId };
        if (event.commandId !== undefined) started.commandId = event.commandId;
        this.emit("responseStarted", started);
        break;
      }
      case "response.thinking":
        this.emit("thinking", { responseId: event.responseId, reason: event.reason });
        break;
      case "text.delta":
        this.#appendText(event);
        this.#responsesById.get(event.responseId)?.delta(event.delta);
        this.emit("text", { responseId: event.responseId, itemId: event.itemId, delta: event.delta });
        break;
      case "message.completed":
        this.#upsert(event.item);
        this.emit("message", event.item);
        break;
      case "conversation.updated":
        this.#upsert(event.item);
        if (event.item.type === "tool_call") {
          this.emit("toolCall", event.item);
        } else {
          this.emit("message", event.item);
        }
        break;
      case "tool.call":
        // A replayed call is not run: see #becomeReady.
        if (!replaying) this.#tools?.handleCall(event);
        break;
      case "tool.cancel":
        this.#tools?.cancel(event.callId, event.reason, event.attempt);
        break;
      case "tool.progress":
        this.#patchToolCall(event.callId, { progress: event.text });
        this.emit("progress", { callId: event.callId, text: event.text });
        break;
      case "tool.say":
        this.emit("say", { callId: event.callId, text: event.text });
        break;
      case "tool.held":
        this.#patchToolCall(event.callId, { held: true });
        this.emit("held", { callId: event.callId });
        break;
      case "approval.requested":
        this.#approvals.set(event.approval.id, event.approval);
        this.emit("approval", event.approval);
        this.emit("approvals", this.approvals);
        break;
      case "approval.resolved":
        this.#resolveApproval(event);
        break;
      case "response.completed": {
        const sink = this.#sinkFor(event.responseId, event.commandId);
        const result: { id: string; text: string; reason: typeof event.reason; usage?: typeof event.usage } =
          {
            id: event.responseId,
            text: event.text,
            reason: event.reason,
          };
        if (event.usage) result.usage = event.usage;
        sink?.completed(result);
        this.emit("responseCompleted", event);
        break;
      }
      case "response.failed": {
        const sink = this.#sinkFor(event.responseId, event.commandId);
        sink?.failed(
          new ResponseFailedError(event.error.message, event.responseId, {
            wireCode: event.error.code,
            ...(event.error.path === undefined ? {} : { path: event.error.path }),
          }),
        );
        this.emit("responseFailed", event);
        break;
      }
    }
    this.emit("event", event);
    if (this.#attached && !this.#ready && this.#lastSeq >= this.#replayUntil) this.#becomeReady();
  }

  /**
   * Attached and caught up: send what the page queued. Calls the replay showed are not run from
   * the replay: the server delivers every call still waiting again, with a new attempt, to a
   * page that brought its tool, right after the replay, so each runs as the delivery it is
   * (`ctx.attempt` counts a reload too).
   */
  #becomeReady(): void {
    this.#ready = true;
    this.#tools?.reattached();
    // Same command ids as before: the server runs each message once however often it arrives.
    for (const frame of this.#pendingSends.values()) this.#host.send(frame);
    for (const [approvalId, decision] of this.#decisions) {
      if (this.#approvals.has(approvalId)) this.#writeDecision(approvalId, decision.allowed, decision.reason);
    }
    const interrupts = this.#queuedInterrupts.splice(0);
    for (const { frame, resolve } of interrupts) {
      if (this.#host.send(frame)) resolve();
      else this.#queuedInterrupts.push({ frame, resolve });
    }
    for (const done of this.#caughtUp.splice(0)) done();
  }

  #writeDecision(approvalId: string, allowed: boolean, reason: string | undefined): void {
    this.#host.send({
      type: "approval.decide",
      sessionId: this.id,
      approvalId,
      allowed,
      ...(reason === undefined || allowed ? {} : { reason }),
    });
  }

  #resolveApproval(event: EventOf<"approval.resolved">): void {
    this.#approvals.delete(event.approvalId);
    this.#resolvedApprovals.set(event.approvalId, event.outcome);
    if (this.#resolvedApprovals.size > KEPT_APPROVAL_OUTCOMES) {
      this.#resolvedApprovals.delete(this.#resolvedApprovals.keys().next().value as string);
    }
    const decision = this.#decisions.get(event.approvalId);
    if (decision) {
      clearTimeout(decision.timer as ReturnType<typeof setTimeout>);
      this.#decisions.delete(event.approvalId);
      decision.resolve(event.outcome);
    }
    this.emit("approvalResolved", {
      approvalId: event.approvalId,
      callId: event.callId,
      outcome: event.outcome,
    });
    this.emit("approvals", this.approvals);
  }

  #sinkFor(responseId: string, commandId: string | undefined): ResponseSink | undefined {
    const sink =
      this.#responsesById.get(responseId) ??
      (commandId === undefined ? undefined : this.#responsesByCommand.get(commandId));
    this.#responsesById.delete(responseId);
    if (commandId !== undefined) {
      this.#responsesByCommand.delete(commandId);
      this.#pendingSends.delete(commandId);
    }
    for (const [key, value] of this.#responsesByCommand)
      if (value === sink) this.#responsesByCommand.delete(key);
    return sink;
  }

  #appendText(event: EventOf<"text.delta">): void {
    const existing = this.#item(event.itemId);
    if (existing?.type === "message") {
      this.#upsert({ ...existing, text: existing.text + event.delta });
      return;
    }
    this.#upsert({
      type: "message",
      id: event.itemId,
      role: "assistant",
      text: event.delta,
      status: "in_progress",
      responseId: event.responseId,
      createdAt: Date.now(),
    });
  }

  #patchToolCall(callId: string, patch: Partial<ToolCallItem>): void {
    const item = this.#item(callId);
    if (item?.type !== "tool_call") return;
    const next = { ...item, ...patch };
    this.#upsert(next);
    this.emit("toolCall", next);
  }

  #item(id: string): ConversationItem | undefined {
    const index = this.#itemIndex.get(id);
    return index === undefined ? undefined : this.#items[index];
  }

  #upsert(item: ConversationItem): void {
    const index = this.#itemIndex.get(item.id);
    const items = [...this.#items];
    if (index === undefined) {
      this.#itemIndex.set(item.id, items.length);
      items.push(item);
    } else {
      items[index] = item;
    }
    this.#items = items;
    this.emit("conversation", this.#items);
  }
}
