// A little over 400 lines: the hosted-call lifecycle (call, hold and its ack, cancel, result,
// redelivery, idle executors) is one state machine over the same maps, kept together.
import type {
  ConversationItem,
  HostedAgent,
  ServerToWorkerFrame,
  ToolResult,
  WorkerToServerFrame,
} from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import {
  type ConditionalApprovalAnswer,
  type HoldDecision,
  type IdempotencyStore,
  ModelSentences,
  PreapprovedToolExecutor,
  type ToolExecutionResult,
  type ToolExecutorEvents,
  type Tools,
  toToolResult,
} from "@patchbay/tools";
import { DispatchError } from "./dispatch-error";
import { HostedResultStore } from "./hosted-result-store";

/**
 * An agent whose tools a worker can host, such as the handle `client.agent("support")` returns.
 *
 * @example
 * ```ts
 * const agent: HostableAgent = { name: "support", tools: new Tools().register(lookupOrder) };
 * ```
 */
export interface HostableAgent {
  readonly name: string;
  readonly tools: Tools;
}

/**
 * How a worker hosts an agent's tools.
 *
 * @example
 * ```ts
 * dispatch.host(agent, { toolTimeoutMs: 60_000 });
 * ```
 */
export interface HostOptions {
  /**
   * The ceiling of a call's timeout for these tools, sent to the server: a call times out after
   * its tool's `timeoutMs`, or 30 s, and never later than this. Default: the agent's
   * `hosted_tool_timeout_ms` on the server, two minutes.
   */
  toolTimeoutMs?: number;
  /** How many calls of one session run at once here; more wait their turn. Default 16. */
  maxConcurrentCalls?: number;
  /**
   * Where finished results are kept by call, so a call delivered again gets its result instead
   * of running twice. Default: in this process's memory (the last 10,000 results). Pass a store
   * shared by your workers (Redis, a database) so a call redelivered to another worker after this
   * one died between finishing and answering does not run again there.
   */
  idempotencyStore?: IdempotencyStore;
}

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };
type HostedCancel = ServerToWorkerFrame & { type: "hosted.cancel" };
type HoldAck = ServerToWorkerFrame & { type: "hosted.hold.ack" };
type ApprovalAck = ServerToWorkerFrame & { type: "hosted.approval.ack" };

interface Hosted {
  agent: HostableAgent;
  options: HostOptions;
}

interface SessionExecutor {
  readonly key: string;
  readonly agent: string;
  readonly sessionId: string;
  /** The `host()` registration it was made for; hosting the agent again replaces it. */
  readonly hosted: Hosted;
  executor: PreapprovedToolExecutor;
  calls: number;
  /** The user the executor was made with; a call that differs gets a new one once this is idle. */
  readonly userId: string;
  readonly userName: string | undefined;
  /** When the last call ended (`now()`); meaningful while `calls` is 0. */
  idleSince: number;
  /**
   * The conversation's most recent items, as the latest call of this session brought them; empty
   * while the session has no call here (see `#rest`).
   */
  conversation: readonly ConversationItem[];
}

interface RunningCall {
  tool: string;
  /** The highest delivery seen; the result answers it so the server can tell it is current. */
  attempt: number;
  session: SessionExecutor;
  held: boolean;
  /** Answers the hold sent and not acknowledged yet. */
  holdAnswer: ((decision: HoldDecision) => void) | undefined;
  /** Answers the conditional approval asked (`hosted.approval`) and not answered yet. */
  approvalAnswer: ((answer: ConditionalApprovalAnswer) => void) | undefined;
}

/** How the hosted tools talk back: frames to the server, events to the `Dispatch`. */
export interface HostedToolsLink {
  send: (frame: WorkerToServerFrame, durable: boolean) => void;
  emit: (event: string, payload: unknown) => void;
  /** Whether anyone listens to the event: a call's events are not built for no one. */
  listens?: (event: string) => boolean;
}

/** The conversation of a session with no call here. */
const NO_ITEMS: readonly ConversationItem[] = Object.freeze([]);

/** Hosted results kept for redelivered calls, at most. */
const STORED_RESULTS = 10_000;
/** Results kept to answer a cancel of a call that already finished. */
const ANSWERED_RESULTS = 1_000;

/**
 * How long a session's executor is kept once its calls have ended, and how many idle ones are
 * kept at most. Making an executor per call cost more than the rest of the worker's side of a
 * hosted call; a session calls again within a turn or two, so a short stay covers it.
 */
