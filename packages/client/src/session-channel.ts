import type {
  ApprovalOutcome,
  ApprovalRequest,
  ClientToServerFrame,
  ConversationItem,
  ServerToClientFrame,
  SessionEvent,
  SessionInfo,
} from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import type { ConnectionState } from "./connection";
import { ConversationState } from "./conversation-state";
import {
  type ClientError,
  DisconnectedError,
  NotFoundError,
  ResponseFailedError,
  TimeoutError,
} from "./errors";
import { EventSequencer } from "./event-sequencer";
import type { EventPage } from "./http-api";
import type { PageToolRunner } from "./page-tool-runner";
import { Response, type ResponseSink } from "./response";
import { type CreateResponseOptions, Session, type SessionControl } from "./session";

type MessageSendFrame = Extract<ClientToServerFrame, { type: "message.send" }>;

/** Ended approvals remembered to answer a late `decide` with their outcome. */
const KEPT_APPROVAL_OUTCOMES = 256;

/** What a {@link SessionChannel} needs from the client that owns it. */
export interface SessionHost {
  send(frame: ClientToServerFrame): boolean;
  connectionState(): ConnectionState;
  fetchEvents(sessionId: string, after: number): Promise<EventPage>;
  /** Removes the session from the client (it sends nothing). */
  forget(channel: SessionChannel): void;
  requestTimeoutMs: number;
  newId(): string;
}

interface Decision {
  allowed: boolean;
  reason: string | undefined;
  resolve: (outcome: ApprovalOutcome) => void;
  reject: (error: ClientError) => void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * The client's side of one session, behind its public {@link Session}: applies the session's
 * events in order (event-sequencer.ts) to the conversation (conversation-state.ts), tracks the
 * replies, decisions and interrupts the page started, runs the page's tools, and keeps all of it
 * across reconnects (it resumes from the last sequence number it applied, so no event is lost or
 * applied twice). The client drives it; the `Session` reads it through
 * `SessionControl`.
 */
export class SessionChannel implements SessionControl {
  declare readonly session: Session;
  declare readonly id: string;
  readonly #host: SessionHost;
  readonly #tools: PageToolRunner | undefined;
  readonly #sequencer: EventSequencer;
  #info: SessionInfo;
  readonly #state = new ConversationState();
  /** The server's last sequence number when it (re)attached us; events up to it are a replay. */
  #replayUntil = 0;
  #attached = false;
  #ready = false;
  #closed = false;
  readonly #pendingSends = new Map<string, MessageSendFrame>();
  readonly #responsesByCommand = new Map<string, ResponseSink>();
  readonly #responsesById = new Map<string, ResponseSink>();
  readonly #queuedInterrupts: Array<{ frame: ClientToServerFrame; resolve: () => void }> = [];
  readonly #decisions = new Map<string, Decision>();
  /** How recent approvals ended, so a late `decide` resolves with it (oldest dropped first). */
  readonly #resolvedApprovals = new RecentMap<ApprovalOutcome>(KEPT_APPROVAL_OUTCOMES);
  /** Called once attached and caught up (see `whenCaughtUp`). */
  readonly #caughtUp: Array<(error?: ClientError) => void> = [];

