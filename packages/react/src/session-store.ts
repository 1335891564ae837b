import {
  type AgentHandle,
  type ApprovalOutcome,
  type ApprovalRequest,
  backoffDelay,
  type ClientCore,
  ClientError,
  type ConnectionState,
  type ConversationItem,
  DisconnectedError,
  type ImageContent,
  NotFoundError,
  type Response,
  type Session,
  type Tools,
} from "@patchbay/client";
import { holdSession, releaseSession } from "./session-holders";
import { type SessionStatus, sessionStatus } from "./session-status";

/**
 * A message the page sent that the server has not taken yet (the socket is down, or the frame is
 * on its way). It leaves the list when the message is in the conversation, or fails.
 *
 * @example
 * ```ts
 * pending.map((m) => <li className="pending">{m.text}</li>);
 * ```
 */
export interface PendingMessage {
  commandId: string;
  text: string;
}

/**
 * How a stopped reply was stopped: by this page's `interrupt` (the Stop button), by a newer
 * message this page sent while it ran, or otherwise (another tab, or before a reload).
 *
 * @example
 * ```ts
 * const note = reason === "stopped" ? "You stopped this reply." : "This reply was interrupted.";
 * ```
 */
export type InterruptReason = "stopped" | "superseded" | "interrupted";

/**
 * Everything `useSession` renders from, replaced as a whole on every change.
 *
 * @example
 * ```ts
 * const { status, conversation, pending, approvals, errors } = snapshot;
 * ```
 */
export interface SessionState {
  status: SessionStatus;
  /** The session's id once opened (store it to resume after a reload). */
  sessionId: string | undefined;
  connection: ConnectionState;
  conversation: readonly ConversationItem[];
  approvals: readonly ApprovalRequest[];
  pending: readonly PendingMessage[];
  /** Replies that ended interrupted, by response id, and how (as far as this page saw it). */
  interrupted: Readonly<Record<string, InterruptReason>>;
  /** Errors in the order they happened: opening, sending, a failed reply, the connection. */
  errors: readonly ClientError[];
}

/**
 * Options of a session store (and of `useSession`).
 *
 * @example
 * ```ts
 * const options: SessionOptions = { tools, resume: sessionStorage.getItem("session") };
 * ```
 */
export interface SessionOptions {
  /** The tools that run in this page. Read once, when the session opens. */
  tools?: Tools;
  /** A session id to resume; a session that no longer exists is replaced by a new one. */
  resume?: string | null;
}

const MAX_ERRORS = 20;
/** Backoff of the retries of a failed open: full jitter, 1 s doubling up to 30 s. */
const OPEN_RETRY = { initialDelayMs: 1_000, maxDelayMs: 30_000 };

/**
 * One session as an external store for `useSyncExternalStore`: opens it on the first `retain()`,
 * lets go of it a tick after the last `release()` (so React's StrictMode remount keeps the same
 * session; a session other stores of the client also hold stays open until the last lets go),
 * and keeps an immutable {@link SessionState}. Nothing runs at construction.
 *
 * @example
 * ```ts
 * const store = new SessionStore(client, "assistant", { tools });
 * const release = store.retain();
 * store.subscribe(() => render(store.getSnapshot()));
 * ```
 */
export class SessionStore {
  readonly #client: ClientCore;
  readonly #agent: AgentHandle;
  readonly #options: SessionOptions;
  readonly #listeners = new Set<() => void>();
  #session: Session | undefined;
  /** The id this store counts as a holder of (see session-holders), once its open settled. */
  #heldId: string | undefined;
  #detach: (() => void) | undefined;
  /** A user message is in the conversation and its reply has not started yet. */
  #awaitingReply = false;
  #opening: Promise<void> | undefined;
  #openFailed = false;
  #openAttempts = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #unwatchConnection: (() => void) | undefined;
  #retained = 0;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;
  #disposed = false;
  readonly #active = new Set<string>();
  #lastOutcome: "completed" | "interrupted" | "failed" | undefined;
  #stopRequested = new Set<string>();
  #pending: PendingMessage[] = [];
  #interrupted: Record<string, InterruptReason> = {};
  #errors: ClientError[] = [];
  #state: SessionState;

  constructor(client: ClientCore, agent: string, options: SessionOptions = {}) {
    this.#client = client;
    this.#agent = client.agent(agent);
    this.#options = options;
    this.#state = this.#compute();
  }

