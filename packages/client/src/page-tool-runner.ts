import type {
  ClientToServerFrame,
  ConversationItem,
  ServerToClientFrame,
  SessionEvent,
  ToolResult,
  ToolSpec,
} from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import {
  type CancelReason,
  type ConditionalApprovalAnswer,
  type HoldDecision,
  type IdempotencyStore,
  PreapprovedToolExecutor,
  type Tools,
  toToolResult,
} from "@patchbay/tools";
import { journaledStore } from "./page-call-journal";

type ToolCallEvent = Extract<SessionEvent, { type: "tool.call" }>;
type ToolAck = Extract<ServerToClientFrame, { type: "tool.hold.ack" | "tool.approval.ack" }>;

/**
 * What a {@link PageToolRunner} needs: the page's tools, the session, a way to write frames, and
 * the conversation the tools may read.
 */
export interface PageToolRunnerOptions {
  tools: Tools;
  sessionId: string;
  send: (frame: ClientToServerFrame) => boolean;
  conversation: () => readonly ConversationItem[];
  /**
   * Where results are kept by call (see `ClientOptions.idempotencyStore`); journaled, so a call
   * the page was running when it reloaded is not run again. Default: in memory.
   */
  idempotencyStore?: IdempotencyStore;
}

/** Results kept to answer a cancel of a call that already finished. */
const KEPT_RESULTS = 256;

/** What the runner remembers of a recent call. */
interface RecentCall {
  attempt: number;
  name: string;
  result?: ToolResult;
}

/**
 * Runs one session's page tools when the server sends `tool.call`, through the `@patchbay/tools`
 * executor (validation, timeouts, interruption, coalesced progress, say, hold, images), and
 * answers with `tool.result`. The server already asked for approval, so the executor is a
 * `PreapprovedToolExecutor`; a tool whose approval is conditional has its `when` called here,
 * and a call it says yes to asks the server (`tool.approval`) and runs only once
 * `tool.approval.ack` says `allowed`.
 *
 * It follows the protocol's hold and cancel rules: `ctx.disallowInterruptions()` sends
 * `tool.hold` and resolves only once `tool.hold.ack` accepts it (a refusal throws `CallNotHeld`);
 * `tool.cancel` is answered with the call's `tool.result` (cancelled, or its real result when it
 * is held or had finished); `timed_out` stops held calls too.
 *
 * A call delivered again (same id, higher attempt, after a reconnect) never runs twice: the
 * executor joins the running call or returns its stored result, and the answer carries the
 * newest attempt. Across a page reload that holds only with a store that outlives the page (the
 * browser `Client` uses `sessionStorage`): a call the earlier page finished is answered with its
 * result, and one it was still running is answered `failed` (`page_reloaded`, outcome unknown)
 * rather than run again.
 */
