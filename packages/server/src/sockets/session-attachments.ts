import type { ServerToClientFrame, SessionEvent, ToolSpec } from "@patchbay/protocol";
import type { Principal } from "../auth/auth";
import { ServerError } from "../errors";
import type { LiveSession } from "../sessions/live-session";
import type { SessionDirectory } from "../sessions/session-directory";
import { committedEventJson } from "../store/change-json";

/** One session open on a client socket. */
export interface Attachment {
  live: LiveSession;
  release: () => void;
  detach: () => void;
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
}

const REPLAY_PAGE = 500;

/**
 * The sessions open on one client socket: attaching one (`session.create`, `session.resume`)
 * with the replay of its logged events and then its live ones, none lost or doubled, and
 * detaching it again (`session.close`, the socket going, the session deleted).
 */
export class SessionAttachments {
  private readonly attached = new Map<string, Attachment>();

  constructor(
    private readonly socket: AttachmentSocket,
    private readonly sessions: SessionDirectory,
    private readonly maxSessions: number,
  ) {}

  /** The attachment of a session open here, if it is. */
  get(sessionId: string): Attachment | undefined {
    return this.attached.get(sessionId);
  }

  /** The attachment of a session open here; `not_found` when it is not. */
  require(sessionId: string): Attachment {
    const attachment = this.attached.get(sessionId);
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
   * is skipped.
   */
  async attach(
    principal: Principal,
    sessionId: string,
    requestId: string,
    afterSeq: number,
    tools: ToolSpec[],
  ): Promise<void> {
    if (!this.attached.has(sessionId) && this.attached.size >= this.maxSessions) {
      throw new ServerError("conflict", `a socket may have at most ${this.maxSessions} sessions open`);
    }
    const { live, release } = await this.sessions.acquire(principal, sessionId);
    this.detach(sessionId);
    const socket = this.socket;
    let lastSent = afterSeq;
    let replaying = true;
    const waiting: SessionEvent[] = [];
    const unsubscribe = live.runtime.subscribe((event) => {
      if (replaying) waiting.push(event);
      else if (event.seq > lastSent) {
        lastSent = event.seq;
        // The text the store wrote: a megabyte message is not serialized again per socket.
        socket.send(committedEventJson(event) ?? event);
      }
    });
    const onClosed = (reason: string) => {
      if (reason !== "deleted" && reason !== "lease_lost") return;
      this.attached.delete(sessionId);
      release();
      socket.send(
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
    };
    live.runtime.on("closed", onClosed);
    const detach = () => {
      live.runtime.off("closed", onClosed);
      unsubscribe();
      live.runtime.setPageTools(socket.id, []);
      release();
    };
    this.attached.set(sessionId, { live, release, detach });
    live.runtime.setPageTools(socket.id, tools);
    socket.send({ type: "session.opened", requestId, session: live.runtime.info });
    try {
      for (let round = 0; round < 1_000_000; round++) {
        const events = await live.runtime.readEvents(lastSent, REPLAY_PAGE);
        for (const event of events) {
          lastSent = event.seq;
          socket.send(event);
        }
        if (events.length < REPLAY_PAGE || !socket.isOpen) break;
        await socket.drained();
      }
    } finally {
      replaying = false;
      for (const event of waiting) {
        if (event.seq > lastSent) {
          lastSent = event.seq;
          socket.send(committedEventJson(event) ?? event);
        }
      }
    }
    if (tools.length > 0) await live.pages.redeliver();
  }

  detach(sessionId: string): void {
    const attachment = this.attached.get(sessionId);
    if (!attachment) return;
    this.attached.delete(sessionId);
    attachment.detach();
  }

  /** Detaches every session (the socket went). */
  detachAll(): void {
    for (const sessionId of [...this.attached.keys()]) this.detach(sessionId);
  }
}