  constructor(host: SessionHost, info: SessionInfo, tools: PageToolRunner | undefined) {
    this.id = info.id;
    this.#host = host;
    this.#info = info;
    this.#tools = tools;
    this.#sequencer = new EventSequencer({
      sessionId: info.id,
      apply: (event) => this.#apply(event),
      fetchAfter: (after) => host.fetchEvents(info.id, after),
      report: (error) => this.session.emit("error", error),
    });
    this.session = new Session(this);
  }

  // What the Session reads and sends (SessionControl).

  get info(): SessionInfo {
    return this.#info;
  }

  get conversation(): readonly ConversationItem[] {
    return this.#state.items;
  }

  get approvals(): ApprovalRequest[] {
    return [...this.#state.approvals.values()];
  }

  get lastSeq(): number {
    return this.#sequencer.lastSeq;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get state(): ConnectionState {
    return this.#host.connectionState();
  }

  send(text: string, options: CreateResponseOptions = {}): Response {
    const commandId = this.#host.newId();
    const frame: MessageSendFrame = { type: "message.send", sessionId: this.id, commandId, text };
    if (options.images?.length) frame.images = options.images;
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

  interrupt(): Promise<void> {
    if (this.#closed) return this.#isClosed();
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

  decide(approvalId: string, decision: { allowed: boolean; reason?: string }): Promise<ApprovalOutcome> {
    if (this.#closed) return this.#isClosed();
    const request = this.#state.approvals.get(approvalId);
    if (!request) {
      // Too late: the approval already ended (expired, or answered elsewhere); say how.
      const ended = this.#resolvedApprovals.get(approvalId);
      if (ended !== undefined) return Promise.resolve(ended);
      return Promise.reject(new NotFoundError(`no pending approval ${approvalId} in session ${this.id}`));
    }
    const existing = this.#decisions.get(approvalId);
    if (existing) clearTimeout(existing.timer);
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

  close(): void {
    if (this.#closed) return;
    this.#host.send({ type: "session.close", sessionId: this.id });
    this.markClosed(undefined);
  }

  // What the client tells the session.

  /** The frame that (re)attaches this session on a new socket. */
  resumeFrame(requestId: string): Extract<ClientToServerFrame, { type: "session.resume" }> {
    return {
      type: "session.resume",
      requestId,
      sessionId: this.id,
      afterSeq: this.#sequencer.lastSeq,
      tools: this.#tools?.specs() ?? [],
    };
  }

  /** `session.opened` arrived on the current socket. */
  attached(info: SessionInfo): void {
    if (this.#closed) return;
    this.#info = info;
    this.#attached = true;
    this.#replayUntil = info.lastSeq;
    if (this.#sequencer.lastSeq >= this.#replayUntil) this.#becomeReady();
  }

  /**
   * Calls `done` once this attach's replay has been applied (at once if it has), or with the
   * error that closed the session first: `resume` resolves only then.
   */
  whenCaughtUp(done: (error?: ClientError) => void): void {
    if (this.#ready) done();
    else if (this.#closed) done(new DisconnectedError(`session ${this.id} was closed`));
    else this.#caughtUp.push(done);
  }

  /** The socket went away (or serves the session no more): hold everything until the next attach. True if it was attached. */
  detached(): boolean {
    const was = this.#attached;
    this.#attached = this.#ready = false;
    return was;
  }

  /** The connection state changed. */
  connectionStateChanged(state: ConnectionState): void {
    if (!this.#closed) this.session.emit("state", state);
  }

  /** An error frame that names this session (and maybe one of its commands). */
  handleError(error: ClientError, commandId?: string): void {
    if (commandId !== undefined && this.#pendingSends.has(commandId)) {
      this.#pendingSends.delete(commandId);
      const sink = this.#responsesByCommand.get(commandId);
      this.#responsesByCommand.delete(commandId);
      if (sink) {
        sink.failed(error);
        return;
      }
    }
    this.session.emit("error", error);
  }

  /** The session is gone for this client: reject what waits and stop page tools. */
  markClosed(reason: ClientError | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#ready = false;
    this.#sequencer.stop();
    this.#tools?.stop();
    // Made only for what waits: a session closed with nothing pending (the usual close) makes
    // no error, whose stack trace costs more than the rest of the close.
    let error = reason;
    const failure = () => (error ??= new DisconnectedError(`session ${this.id} was closed`));
    for (const sink of this.#responsesByCommand.values()) sink.failed(failure());
    for (const sink of this.#responsesById.values()) sink.failed(failure());
    this.#responsesByCommand.clear();
    this.#responsesById.clear();
    this.#pendingSends.clear();
    for (const decision of this.#decisions.values()) {
      clearTimeout(decision.timer);
      decision.reject(failure());
    }
    this.#decisions.clear();
    this.#queuedInterrupts.length = 0;
    this.#host.forget(this);
    for (const done of this.#caughtUp.splice(0)) done(failure());
    this.session.emit("closed", reason);
  }

  /** The server's answer to a page tool's hold or conditional approval (`tool.hold.ack`, `tool.approval.ack`). */
  handleToolAck(frame: Extract<ServerToClientFrame, { type: "tool.hold.ack" | "tool.approval.ack" }>): void {
    this.#tools?.answered(frame);
  }

  /** A session event from the socket. */
  handleEvent(event: SessionEvent): void {
    if (!this.#closed) this.#sequencer.push(event);
  }

  // -------------------------------------------------------------------------------------------

  /** One event, in order: the conversation's state, then what the page started or runs. */
  #apply(event: SessionEvent): void {
    const session = this.session;
    const state = this.#state;
    const changed = state.apply(event, Date.now());
    // The snapshot is made for a listener, not for no one (see ConversationState).
    if (changed && session.listenerCount("conversation") > 0) session.emit("conversation", state.items);
    const replaying = !this.#ready;
    switch (event.type) {
      case "message.created":
        if (event.commandId !== undefined) this.#pendingSends.delete(event.commandId);
        session.emit("message", event.item);
        break;
      case "message.completed":
        session.emit("message", event.item);
        break;
      case "conversation.updated":
        if (event.item.type === "tool_call") session.emit("toolCall", event.item);
        else session.emit("message", event.item);
        break;
      case "response.started": {
        const started: { responseId: string; commandId?: string } = { responseId: event.responseId };
        if (event.commandId !== undefined) {
          started.commandId = event.commandId;
          this.#pendingSends.delete(event.commandId);
          const sink = this.#responsesByCommand.get(event.commandId);
          if (sink) {
            sink.started(event.responseId);
            this.#responsesById.set(event.responseId, sink);
          }
        }
        session.emit("responseStarted", started);
        break;
      }
      case "response.thinking":
        session.emit("thinking", { responseId: event.responseId, reason: event.reason });
        break;
      case "text.delta":
        this.#responsesById.get(event.responseId)?.delta(event.delta);
        session.emit("text", { responseId: event.responseId, itemId: event.itemId, delta: event.delta });
        break;
      case "tool.call":
        // A replayed call is not run: see #becomeReady.
        if (!replaying) this.#tools?.handleCall(event);
        break;
      case "tool.cancel":
        this.#tools?.cancel(event.callId, event.reason, event.attempt);
        break;
      case "tool.progress":
      case "tool.held": {
        const item = changed ? state.item(event.callId) : undefined;
        if (item?.type === "tool_call") session.emit("toolCall", item);
        if (event.type === "tool.held") session.emit("held", { callId: event.callId });
        else session.emit("progress", { callId: event.callId, text: event.text });
        break;
      }
      case "tool.say":
        session.emit("say", { callId: event.callId, text: event.text });
        break;
      case "approval.requested":
        session.emit("approval", event.approval);
        session.emit("approvals", this.approvals);
        break;
      case "approval.resolved": {
        this.#resolvedApprovals.set(event.approvalId, event.outcome);
        const decision = this.#decisions.get(event.approvalId);
        if (decision) {
          clearTimeout(decision.timer);
          this.#decisions.delete(event.approvalId);
          decision.resolve(event.outcome);
        }
        session.emit("approvalResolved", {
          approvalId: event.approvalId,
          callId: event.callId,
          outcome: event.outcome,
        });
        session.emit("approvals", this.approvals);
        break;
      }
      case "response.completed": {
        const result: Parameters<ResponseSink["completed"]>[0] = {
          id: event.responseId,
          text: event.text,
          reason: event.reason,
        };
        if (event.usage) result.usage = event.usage;
        this.#sinkFor(event.responseId, event.commandId)?.completed(result);
        session.emit("responseCompleted", event);
        break;
      }
      case "response.failed":
        this.#sinkFor(event.responseId, event.commandId)?.failed(
          new ResponseFailedError(event.error.message, event.responseId, {
            wireCode: event.error.code,
            path: event.error.path,
          }),
        );
        session.emit("responseFailed", event);
        break;
    }
    session.emit("event", event);
    if (this.#attached && !this.#ready && this.#sequencer.lastSeq >= this.#replayUntil) this.#becomeReady();
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
      if (this.#state.approvals.has(approvalId)) {
        this.#writeDecision(approvalId, decision.allowed, decision.reason);
      }
    }
    const interrupts = this.#queuedInterrupts.splice(0);
    for (const { frame, resolve } of interrupts) {
      if (this.#host.send(frame)) resolve();
      else this.#queuedInterrupts.push({ frame, resolve });
    }
    for (const done of this.#caughtUp.splice(0)) done();
  }

  /** What a call on a closed session answers. */
  #isClosed(): Promise<never> {
    return Promise.reject(new DisconnectedError(`session ${this.id} is closed`));
  }

  #writeDecision(approvalId: string, allowed: boolean, reason: string | undefined): void {
    this.#host.send({
      type: "approval.decide",
      sessionId: this.id,
      approvalId,
      allowed,
      // Only a decline carries a reason (JSON leaves out an undefined one), of at most 1,000
      // characters: the server would refuse the frame with an error no decide() could be told of.
      reason: allowed ? undefined : reason?.slice(0, 1000),
    });
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
}
