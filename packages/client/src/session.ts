import type {
  ApprovalOutcome,
  ApprovalRequest,
  ConversationItem,
  ImageContent,
  MessageItem,
  SessionEvent,
  SessionInfo,
  ToolCallItem,
} from "@patchbay/protocol";
import { EventEmitter } from "@patchbay/protocol/runtime";
import type { ConnectionState } from "./connection";
import type { ClientError } from "./errors";
import type { Response } from "./response";

type EventOf<T extends SessionEvent["type"]> = Extract<SessionEvent, { type: T }>;

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

/**
 * What a {@link Session} asks of the client's side of it (the session channel): the state it
 * shows and the commands it sends. The narrow interface between the two; nothing else crosses.
 */
export interface SessionControl {
  readonly info: SessionInfo;
  readonly conversation: readonly ConversationItem[];
  readonly approvals: ApprovalRequest[];
  readonly lastSeq: number;
  readonly closed: boolean;
  readonly state: ConnectionState;
  send(text: string, options?: CreateResponseOptions): Response;
  interrupt(): Promise<void>;
  decide(approvalId: string, decision: { allowed: boolean; reason?: string }): Promise<ApprovalOutcome>;
  close(): void;
}

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
  declare readonly id: string;
  /** Sending messages: `responses.create(text, { images })`. */
  declare readonly responses: {
    /**
     * Sends a user message and returns its reply, a promise of the final text and an async
     * iterable of deltas.
     */
    create(text: string, options?: CreateResponseOptions): Response;
  };

  readonly #control: SessionControl;

  /** Sessions are made by `client.agent(name).sessions.create/resume`. */
  constructor(control: SessionControl) {
    super();
    this.id = control.info.id;
    this.#control = control;
    this.responses = { create: (text, options) => control.send(text, options) };
  }

  /** The session as the server described it when this client last attached. */
  get info(): SessionInfo {
    return this.#control.info;
  }

  /** The conversation: messages and tool calls in order, kept current. */
  get conversation(): readonly ConversationItem[] {
    return this.#control.conversation;
  }

  /** The approval requests waiting for the user, oldest first. */
  get approvals(): ApprovalRequest[] {
    return this.#control.approvals;
  }

  /** The sequence number of the last event applied. */
  get lastSeq(): number {
    return this.#control.lastSeq;
  }

  /** Whether `close()` was called (or the session went away). */
  get closed(): boolean {
    return this.#control.closed;
  }

  /** The client's connection state. */
  get state(): ConnectionState {
    return this.#control.state;
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
    return this.#control.interrupt();
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
    return this.#control.decide(approvalId, decision);
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
    this.#control.close();
  }
}