export interface HostedToolsOptions {
  /** Default 60 s. */
  idleExecutorTtlMs?: number;
  /** Default 1,000. Beyond it the longest idle is dropped; an executor with calls never is. */
  maxIdleExecutors?: number;
  /** The clock the TTL reads. Default `Date.now`. */
  now?: () => number;
  /** Told when a tool's `run` (or its `approval.when`) threw, with the error (stack included) and the ids. */
  onToolError?: ToolExecutorEvents["threw"];
}

/**
 * The tools a worker hosts, and the calls of them it runs. Each session of an agent gets its own
 * `PreapprovedToolExecutor` (the tool call context is per session), kept while it has calls
 * here and for a while after (`HostedToolsOptions`); all of them
 * share one idempotency store, so a call delivered again (same id, higher attempt) joins the
 * running call or gets the stored result instead of running twice. Internal to `Dispatch`.
 */
export class HostedTools {
  readonly #link: HostedToolsLink;
  readonly #agents = new Map<string, Hosted>();
  readonly #executors = new Map<string, SessionExecutor>();
  /** The session of the latest call: the next call, most often of the same session, skips the key. */
  #lastSession: SessionExecutor | undefined;
  readonly #running = new Map<string, RunningCall>();
  /** Executors with no call running, longest idle first (insertion order). */
  readonly #idle = new Map<string, SessionExecutor>();
  readonly #store = new HostedResultStore(STORED_RESULTS);
  /** Finished calls by id, for a cancel that comes after the end: the object the store keeps. */
  readonly #answered = new RecentMap<ToolExecutionResult>(ANSWERED_RESULTS);
  readonly #idleTtlMs: number;
  readonly #maxIdle: number;
  readonly #now: () => number;
  readonly #onToolError: HostedToolsOptions["onToolError"];
  #sweepTimer: ReturnType<typeof setTimeout> | undefined;
  /** Stops listening to a hosted agent's registry, by agent name. */
  readonly #unwatch = new Map<string, () => void>();
  #hostsChangePending = false;
  #idleWaiters: Array<() => void> = [];

  constructor(link: HostedToolsLink, options: HostedToolsOptions = {}) {
    this.#link = link;
    this.#idleTtlMs = options.idleExecutorTtlMs ?? 60_000;
    this.#maxIdle = options.maxIdleExecutors ?? 1_000;
    this.#now = options.now ?? Date.now;
    this.#onToolError = options.onToolError;
  }

  /** Session executors kept now, running or idle. */
  get executorCount(): number {
    return this.#executors.size;
  }

  /** Agents hosted, whether their registries have tools yet or not. */
  get agentCount(): number {
    return this.#agents.size;
  }