  /** The session once opened. */
  get session(): Session | undefined {
    return this.#session;
  }

  readonly subscribe = (listener: () => void): (() => void) => {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  };

  readonly getSnapshot = (): SessionState => this.#state;

  /** Holds the session open; the returned function lets go. */
  retain(): () => void {
    this.#retained++;
    if (this.#closeTimer !== undefined) {
      clearTimeout(this.#closeTimer);
      this.#closeTimer = undefined;
    }
    if (!this.#opening && !this.#disposed) this.#opening = this.#open();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#retained--;
      if (this.#retained === 0) this.#closeTimer = setTimeout(() => this.#dispose(), 0);
    };
  }

  /**
   * Sends a message. The returned reply settles when the agent finishes; failures land in `errors`.
   * On a closed session nothing is sent: `undefined`, and a `disconnected` error in `errors`.
   */
  send(text: string, options: { images?: ImageContent[] } = {}): Response | undefined {
    const session = this.#session;
    if (!session) return undefined;
    if (session.closed) {
      this.#fail(new DisconnectedError(`session ${session.id} is closed`));
      return undefined;
    }
    // A message sent during a reply interrupts it on the server: remember why, for the note.
    for (const id of this.#active) if (!this.#stopRequested.has(id)) this.#interrupted[id] ??= "superseded";
    const response = session.responses.create(text, options.images ? { images: options.images } : {});
    this.#pending = [...this.#pending, { commandId: response.commandId, text }];
    this.#update();
    response.then(
      () => this.#settlePending(response.commandId),
      (error: unknown) => {
        this.#settlePending(response.commandId);
        this.#fail(error);
      },
    );
    return response;
  }

  /**
   * Opens again now after a failed open (the store also retries by itself, with backoff, while
   * retained, and as soon as the client's connection is open again). Does nothing otherwise.
   */
  retry(): void {
    if (!this.#openFailed || this.#disposed || this.#retryTimer === undefined) return;
    this.#retryOpen();
  }

  /** Stops the running reply. */
  interrupt(): Promise<void> {
    const session = this.#session;
    if (!session) return Promise.resolve();
    for (const id of this.#active) {
      this.#stopRequested.add(id);
      this.#interrupted[id] = "stopped";
    }
    this.#update();
    return session.interrupt().catch((error: unknown) => this.#fail(error));
  }

  /** Answers an approval; resolves with how it ended. */
  decide(approvalId: string, allowed: boolean): Promise<ApprovalOutcome | undefined> {
    const session = this.#session;
    if (!session) return Promise.resolve(undefined);
    return session.decide(approvalId, { allowed }).catch((error: unknown) => {
      this.#fail(error);
      return undefined;
    });
  }

  async #open(): Promise<void> {
    const { tools, resume } = this.#options;
    const client = this.#client;
    try {
      let session: Session | undefined;
      if (resume) {
        // Counted as a holder from now on: another store resuming the same id while this one
        // lets go (a re-keyed component) must not see the session closed under it.
        holdSession(client, resume);
        try {
          // Attached before the replay, so the notes of earlier replies are rebuilt from it.
          session = await this.#agent.sessions.resume(resume, {
            ...(tools ? { tools } : {}),
            beforeReplay: (opened) => {
              if (!this.#disposed) this.#attach(opened);
            },
          });
        } catch (error) {
          releaseSession(client, resume);
          if (this.#session) {
            this.#detach?.();
            this.#session = undefined;
          }
          if (!(error instanceof NotFoundError)) throw error;
        }
      }
      if (!session) {
        session = await this.#agent.sessions.create(tools ? { tools } : {});
        holdSession(client, session.id);
      }
      this.#heldId = session.id;
      if (this.#disposed) {
        // Let go of what this open took, by the same rule: closed only if no other store holds it.
        this.#release(session);
        return;
      }
      this.#openFailed = false;
      this.#openAttempts = 0;
      this.#stopRetrying();
      if (this.#session !== session) this.#attach(session);
      else this.#update();
    } catch (error) {
      this.#openFailed = true;
      this.#fail(error);
      if (!this.#disposed) this.#scheduleRetry();
    }
  }

  // A failed open (e.g. the server was unreachable at mount) is tried again while the store is
  // held: after a backoff, or at once when the client's connection opens again.
  #scheduleRetry(): void {
    const delay = backoffDelay(this.#openAttempts++, OPEN_RETRY);
    this.#retryTimer = setTimeout(() => this.#retryOpen(), delay);
    if (!this.#unwatchConnection) {
      const client = this.#client;
      const onState = (state: ConnectionState) => {
        if (state === "open" && this.#retryTimer !== undefined) this.#retryOpen();
      };
      client.on("state", onState);
      this.#unwatchConnection = () => client.off("state", onState);
    }
  }

  #retryOpen(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#disposed) return;
    this.#opening = this.#open();
  }

  #stopRetrying(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#unwatchConnection?.();
    this.#unwatchConnection = undefined;
  }

  #release(session: Session | undefined): void {
    const id = this.#heldId;
    this.#detach?.();
    this.#detach = undefined;
    if (id === undefined) return;
    this.#heldId = undefined;
    releaseSession(this.#client, id, session);
  }

  #attach(session: Session): void {
    this.#detach?.();
    this.#session = session;
    const handlers: Array<[string, (...args: never[]) => void]> = [];
    const on: Session["on"] = (event, handler) => {
      handlers.push([event, handler as never]);
      return session.on(event, handler);
    };
    this.#detach = () => {
      for (const [event, handler] of handlers) session.off(event as never, handler as never);
    };
    const update = () => this.#update();
    on("conversation", update);
    on("approval", update);
    on("approvalResolved", update);
    on("state", update);
    on("responseStarted", ({ responseId }) => {
      this.#active.add(responseId);
      this.#awaitingReply = false;
      this.#update();
    });
    on("responseCompleted", ({ responseId, reason }) => {
      this.#active.delete(responseId);
      this.#awaitingReply = false;
      this.#lastOutcome = reason === "interrupted" ? "interrupted" : "completed";
      if (reason === "interrupted") this.#interrupted[responseId] ??= "interrupted";
      else delete this.#interrupted[responseId];
      this.#update();
    });
    on("responseFailed", ({ responseId }) => {
      this.#active.delete(responseId);
      this.#awaitingReply = false;
      this.#lastOutcome = "failed";
      this.#update();
    });
    on("event", (event) => {
      if (event.type === "message.created" && event.item.role === "user") {
        this.#awaitingReply = true;
        this.#update();
      }
      if (event.type === "message.created" && event.commandId) this.#settlePending(event.commandId);
    });
    on("error", (error) => this.#fail(error));
    on("closed", (reason) => {
      if (reason) this.#fail(reason);
      this.#update();
    });
    this.#update();
  }

  #settlePending(commandId: string): void {
    if (!this.#pending.some((m) => m.commandId === commandId)) return;
    this.#pending = this.#pending.filter((m) => m.commandId !== commandId);
    this.#update();
  }

  #fail(error: unknown): void {
    const clientError =
      error instanceof ClientError
        ? error
        : new ClientError("server", error instanceof Error ? error.message : String(error));
    this.#errors = [...this.#errors, clientError].slice(-MAX_ERRORS);
    this.#update();
  }

  #dispose(): void {
    this.#closeTimer = undefined;
    if (this.#retained > 0) return;
    this.#disposed = true;
    this.#stopRetrying();
    // Only a settled open holds the session; an open in flight lets go when it settles.
    if (this.#heldId !== undefined) this.#release(this.#session);
  }

  #compute(): SessionState {
    const session = this.#session;
    const conversation = session?.conversation ?? [];
    const approvals = session?.approvals ?? [];
    const closed = session?.closed ?? false;
    const connection = closed ? "closed" : (session?.state ?? "connecting");
    return {
      status: sessionStatus({
        opened: session !== undefined,
        openFailed: this.#openFailed,
        closed,
        connection,
        conversation,
        approvals,
        activeResponses: this.#active.size,
        pending: this.#pending.length,
        awaitingReply: this.#awaitingReply,
        lastOutcome: this.#lastOutcome,
      }),
      sessionId: session?.id,
      connection,
      conversation,
      approvals,
      pending: this.#pending,
      interrupted: { ...this.#interrupted },
      errors: this.#errors,
    };
  }

  #update(): void {
    this.#state = this.#compute();
    for (const listener of [...this.#listeners]) listener();
  }
}