export class PageToolRunner {
  readonly #options: PageToolRunnerOptions;
  #executor: PreapprovedToolExecutor | undefined;
  /**
   * Recent calls: the newest attempt the server delivered (only that delivery is answered), the
   * tool's name (for the sentence of a call a reload cut off) and, once finished, the result.
   * One record per call in one map: three maps cost three inserts per call.
   */
  readonly #calls = new RecentMap<RecentCall>(KEPT_RESULTS);
  readonly #held = new Set<string>();
  /** Holds sent and not answered yet, by call id. */
  readonly #holds = new Map<string, (decision: HoldDecision) => void>();
  /** Conditional approvals asked (`tool.approval`) and not answered yet, by call id. */
  readonly #approvals = new Map<string, (answer: ConditionalApprovalAnswer) => void>();
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
    const call: RecentCall = this.#calls.get(callId) ?? { attempt: 0, name: event.call.name };
    const latest = call.attempt;
    if (event.attempt < latest) return;
    call.attempt = event.attempt;
    // A delivery makes the call the most recent one (a new call's only insert).
    this.#calls.set(callId, call);
    if (event.attempt > latest) {
      // A new delivery of a call that holds, or waits for its hold's answer: ask for this attempt.
      if (this.#held.has(callId) || this.#holds.has(callId)) this.#ask("tool.hold", callId);
      if (this.#approvals.has(callId)) this.#ask("tool.approval", callId);
    }
    const executor = this.#executorFor(event);
    void executor
      // The event's call is { id, name, arguments } as decoded, read and never changed.
      .execute(event.call, { attempt: event.attempt, timeoutMs: event.timeoutMs })
      .then((outcome) => {
        call.result = toToolResult(outcome);
        // Only the newest delivery is answered (a call pushed out of the map keeps its record).
        if (!this.#stopped && call.attempt === event.attempt) this.#sendResult(callId, call);
      });
  }

  /**
   * `tool.cancel`: asks to stop a call. A running call is stopped unless it is held (then only
   * `timed_out` stops it) and its result answers; a call that finished is answered with its
   * result again. A call this page never ran is left alone.
   */
  cancel(callId: string, reason: CancelReason, attempt?: number): void {
    const call = this.#calls.get(callId);
    if (!call || (attempt !== undefined && attempt < call.attempt)) return;
    if (this.#executor?.activeCallIds.includes(callId)) {
      this.#executor.cancel(callId, reason);
      return;
    }
    if (call.result && !this.#stopped) this.#sendResult(callId, call);
  }

  /** `tool.hold.ack` / `tool.approval.ack`: the server's answer to a hold or an approval this page asked for. */
  answered(frame: ToolAck): void {
    if (frame.attempt !== this.#calls.get(frame.callId)?.attempt) return;
    const waiting: Map<string, unknown> = frame.type === "tool.hold.ack" ? this.#holds : this.#approvals;
    const answer = waiting.get(frame.callId) as ((ack: ToolAck) => void) | undefined;
    waiting.delete(frame.callId);
    // The ack is the answer: `accepted` (and `reason`) for a hold, `outcome` for an approval.
    answer?.(frame);
  }

  /**
   * After a reconnect: ask again for the holds of running calls (answered again as accepted) and
   * the approvals still waiting (the server answers with the same question's outcome).
   */
  reattached(): void {
    for (const callId of new Set([...this.#held, ...this.#holds.keys()])) this.#ask("tool.hold", callId);
    for (const callId of this.#approvals.keys()) this.#ask("tool.approval", callId);
  }

  /** The session was closed in this page: stop every running call. */
  stop(): void {
    this.#stopped = true;
    for (const callId of this.activeCallIds) this.#executor!.cancel(callId);
  }

  /** The ids of the calls running now. */
  get activeCallIds(): string[] {
    return this.#executor?.activeCallIds ?? [];
  }

  /** Made on the first call so it knows the user the server names. */
  #executorFor(event: ToolCallEvent): PreapprovedToolExecutor {
    if (this.#executor) return this.#executor;
    const sessionId = this.#options.sessionId;
    const executor = new PreapprovedToolExecutor({
      tools: this.#options.tools,
      sessionId,
      user: event.user,
      conversation: this.#options.conversation,
      idempotencyStore:
        this.#options.idempotencyStore &&
        journaledStore(
          this.#options.idempotencyStore,
          sessionId,
          (callId) => this.#calls.get(callId)?.name ?? "the tool",
        ),
      confirmHold: ({ callId, signal }) =>
        new Promise<HoldDecision>((resolve) => {
          const done = (decision: HoldDecision) => {
            signal.removeEventListener("abort", onAbort);
            resolve(decision);
          };
          const onAbort = () => {
            this.#holds.delete(callId);
            done({ accepted: false, reason: "settled" });
          };
          signal.addEventListener("abort", onAbort, { once: true });
          this.#holds.set(callId, done);
          this.#ask("tool.hold", callId);
        }),
      confirmApproval: ({ callId, signal }) =>
        new Promise<ConditionalApprovalAnswer>((resolve) => {
          // The call's end (a cancel) answers it too; the pipeline stops the call either way.
          signal.addEventListener("abort", () => resolve({ outcome: "cancelled" }), { once: true });
          this.#approvals.set(callId, resolve);
          this.#ask("tool.approval", callId);
        }),
    });
    executor.on("progress", ({ callId, text }) =>
      this.#options.send({ type: "tool.progress", sessionId, callId, text }),
    );
    executor.on("say", ({ callId, text }) =>
      this.#options.send({ type: "tool.say", sessionId, callId, text }),
    );
    // The page is where the tool ran, so its console is where the developer finds the error.
    executor.on("threw", ({ callId, name, error }) =>
      console.warn(`patchbay: page tool ${name} threw (call ${callId}, session ${sessionId})`, error),
    );
    executor.on("held", ({ callId }) => this.#held.add(callId));
    executor.on("finished", (result) => {
      this.#held.delete(result.callId);
      this.#holds.delete(result.callId);
      this.#approvals.delete(result.callId);
    });
    this.#executor = executor;
    return executor;
  }

  /** Asks the server to confirm a hold (`tool.hold`) or a conditional approval (`tool.approval`). */
  #ask(type: "tool.hold" | "tool.approval", callId: string): void {
    // While the socket is down a frame is dropped: `reattached` asks again.
    this.#options.send({
      type,
      sessionId: this.#options.sessionId,
      callId,
      attempt: this.#calls.get(callId)?.attempt ?? 1,
    } as ClientToServerFrame);
  }

  #sendResult(callId: string, { attempt, result }: RecentCall): void {
    // While the socket is down a frame is dropped: the server delivers a pending call again on
    // resume, and the executor's stored result answers it.
    this.#options.send({
      type: "tool.result",
      sessionId: this.#options.sessionId,
      callId,
      attempt,
      result: result!,
    });
  }
}