  /** Calls running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Ids of the calls running now, for `worker.hello`. */
  runningIds(): string[] {
    return [...this.#running.keys()];
  }

  host(agent: HostableAgent, options: HostOptions): void {
    if (!agent || typeof agent.name !== "string" || agent.name.length === 0) {
      throw new DispatchError("invalid_options", "host(agent): the agent needs a name", {
        path: "agent.name",
      });
    }
    if (!agent.tools || typeof agent.tools.list !== "function") {
      throw new DispatchError("invalid_options", `host(agent): agent ${agent.name} has no tools registry`, {
        path: "agent.tools",
      });
    }
    for (const [name, value] of [
      ["toolTimeoutMs", options.toolTimeoutMs],
      ["maxConcurrentCalls", options.maxConcurrentCalls],
    ] as const) {
      if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
        throw new DispatchError(
          "invalid_options",
          `host(${agent.name}): ${name} must be a positive integer`,
          {
            path: name,
          },
        );
      }
    }
    const store = options.idempotencyStore;
    if (store !== undefined && (typeof store?.get !== "function" || typeof store?.set !== "function")) {
      throw new DispatchError(
        "invalid_options",
        `host(${agent.name}): idempotencyStore must have get(key) and set(key, result) methods`,
        { path: "idempotencyStore" },
      );
    }
    this.#agents.set(agent.name, { agent, options });
    this.#unwatch.get(agent.name)?.();
    // A tool registered after the worker connected is offered: the server hears `worker.hosts`.
    const unwatch = agent.tools.onChange?.(() => this.#hostsChanged());
    if (unwatch) this.#unwatch.set(agent.name, unwatch);
  }

  /**
   * Several registrations in one go are one `worker.hosts`. It is durable: a registration after the
   * hello went out but before the server's `worker.ready` came back would otherwise be lost (the
   * hello had the old list); sent again after a reconnect, it only repeats what the hello says.
   */
  #hostsChanged(): void {
    if (this.#hostsChangePending) return;
    this.#hostsChangePending = true;
    queueMicrotask(() => {
      this.#hostsChangePending = false;
      this.#link.send({ type: "worker.hosts", hosts: this.specs() }, true);
    });
  }

  /** What the worker tells the server it hosts. Read at every connect, so it is always current. */
  specs(): HostedAgent[] {
    return [...this.#agents.values()].map(({ agent, options }) => ({
      agent: agent.name,
      tools: agent.tools.list(),
      ...(options.toolTimeoutMs === undefined ? {} : { toolTimeoutMs: options.toolTimeoutMs }),
    }));
  }

  call(frame: HostedCall): void {
    const running = this.#running.get(frame.callId);
    if (running) {
      running.attempt = Math.max(running.attempt, frame.attempt);
      // A new delivery: the hold (held, or waiting for its answer) is asked again for it.
      if (running.held || running.holdAnswer) this.#sendHold(frame.callId, running);
      if (running.approvalAnswer) this.#sendApproval(frame.callId, running);
      this.#link.emit("hosted.joined", { callId: frame.callId, attempt: frame.attempt });
      return;
    }
    const hosted = this.#agents.get(frame.agent);
    // get() is a map lookup; list() would build every tool's spec for each call.
    const definition = hosted?.agent.tools.get(frame.tool);
    if (!hosted || !definition) {
      const result: ToolResult = {
        outcome: "unknown_tool",
        content: { text: ModelSentences.notHosted(frame.tool, frame.agent), images: [] },
        error: { code: "unknown_tool", message: `${frame.agent}/${frame.tool} is not hosted here` },
      };
      this.#link.send({ type: "hosted.result", callId: frame.callId, attempt: frame.attempt, result }, true);
      return;
    }
    const session = this.#executorFor(hosted, frame);
    if (session.calls++ === 0) this.#idle.delete(session.key);
    session.conversation = frame.conversation;
    const entry: RunningCall = {
      tool: frame.tool,
      attempt: frame.attempt,
      session,
      held: false,
      holdAnswer: undefined,
      approvalAnswer: undefined,
    };
    this.#running.set(frame.callId, entry);
    if (this.#link.listens?.("hosted.started") !== false) {
      this.#link.emit("hosted.started", {
        callId: frame.callId,
        agent: frame.agent,
        tool: frame.tool,
        sessionId: frame.sessionId,
        attempt: frame.attempt,
      });
    }
    // A then on the executor's promise, not an async frame: across the tool's wait a call keeps
    // two small closures instead of a suspended function.
    const callId = frame.callId;
    // The server's clock decides when the call times out; the frame says how long is left.
    session.executor
      .execute(
        { id: callId, name: frame.tool, arguments: frame.arguments },
        { attempt: frame.attempt, timeoutMs: frame.timeoutMs },
      )
      .then(
        (outcome) => this.#answer(callId, entry, outcome, undefined),
        (error: unknown) => this.#answer(callId, entry, undefined, error),
      );
  }

  /** A call ended (or the executor refused it: `error`): its result goes to the server. */
  #answer(
    callId: string,
    entry: RunningCall,
    outcome: ToolExecutionResult | undefined,
    error: unknown,
  ): void {
    let result: ToolResult;
    let kept: ToolExecutionResult;
    try {
      if (outcome === undefined) throw error;
      result = toToolResult(outcome);
      // The object the result store keeps; a copy when a delivery came while it ran (the
      // result answers that one) or when it holds the tool's object graph (`value`).
      const value = outcome.value;
      kept =
        outcome.attempt === entry.attempt && (typeof value !== "object" || value === null)
          ? outcome
          : { ...outcome, attempt: entry.attempt, value: undefined };
    } catch (caught) {
      result = {
        outcome: "failed",
        content: { text: ModelSentences.failed(entry.tool, (caught as Error).message), images: [] },
        error: { code: "internal", message: (caught as Error).message },
      };
      kept = { ...result, callId, name: entry.tool, held: false, attempt: entry.attempt, durationMs: 0 };
    }
    // The answer first (it is what the server waits for), then the bookkeeping: nothing reads
    // it in between, since all of this runs at once.
    try {
      this.#link.send({ type: "hosted.result", callId, attempt: entry.attempt, result }, true);
    } finally {
      this.#answered.set(callId, kept);
      const session = entry.session;
      this.#running.delete(callId);
      if (--session.calls === 0) this.#rest(session);
    }
    if (this.#link.listens?.("hosted.finished") !== false)
      this.#link.emit("hosted.finished", { callId, tool: entry.tool, outcome: result.outcome });
    if (this.#running.size === 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const wake of waiters) wake();
    }
  }

  /**
   * `hosted.cancel` is a request, answered with the call's `hosted.result`: a running call stops
   * (a held one only for `timed_out`) and its result follows; a finished call's result is sent
   * again; a call this worker never ran is answered cancelled. The server decided already
   * whether an interrupt may cancel the call.
   */
  cancel(frame: HostedCancel): void {
    const running = this.#running.get(frame.callId);
    if (running) {
      running.session.executor.cancel(frame.callId, frame.reason);
      return;
    }
    const answered = this.#answered.get(frame.callId);
    const attempt = frame.attempt ?? answered?.attempt ?? 1;
    const result: ToolResult = answered
      ? toToolResult(answered)
      : {
          outcome: "cancelled",
          content: { text: ModelSentences.notRunHere(), images: [] },
          error: { code: "cancelled", message: "the call is not running on this worker" },
          held: false,
        };
    this.#link.send({ type: "hosted.result", callId: frame.callId, attempt, result }, true);
  }

  /** `hosted.hold.ack`: the server's answer to a hold this worker asked for. */
  holdAnswered(frame: HoldAck): void {
    const running = this.#running.get(frame.callId);
    if (!running?.holdAnswer || frame.attempt !== running.attempt) return;
    const answer = running.holdAnswer;
    running.holdAnswer = undefined;
    answer({ accepted: frame.accepted, ...(frame.reason === undefined ? {} : { reason: frame.reason }) });
  }

  /** `hosted.approval.ack`: how the conditional approval this worker asked for ended. */
  approvalAnswered(frame: ApprovalAck): void {
    const running = this.#running.get(frame.callId);
    if (!running?.approvalAnswer || frame.attempt !== running.attempt) return;
    const answer = running.approvalAnswer;
    running.approvalAnswer = undefined;
    answer({ outcome: frame.outcome, ...(frame.reason === undefined ? {} : { reason: frame.reason }) });
  }

  /**
   * After a reconnect: ask again for the approvals still waiting (an ack sent to the old socket
   * is lost with it; the server answers again with the same question's outcome).
   */
  reattached(): void {
    for (const [callId, running] of this.#running)
      if (running.approvalAnswer) this.#sendApproval(callId, running);
  }

  #sendApproval(callId: string, running: RunningCall): void {
    this.#link.send({ type: "hosted.approval", callId, attempt: running.attempt }, true);
  }

  #sendHold(callId: string, running: RunningCall): void {
    this.#link.send({ type: "hosted.hold", callId, attempt: running.attempt }, true);
  }

  /** Resolves when no hosted call runs. */
  idle(): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Cancels every running call (the worker is stopping and out of time). */
  abortAll(): void {
    for (const [callId, running] of this.#running) {
      running.session.executor.cancel(callId);
    }
  }

  /** Stops the timer that drops idle executors (the worker has stopped). */
  close(): void {
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
    for (const unwatch of this.#unwatch.values()) unwatch();
    this.#unwatch.clear();
  }

  /** The session's executor becomes idle: kept for the TTL, within the bound of idle ones. */
  #rest(session: SessionExecutor): void {
    // No tool of the session runs to read the items, and the next call brings its own: kept, the
    // last call's items of up to `maxIdle` idle sessions outlived the young generation, and the
    // worker copied and promoted them (most of what it promoted per call in a whole turn).
    session.conversation = NO_ITEMS;
    if (this.#executors.get(session.key) !== session) return; // replaced while it ran
    session.idleSince = this.#now();
    this.#idle.set(session.key, session);
    if (this.#idle.size > this.#maxIdle) this.#drop(this.#idle.values().next().value as SessionExecutor);
    if (this.#sweepTimer === undefined) this.#armSweep(this.#idleTtlMs);
  }

  #drop(session: SessionExecutor): void {
    if (this.#lastSession === session) this.#lastSession = undefined;
    this.#idle.delete(session.key);
    this.#executors.delete(session.key);
  }

  /** An idle executor whose `idleSince` is at or before this has outlived the TTL. */
  #idleCutoff(): number {
    return this.#now() - this.#idleTtlMs;
  }

  /** Drops the executors idle for longer than the TTL; the idle map is oldest first. */
  #sweep(): void {
    const cutoff = this.#idleCutoff();
    for (const session of this.#idle.values()) {
      if (session.idleSince > cutoff) break;
      this.#drop(session);
    }
  }

  #armSweep(delayMs: number): void {
    this.#sweepTimer = setTimeout(HostedTools.#onSweepTimer, delayMs, this);
    // Idle executors must not keep the worker's process alive.
    this.#sweepTimer.unref?.();
  }

  static #onSweepTimer(self: HostedTools): void {
    self.#sweepTimer = undefined;
    self.#sweep();
    const oldest = self.#idle.values().next().value;
    if (oldest) self.#armSweep(Math.max(1, oldest.idleSince + self.#idleTtlMs - self.#now()));
  }

  /** Whether an idle executor was made for what this call's frame says: its `host()` and user. */
  #fits(session: SessionExecutor, hosted: Hosted, frame: HostedCall): boolean {
    return (
      session.hosted === hosted && session.userId === frame.user.id && session.userName === frame.user.name
    );
  }

  #executorFor(hosted: Hosted, frame: HostedCall): SessionExecutor {
    // While a call runs the session keeps its executor, as it always did (and nothing below is
    // worked out: with calls in flight, this is every call). A session with calls is never
    // dropped or replaced, so the latest one, still running calls, is the map's entry for its key.
    // The latest session, idle within its TTL, is kept too when the call fits it: one session's
    // calls one after another (a turn's, a conversation's) skip the key and the sweep.
    const last = this.#lastSession;
    if (last && last.sessionId === frame.sessionId && last.agent === frame.agent) {
      if (last.calls > 0) return last;
      if (last.idleSince > this.#idleCutoff() && this.#fits(last, hosted, frame)) return last;
    }
    // Unambiguous without JSON: the agent's name is length-prefixed.
    const key = `${frame.agent.length}:${frame.agent}${frame.sessionId}`;
    let known = this.#executors.get(key);
    if (known && known.calls > 0) {
      this.#lastSession = known;
      return known;
    }
    if (this.#idle.size > 0) {
      this.#sweep();
      known = this.#executors.get(key);
    }
    // An idle one made for another user or `host()` is replaced, so a call sees what its own
    // frame says.
    if (known && this.#fits(known, hosted, frame)) {
      this.#lastSession = known;
      return known;
    }
    if (known) this.#drop(known);
    const session: SessionExecutor = {
      key,
      agent: frame.agent,
      sessionId: frame.sessionId,
      hosted,
      executor: undefined as unknown as PreapprovedToolExecutor,
      calls: 0,
      userId: frame.user.id,
      userName: frame.user.name,
      idleSince: 0,
      conversation: frame.conversation,
    };
    // The server asks the user before it routes a call here; asking again would hang. Only a
    // conditional approval is decided here: its `when` runs, and a yes asks the server.
    const executor = new PreapprovedToolExecutor({
      tools: hosted.agent.tools,
      sessionId: frame.sessionId,
      user: frame.user,
      conversation: () => session.conversation,
      idempotencyStore: hosted.options.idempotencyStore ?? this.#store,
      maxConcurrentCalls: hosted.options.maxConcurrentCalls ?? 16,
      // A hold holds only once the server acknowledged it (`hosted.hold.ack`).
      confirmHold: ({ callId, signal }) =>
        new Promise<HoldDecision>((resolve) => {
          const running = this.#running.get(callId);
          if (!running) {
            resolve({ accepted: false, reason: "unknown_call" });
            return;
          }
          const onAbort = () => {
            if (running.holdAnswer === answer) running.holdAnswer = undefined;
            resolve({ accepted: false, reason: "settled" });
          };
          const answer = (decision: HoldDecision) => {
            signal.removeEventListener("abort", onAbort);
            resolve(decision);
          };
          signal.addEventListener("abort", onAbort, { once: true });
          running.holdAnswer = answer;
          this.#sendHold(callId, running);
        }),
      confirmApproval: ({ callId, signal }) =>
        new Promise<ConditionalApprovalAnswer>((resolve) => {
          const running = this.#running.get(callId);
          if (!running) {
            resolve({ outcome: "cancelled", reason: "unknown_call" });
            return;
          }
          // The call's end (a cancel) answers it too; the pipeline stops the call either way.
          signal.addEventListener("abort", () => resolve({ outcome: "cancelled" }), { once: true });
          running.approvalAnswer = resolve;
          this.#sendApproval(callId, running);
        }),
    });
    session.executor = executor;
    executor.on("progress", ({ callId, text }) =>
      this.#link.send({ type: "hosted.progress", callId, text }, false),
    );
    executor.on("say", ({ callId, text }) => this.#link.send({ type: "hosted.say", callId, text }, false));
    if (this.#onToolError) executor.on("threw", this.#onToolError);
    executor.on("held", ({ callId }) => {
      const running = this.#running.get(callId);
      if (running) running.held = true;
    });
    this.#executors.set(key, session);
    this.#lastSession = session;
    return session;
  }
}
