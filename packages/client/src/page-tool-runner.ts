import type { ClientToServerFrame, ConversationItem, SessionEvent, ToolSpec } from "@patchbay/protocol";
import { allowAll, ToolExecutor, type Tools, toToolResult } from "@patchbay/tools";

type ToolCallEvent = Extract<SessionEvent, { type: "tool.call" }>;

/**
 * What a {@link PageToolRunner} needs: the page's tools, the session, a way to write frames, and
 * the conversation the tools may read.
 *
 * @example
 * ```ts
 * new PageToolRunner({ tools, sessionId, send: (f) => connection.send(f), conversation: () => session.conversation });
 * ```
 */
export interface PageToolRunnerOptions {
  tools: Tools;
  sessionId: string;
  send: (frame: ClientToServerFrame) => boolean;
  conversation: () => readonly ConversationItem[];
}

/**
 * Runs one session's page tools when the server sends `tool.call`, through the `@patchbay/tools`
 * executor (validation, timeouts, interruption, coalesced progress, say, hold, images), and
 * answers with `tool.result`. The server already asked for approval, so the executor allows
 * everything.
 *
 * A call delivered again (same id, higher attempt, after a reconnect) never runs twice: the
 * executor joins the running call or returns its stored result, and the answer carries the
 * newest attempt.
 *
 * @example
 * ```ts
 * const runner = new PageToolRunner({ tools, sessionId, send, conversation });
 * runner.handleCall(toolCallEvent);
 * ```
 */
export class PageToolRunner {
  readonly #options: PageToolRunnerOptions;
  #executor: ToolExecutor | undefined;
  /** The newest attempt the server delivered per call: only that delivery is answered. */
  readonly #latestAttempt = new Map<string, number>();
  readonly #held = new Set<string>();
  #stopped = false;

  constructor(options: PageToolRunnerOptions) {
    this.#options = options;
  }

  /** The specs sent to the server in `session.create`/`session.resume`. */
  specs(): ToolSpec[] {
    return this.#options.tools.list();
  }

  /** Runs (or joins, or answers from the stored result) one delivery of a call. */
  handleCall(event: ToolCallEvent): void {
    if (this.#stopped) return;
    const callId = event.call.id;
    const latest = this.#latestAttempt.get(callId) ?? 0;
    if (event.attempt < latest) return;
    this.#latestAttempt.set(callId, event.attempt);
    const executor = this.#executorFor(event);
    void executor
      .execute(
        { id: callId, name: event.call.name, arguments: event.call.arguments },
        { attempt: event.attempt },
      )
      .then((result) => {
        if (this.#stopped || this.#latestAttempt.get(callId) !== event.attempt) return;
        this.#send({
          type: "tool.result",
          sessionId: this.#options.sessionId,
          callId,
          attempt: event.attempt,
          result: toToolResult(result),
        });
      });
  }

  /** `tool.cancel`: stop a running call. */
  cancel(callId: string): void {
    this.#executor?.cancel(callId);
  }

  /** After a reconnect: tell the server again which running calls are held. */
  reattached(): void {
    for (const callId of this.#held) {
      this.#send({ type: "tool.hold", sessionId: this.#options.sessionId, callId });
    }
  }

  /** The session was closed in this page: stop every running call. */
  stop(): void {
    this.#stopped = true;
    for (const callId of this.#executor?.activeCallIds ?? []) this.#executor?.cancel(callId);
  }

  /** The ids of the calls running now. */
  get activeCallIds(): string[] {
    return this.#executor?.activeCallIds ?? [];
  }

  /**
   * Made on the first call so it knows the user the server names, and so that it cancels a call
   * at the same time as the server gives up on it.
   */
  #executorFor(event: ToolCallEvent): ToolExecutor {
    if (this.#executor) return this.#executor;
    const sessionId = this.#options.sessionId;
    const executor = new ToolExecutor({
      tools: this.#options.tools,
      sessionId,
      user: event.user,
      conversation: this.#options.conversation,
      approvalGate: allowAll,
      defaultTimeoutMs: event.timeoutMs,
    });
    executor.on("progress", ({ callId, text }) =>
      this.#send({ type: "tool.progress", sessionId, callId, text }),
    );
    executor.on("say", ({ callId, text }) => this.#send({ type: "tool.say", sessionId, callId, text }));
    // The page is where the tool ran, so its console is where the developer finds the error.
    executor.on("threw", ({ callId, name, error }) =>
      console.warn(`patchbay: page tool ${name} threw (call ${callId}, session ${sessionId})`, error),
    );
    executor.on("held", ({ callId }) => {
      this.#held.add(callId);
      this.#send({ type: "tool.hold", sessionId, callId });
    });
    executor.on("finished", (result) => {
      this.#held.delete(result.callId);
    });
    this.#executor = executor;
    return executor;
  }

  #send(frame: ClientToServerFrame): void {
    // While the socket is down a frame is dropped: the server delivers a pending call again on
    // resume, and the executor's stored result answers it.
    this.#options.send(frame);
  }
}
