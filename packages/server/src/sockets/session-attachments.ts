import {
  isResponseEnd,
  type ServerToClientFrame,
  type SessionEvent,
  type ToolSpec,
} from "@patchbay/protocol";
import type { Principal } from "../auth/auth";
import { ServerError } from "../errors";
import type { LiveSession } from "../sessions/live-session";
import type { SessionDirectory } from "../sessions/session-directory";
import type { SessionCloseReason, SessionListener } from "../sessions/session-log";
import { committedEventJson } from "../store/change-json";
import type { SessionRecord } from "../store/store";

/** One session open on a client socket. */
export interface Attachment {
  readonly live: LiveSession;
  release(): void;
  detach(): void;
}

/** The client socket as its attachments see it. */
export interface AttachmentSocket {
  /** The connection id: the page tools a session has are kept per connection. */
  readonly id: string;
  readonly isOpen: boolean;
  /** Sends a frame, or its JSON text. */
  send(frame: ServerToClientFrame | string): void;
  /** Resolves when the send buffer is half empty (bounded). */
  drained(): Promise<void>;
  /** Writes what it holds for this tick now (a socket that holds nothing does nothing). */
  writeNow(): void;
}

const REPLAY_PAGE = 500;

/**
 * One session attached to a socket: its live events go out once the replay is done, none lost
 * or doubled. One object, the session log's subscriber itself (its `deliver` and `closed`), with
 * no closure or listener of its own, and the socket and session id read from its owner and its
 * session (an idle connection's memory is mostly what it holds).
 */
class SessionAttachment implements Attachment, SessionListener {
  /** The last sequence number sent on the socket. */
  lastSent: number;
  /** Live events that arrived during the replay, sent after it; undefined once it ended. */
  waiting: SessionEvent[] | undefined = [];
  private released = false;

  constructor(
    readonly owner: SessionAttachments,
    readonly live: LiveSession,
    afterSeq: number,
  ) {
    this.lastSent = afterSeq;
  }

  get socket(): AttachmentSocket {
    return this.owner.socket;
  }

  get sessionId(): string {
    return this.live.id;
  }

  /** A live event of the session (the session log calls it). */
  deliver(event: SessionEvent): void {
    if (this.waiting) this.waiting.push(event);
    else this.sendLive(event);
  }

  /** Lets go of the session's hold, once. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.owner.sessions.releaseHold(this.sessionId);
  }

  sendLive(event: SessionEvent): void {
    if (event.seq <= this.lastSent) return;
    this.lastSent = event.seq;
    // The text the store wrote: a megabyte message is not serialized again per socket.
    this.socket.send(committedEventJson(event) ?? event);
    // The page waits for a response's end: it leaves now, not after the rest of this tick's
    // work (the turn's last commit resolving, the next queued message starting).
    if (isResponseEnd(event)) this.socket.writeNow();
  }

  /** The replay is done: the live events that waited for it go out. */
  endReplay(): void {
    const waiting = this.waiting ?? [];
    this.waiting = undefined;
    for (const event of waiting) this.sendLive(event);
  }

  detach(): void {
    this.live.runtime.removeSubscriber(this);
    this.live.runtime.setPageTools(this.socket.id, []);
    this.release();
  }

  /** The session log closed: deleted and moved sessions are told to the socket. */
  closed(reason: SessionCloseReason): void {
    if (reason !== "deleted" && reason !== "lease_lost") return;
    const { sessionId } = this;
    this.owner.forget(this);
    this.release();
    this.socket.send(
      reason === "deleted"
        ? {
            type: "error",
            code: "not_found",
            message: `session ${sessionId} was deleted`,
            sessionId,
            path: "sessionId",
          }
        : // Cluster mode: another node owns the session now; attaching again reaches it.
          {
            type: "error",
            code: "unavailable",
            message: `session ${sessionId} moved to another node: attach again`,
            sessionId,
            path: "sessionId",
          },
    );
  }
}

/**
 * The sessions open on one client socket: attaching one (`session.create`, `session.resume`)
 * with the replay of its logged events and then its live ones, none lost or doubled, and
 * detaching it again (`session.close`, the socket going, the session deleted).
 */
export class SessionAttachments {
  /** The first session attached (most sockets hold one); a map only for more. */
  private sole: SessionAttachment | undefined;
  private more: Map<string, SessionAttachment> | undefined;

  constructor(
    readonly socket: AttachmentSocket,
    readonly sessions: SessionDirectory,
    private readonly maxSessions: number,
  ) {}

  /** Sessions attached now. */
  get size(): number {
    return (this.sole ? 1 : 0) + (this.more?.size ?? 0);
  }

  /** The attachment of a session open here, if it is. */
  get(sessionId: string): Attachment | undefined {
    return this.sole?.sessionId === sessionId ? this.sole : this.more?.get(sessionId);
  }

  /** The attachment of a session open here; `not_found` when it is not. */
  require(sessionId: string): Attachment {
    const attachment = this.get(sessionId);
    if (!attachment) {
      throw new ServerError(
        "not_found",
        `session ${sessionId} is not open on this socket (send session.resume first)`,
        { path: "sessionId" },
      );
    }
    return attachment;
  }

  /**
   * Attaches a session: `session.opened`, then every logged event after `afterSeq`, then live
   * events, with none lost or doubled. The live subscription starts before the log is read;
   * events that arrive meanwhile wait, and anything at or below the last sequence number sent
   * is skipped. `created`: the record `session.create` just wrote (see `SessionDirectory.hold`).
   */
  async attach(
    principal: Principal,
    sessionId: string,
    requestId: string,
    afterSeq: number,
    tools: ToolSpec[],
    created?: SessionRecord,
  ): Promise<void> {
    if (!this.get(sessionId) && this.size >= this.maxSessions) {
      throw new ServerError("conflict", `a socket may have at most ${this.maxSessions} sessions open`);
    }
    const live = await this.sessions.hold(principal, sessionId, created);
    this.detach(sessionId);
    const socket = this.socket;
    const attachment = new SessionAttachment(this, live, afterSeq);
    live.runtime.addSubscriber(attachment);
    this.remember(attachment);
    live.runtime.setPageTools(socket.id, tools);
    socket.send({ type: "session.opened", requestId, session: live.runtime.info });
    try {
      for (let round = 0; round < 1_000_000; round++) {
        const events = await live.runtime.readEvents(attachment.lastSent, REPLAY_PAGE);
        for (const event of events) {
          attachment.lastSent = event.seq;
          socket.send(event);
        }
        if (events.length < REPLAY_PAGE || !socket.isOpen) break;
        await socket.drained();
      }
    } finally {
      attachment.endReplay();
    }
    if (tools.length > 0) await live.pages.redeliver();
  }

  detach(sessionId: string): void {
    const attachment = this.get(sessionId) as SessionAttachment | undefined;
    if (!attachment) return;
    this.forget(attachment);
    attachment.detach();
  }

  /** Detaches every session (the socket went). */
  detachAll(): void {
    const all = [...(this.sole ? [this.sole] : []), ...(this.more?.values() ?? [])];
    for (const attachment of all) this.detach(attachment.sessionId);
  }

  private remember(attachment: SessionAttachment): void {
    if (!this.sole) {
      this.sole = attachment;
      return;
    }
    this.more ??= new Map();
    this.more.set(attachment.sessionId, attachment);
  }

  /** Drops the attachment from this socket's (the session log closed, or it was detached). */
  forget(attachment: SessionAttachment): void {
    if (this.sole === attachment) this.sole = undefined;
    else if (this.more?.get(attachment.sessionId) === attachment) this.more.delete(attachment.sessionId);
  }
}
