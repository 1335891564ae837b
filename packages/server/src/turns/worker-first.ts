import type { MessageItem, User, WireError } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { MessageRouter } from "../extensions/dispatch-seams";
import type { SessionLog } from "../sessions/session-log";

/** A backend's reply in its own words to the message a turn answers (see `Turn.acceptReply`). */
export interface WorkerReply {
  commandId: string;
  text: string;
  /** The user message it answers; when given, it must be the one the turn answers. */
  messageId?: string;
}

/** What became of a {@link WorkerReply}. */
export type ReplyOutcome =
  | { kind: "added"; item: MessageItem }
  | { kind: "duplicate" }
  | { kind: "not_waiting" }
  | { kind: "other_message"; expected: string };

/** How sending the message to a worker first ended, for the turn to act on. */
export type WorkerFirstOutcome =
  /** The worker called `answer`: the model replies now. */
  | { kind: "answer" }
  | { kind: "complete"; reason: "answered_by_worker" | "interrupted"; text: string }
  | { kind: "fail"; error: WireError };

/** What the wait needs from its turn. */
export interface WorkerFirstOptions {
  runtime: SessionLog;
  messageRouter?: MessageRouter | undefined;
  userItem: MessageItem;
  user: User;
  responseId: string;
  /** The turn's: aborted when it is interrupted. */
  signal: AbortSignal;
}

/**
 * The part of a turn whose message goes to a dispatch worker first (`dispatch.text: enabled`):
 * the client sees `response.thinking { reason: "dispatch" }` while the worker has it; the worker
 * lets the model answer (`answer`), replies in its backend's own words (`acceptReply`), or
 * finishes without either.
 */
export class WorkerFirst {
  /** Set while the turn waits for a worker; wakes it when a reply arrives. */
  private awaitingWorker: (() => void) | undefined;
  /** A reply being added: resolves to its text, or null when it was a repeat or failed. */
  private replyInFlight: Promise<string | null> | undefined;

  constructor(private readonly options: WorkerFirstOptions) {}

  /**
   * A reply in the backend's own words to the message this turn answers, while the turn waits
   * for a dispatch worker (`dispatch.text: enabled`, the worker did not call `answer`). It is
   * added as an assistant message of the turn, and the turn ends with it
   * (`response.completed { reason: "answered_by_worker", text }`), without waiting for the
   * worker's handler to return. Idempotent by `commandId`.
   */
  async acceptReply(reply: WorkerReply): Promise<ReplyOutcome> {
    const wake = this.awaitingWorker;
    if (!wake) return { kind: "not_waiting" };
    const expected = this.options.userItem.id;
    if (reply.messageId !== undefined && reply.messageId !== expected)
      return { kind: "other_message", expected };
    this.awaitingWorker = undefined;
    const item: MessageItem = {
      type: "message",
      id: `m_${nanoid(12)}`,
      role: "assistant",
      text: reply.text,
      status: "completed",
      responseId: this.options.responseId,
      createdAt: Date.now(),
    };
    const committing = this.options.runtime.commit({
      command: { commandId: reply.commandId, kind: "reply" },
      items: [item],
      events: [
        { type: "conversation.updated", item },
        { type: "message.completed", item },
      ],
    });
    this.replyInFlight = committing.then(
      (events) => (events === null ? null : reply.text),
      () => null,
    );
    wake();
    return (await committing) === null ? { kind: "duplicate" } : { kind: "added", item };
  }

  /** Hands the message to the message router and waits for what the worker makes of it. */
  async route(): Promise<WorkerFirstOutcome> {
    const { runtime, messageRouter, userItem, user, responseId, signal } = this.options;
    await runtime.append({ type: "response.thinking", responseId, reason: "dispatch" });
    if (!messageRouter) {
      return {
        kind: "fail",
        error: {
          code: "no_worker",
          message: "this agent sends messages to a dispatch worker first, and no worker is connected",
        },
      };
    }
    const woken = new Promise<"reply">((resolve) => {
      this.awaitingWorker = () => resolve("reply");
    });
    const routing = messageRouter.route({
      session: runtime.info,
      message: {
        id: userItem.id,
        agent: runtime.agent.id,
        sessionId: runtime.id,
        channel: null,
        user,
        text: userItem.text,
        createdAt: userItem.createdAt,
        metadata: runtime.info.metadata,
      },
      images: userItem.images ?? [],
      signal,
    });
    let first: Awaited<typeof routing> | "reply";
    try {
      first = await Promise.race([routing, woken]);
    } finally {
      this.awaitingWorker = undefined;
    }
    // A reply in the backend's own words ends the turn, whether or not the worker's handler has
    // returned yet (its work.done then changes nothing).
    const replied = this.replyInFlight ? await this.replyInFlight : null;
    if (replied !== null && !signal.aborted) {
      routing.catch(() => {});
      return { kind: "complete", reason: "answered_by_worker", text: replied };
    }
    const outcome = first === "reply" ? await routing : first;
    if (signal.aborted) return { kind: "complete", reason: "interrupted", text: "" };
    if (outcome.kind === "dropped") return { kind: "fail", error: outcome.error };
    if (outcome.kind === "handled") return { kind: "complete", reason: "answered_by_worker", text: "" };
    return { kind: "answer" };
  }
}
