import {
  type AgentHandle,
  type ApprovalOutcome,
  type ApprovalRequest,
  type ClientCore,
  ClientError,
  type ConnectionState,
  type ConversationItem,
  type ImageContent,
  NotFoundError,
  type Response,
  type Session,
  type Tools,
} from "@patchbay/client";
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

/**
 * One session as an external store for `useSyncExternalStore`: opens it on the first `retain()`,
 * closes it a tick after the last `release()` (so React's StrictMode remount keeps the same
 * session), and keeps an immutable {@link SessionState}. Nothing runs at construction.
 *
 * @example
 * ```ts
 * const store = new SessionStore(client, "assistant", { tools });
 * const release = store.retain();
 * store.subscribe(() => render(store.getSnapshot()));
 * ```
 */
export class SessionStore {
  readonly #agent: AgentHandle;
  readonly #options: SessionOptions;
  readonly #listeners = new Set<() => void>();
  #session: Session | undefined;
  #opening: Promise<void> | undefined;
  #openFailed = false;
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

  /** Sends a message. The returned reply settles when the agent finishes; failures land in `errors`. */
  send(text: string, options: { images?: ImageContent[] } = {}): Response | undefined {
    const session = this.#session;
    if (!session) return undefined;
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
    try {
      let session: Session | undefined;
      if (resume) {
        try {
          // Attached before the replay, so the notes of earlier replies are rebuilt from it.
          session = await this.#agent.sessions.resume(resume, {
            ...(tools ? { tools } : {}),
            beforeReplay: (opened) => this.#attach(opened),
          });
        } catch (error) {
          if (!(error instanceof NotFoundError)) throw error;
        }
      }
      session ??= await this.#agent.sessions.create(tools ? { tools } : {});
      if (this.#disposed) {
        session.close();
        return;
      }
      if (this.#session !== session) this.#attach(session);
    } catch (error) {
      this.#openFailed = true;
      this.#fail(error);
    }
  }

  #attach(session: Session): void {
    this.#session = session;
    const update = () => this.#update();
    session.on("conversation", update);
    session.on("approval", update);
    session.on("approvalResolved", update);
    session.on("state", update);
    session.on("responseStarted", ({ responseId }) => {
      this.#active.add(responseId);
      this.#update();
    });
    session.on("responseCompleted", ({ responseId, reason }) => {
      this.#active.delete(responseId);
      this.#lastOutcome = reason === "interrupted" ? "interrupted" : "completed";
      if (reason === "interrupted") this.#interrupted[responseId] ??= "interrupted";
      else delete this.#interrupted[responseId];
      this.#update();
    });
    session.on("responseFailed", ({ responseId }) => {
      this.#active.delete(responseId);
      this.#lastOutcome = "failed";
      this.#update();
    });
    session.on("event", (event) => {
      if (event.type === "message.created" && event.commandId) this.#settlePending(event.commandId);
    });
    session.on("error", (error) => this.#fail(error));
    session.on("closed", (reason) => {
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
    this.#session?.close();
  }

  #compute(): SessionState {
    const session = this.#session;
    const conversation = session?.conversation ?? [];
    const approvals = session?.approvals ?? [];
    const connection = session?.state ?? "connecting";
    return {
      status: sessionStatus({
        opened: session !== undefined,
        openFailed: this.#openFailed,
        connection,
        conversation,
        approvals,
        activeResponses: this.#active.size,
        pending: this.#pending.length,
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
