import type { ConversationItem, NormalizedToolCall, ToolOutcome, User } from "@patchbay/protocol";
import { parseToolArguments } from "@patchbay/protocol/lite";
import { EventEmitter } from "eventemitter3";
import type { ApprovalDecision, ApprovalGate } from "./approval-gate";
import { buildApprovalRequest } from "./approval-request";
import { assertPositiveInteger, CallNotHeld, ToolError, ToolOutputError, ToolsError } from "./errors";
import { type IdempotencyStore, InMemoryIdempotencyStore } from "./idempotency-store";
import { interruptCancels } from "./interrupt-rule";
import { ModelSentences } from "./model-sentences";
import { RecentMap } from "./recent-map";
import { type Release, Semaphore } from "./semaphore";
import type { CompiledTool, ToolCallContext } from "./tool-definition";
import type { ToolExecutionResult } from "./tool-execution-result";
import type { ToolLimiter } from "./tool-limiter";
import { toToolOutputContent } from "./tool-output-content";
import { compiledToolOf, type Tools } from "./tools";

/**
 * The events a {@link ToolExecutor} emits, each naming the call. `finished` carries the whole
 * result. A call answered from the idempotency store, or joined to a run in progress, emits
 * nothing: events describe runs.
 *
 * @example
 * ```ts
 * executor.on("progress", ({ callId, text }) => send({ type: "tool.progress", callId, text }));
 * ```
 */
export interface ToolExecutorEvents {
  started: (event: {
    callId: string;
    name: string;
    attempt: number;
    arguments: Record<string, unknown>;
  }) => void;
  progress: (event: { callId: string; name: string; text: string }) => void;
  say: (event: { callId: string; name: string; text: string }) => void;
  held: (event: { callId: string; name: string }) => void;
  /**
   * A tool's `run` threw: the error itself, stack and all, for the developer's log (the model
   * only gets a short sentence in the result). Emitted before `finished`.
   */
  threw: (event: { callId: string; name: string; sessionId: string; error: unknown }) => void;
  finished: (result: ToolExecutionResult) => void;
}

/**
 * A call to execute: a normalized call, or just its id, name and arguments (an object or the
 * JSON text the model produced).
 *
 * @example
 * ```ts
 * const call: ToolCallInput = { id: "call_1", name: "get_weather", arguments: { city: "Berlin" } };
 * ```
 */
export type ToolCallInput =
  | NormalizedToolCall
  | { id: string; name: string; arguments?: Record<string, unknown> | string; argumentsError?: string };

/**
 * Options of a {@link ToolExecutor}.
 *
 * @example
 * ```ts
 * const options: ToolExecutorOptions = { tools, sessionId: "s_1", user: { id: "u_1" }, approvalGate: allowAll };
 * ```
 */
export interface ToolExecutorOptions {
  tools: Tools;
  /** The session the calls belong to. Default `""`. */
  sessionId?: string;
  /** The user whose turns trigger the calls. Default `{ id: "anonymous" }`. */
  user?: User;
  /** The conversation, or a function giving it as it is now (read when a tool reads `ctx.conversation`). */
  conversation?: readonly ConversationItem[] | (() => readonly ConversationItem[]);
  /** Asks the user before a tool with `approval` runs. Without one, such tools are declined. */
  approvalGate?: ApprovalGate;
  /** How long an approval request stays open unless the tool says otherwise. Default 5 minutes. */
  approvalExpiresInMs?: number;
  /** Where finished results are kept for calls delivered again. Default: an in-memory LRU with TTL. */
  idempotencyStore?: IdempotencyStore;
  /**
   * How many calls of this session run at once. Default 16. `null`: no session cap here, because
   * the caller caps the calls it hands over (the server's tool-call runner does).
   */
  maxConcurrentCalls?: number | null;
  /** The timeout of a tool that sets none. Default 30 000 ms. */
  defaultTimeoutMs?: number;
  /**
   * Asked when a tool calls `ctx.disallowInterruptions()`: whether the call may hold. The hold
   * (and the `held` event) happens only once it answers `accepted: true`; a refusal makes
   * `disallowInterruptions()` reject with `CallNotHeld`, and a refusal because a cancel is under
   * way (`reason: "cancelling"`) cancels the call. A page or a worker asks the server here
   * (`tool.hold` / `hosted.hold`, answered by the ack frame). Default: every hold is accepted.
   */
  confirmHold?: (request: HoldRequest) => HoldDecision | Promise<HoldDecision>;
  /** Process-wide per-tool caps shared with other executors. */
  limiter?: ToolLimiter;
  /**
   * Delivers coalesced progress: called with a `flush` function when an update is pending; the
   * `progress` event is emitted when `flush` runs, with the newest text pending then. Default:
   * the next macrotask (`setTimeout(flush, 0)`), late enough that an update made just before
   * `run` returns is replaced by the result. A host that relays progress at a pace (speech)
   * can pass its own.
   */
  scheduleProgress?: (flush: () => void) => void;
  /** The clock, in ms. Default `Date.now`. */
  now?: () => number;
}

/**
 * A tool asks to hold its call (see {@link ToolExecutorOptions.confirmHold}).
 *
 * @example
 * ```ts
 * const request: HoldRequest = { callId: "call_1", name: "book_flight", attempt: 1, signal };
 * ```
 */
export interface HoldRequest {
  callId: string;
  name: string;
  attempt: number;
  /** Aborts when the call ends before the answer comes. */
  signal: AbortSignal;
}

/**
 * The answer to a {@link HoldRequest}, as `hosted.hold.ack` / `tool.hold.ack` carry it.
 *
 * @example
 * ```ts
 * const decision: HoldDecision = { accepted: false, reason: "cancelling" };
 * ```
 */
export interface HoldDecision {
  accepted: boolean;
  reason?: string;
}

/**
 * Why a call is stopped with {@link ToolExecutor.cancel}: `timed_out` stops held calls too (their
 * held signal aborts); `interrupted` and `session_closed` leave a held call running; `cancelled`
 * (the default) stops any call, a held one included, but leaves its held signal alone.
 *
 * @example
 * ```ts
 * executor.cancel(frame.callId, frame.reason);
 * ```
 */
export type CancelReason = "interrupted" | "timed_out" | "session_closed" | "cancelled";

/**
 * Per-call options of {@link ToolExecutor.execute}.
 *
 * @example
 * ```ts
 * await executor.execute(call, { attempt: frame.attempt, signal: session.signal });
 * ```
 */
export interface ExecuteOptions {
  /** The delivery number as the sender counts it; default: how many times this executor saw the id. */
  attempt?: number;
  /** Aborting it cancels the call (as `cancel` does). Not used when the call joins one in progress. */
  signal?: AbortSignal;
  /**
   * This call's timeout, instead of the tool's `timeoutMs` or the default: the sender worked it
   * out (the server sends the time left in `tool.call` / `hosted.call`).
   */
  timeoutMs?: number;
  /**
   * The arguments as {@link ToolExecutor.checkArguments} already parsed them: they are not parsed
   * again (a call's arguments are checked once).
   */
  checkedArguments?: { value: unknown };
}

/**
 * One call in progress. A class with every field set in the constructor, and nothing made that
 * most calls never use (signals, timers other than the timeout, slot lists, listeners): the
 * executor's cost per call is mostly allocation, a third of it garbage collection.
 */
class CallState {
  readonly call: NormalizedToolCall;
  readonly tool: CompiledTool | undefined;
  readonly attempt: number;
  readonly startedAt: number;
  /** The call's key in the idempotency store. */
  readonly storeKey: string;
  readonly interruptible: boolean;
  held = false;
  settled = false;
  stopReason: string | undefined = undefined;
  /** Made when something needs the call's signal (see `ToolExecutor.#signalOf`). */
  controller: AbortController | undefined = undefined;
  /** Set when the call is stopped, so a signal made afterwards is born aborted with the reason. */
  aborted = false;
  abortReason: unknown = undefined;
  /** Made on the first hold: signals are costly to create and most calls are never held. */
  holdController: AbortController | undefined = undefined;
  /** A hold asked for and not answered yet (see `confirmHold`). */
  holdPending: Promise<AbortSignal> | undefined = undefined;
  /** From `ExecuteOptions.timeoutMs`; 0 when the tool's or the default applies. */
  explicitTimeoutMs = 0;
  checkedArguments: { value: unknown } | undefined = undefined;
  timeoutMs = 0;
  timeoutTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  idleMs = 0;
  idleTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** The slots the call holds, given back when it ends. */
  releases: Release[] | undefined = undefined;
  pendingProgress: string | undefined = undefined;
  progressScheduled = false;
  /** Stops listening to the `signal` execute was given. */
  detach: (() => void) | undefined = undefined;
  readonly promise: Promise<ToolExecutionResult>;
  resolve!: (result: ToolExecutionResult) => void;

  constructor(
    call: NormalizedToolCall,
    tool: CompiledTool | undefined,
    attempt: number,
    startedAt: number,
    storeKey: string,
  ) {
    this.call = call;
    this.tool = tool;
    this.attempt = attempt;
    this.startedAt = startedAt;
    this.storeKey = storeKey;
    this.interruptible = tool?.definition.interruptible === true;
    this.promise = new Promise<ToolExecutionResult>((resolve) => {
      this.resolve = resolve;
    });
  }
}

interface Ending {
  text: string;
  code?: string;
  message?: string;
  content?: ToolExecutionResult["content"];
  value?: unknown;
}

const MAX_TRACKED_DELIVERIES = 10_000;

function toCall(input: ToolCallInput): NormalizedToolCall {
  if (typeof input !== "object" || input === null) {
    throw new ToolsError("invalid_tool_call", "a tool call must be an object with an id and a name");
  }
  if (typeof input.id !== "string" || input.id === "") {
    throw new ToolsError("invalid_tool_call", "id: a tool call needs a non-empty string id");
  }
  if (typeof input.name !== "string" || input.name === "") {
    throw new ToolsError("invalid_tool_call", `name: tool call ${input.id} needs a non-empty tool name`);
  }
  if (
    "rawArguments" in input &&
    typeof input.rawArguments === "string" &&
    typeof input.arguments === "object"
  ) {
    return input as NormalizedToolCall;
  }
  const parsed = parseToolArguments(input.arguments);
  const call: NormalizedToolCall = {
    id: input.id,
    index: "index" in input && typeof input.index === "number" ? input.index : 0,
    name: input.name,
    arguments: parsed.arguments,
    rawArguments: parsed.raw,
  };
  const argumentsError = input.argumentsError ?? parsed.error;
  if (argumentsError !== undefined) call.argumentsError = argumentsError;
  return call;
}

function decisionOf(decision: ApprovalDecision): {
  outcome: string;
  callId?: string;
  argumentsHash?: string;
} {
  return typeof decision === "string" ? { outcome: decision } : (decision ?? { outcome: "invalid" });
}

function abortError(message: string, name: "AbortError" | "TimeoutError"): DOMException {
  return new DOMException(message, name);
}

/**
 * Runs tool calls for one session: checks arguments, asks for approval, enforces timeouts and
 * concurrency caps, relays progress, handles interrupts, and remembers results so a call
 * delivered again is not run twice. Emits `started`, `progress`, `say`, `held` and `finished`.
 *
 * @example
 * ```ts
 * const executor = new ToolExecutor({ tools, sessionId: "s_1", user: { id: "u_1" }, approvalGate });
 * executor.on("progress", ({ callId, text }) => relay(callId, text));
 * const result = await executor.execute({ id: "call_1", name: "book_flight", arguments: { flight_id: "LH400", seats: 2 } });
 * socket.send(JSON.stringify({ type: "tool.result", callId: result.callId, result: toToolResult(result) }));
 * ```
 */
export class ToolExecutor extends EventEmitter<ToolExecutorEvents> {
  readonly sessionId: string;
  readonly #tools: Tools;
  readonly #user: User;
  readonly #conversation: () => readonly ConversationItem[];
  readonly #approvalGate: ApprovalGate | undefined;
  readonly #approvalExpiresInMs: number;
  readonly #store: IdempotencyStore;
  readonly #defaultTimeoutMs: number;
  readonly #limiter: ToolLimiter | undefined;
  readonly #scheduleProgress: (flush: () => void) => void;
  readonly #now: () => number;
  readonly #session: Semaphore | undefined;
  readonly #confirmHold: ToolExecutorOptions["confirmHold"];
  readonly #perTool = new WeakMap<CompiledTool, Semaphore>();
  readonly #active = new Map<string, CallState>();
  readonly #deliveries = new RecentMap<number>(MAX_TRACKED_DELIVERIES);

  constructor(options: ToolExecutorOptions) {
    super();
    if (!options || typeof options.tools?.register !== "function") {
      throw new ToolsError("invalid_option", "tools: a Tools registry is required");
    }
    if (options.maxConcurrentCalls !== null)
      assertPositiveInteger("maxConcurrentCalls", options.maxConcurrentCalls);
    assertPositiveInteger("defaultTimeoutMs", options.defaultTimeoutMs);
    assertPositiveInteger("approvalExpiresInMs", options.approvalExpiresInMs);
    this.#tools = options.tools;
    this.sessionId = options.sessionId ?? "";
    this.#user = options.user ?? { id: "anonymous" };
    const conversation = options.conversation ?? [];
    this.#conversation = typeof conversation === "function" ? conversation : () => conversation;
    this.#approvalGate = options.approvalGate;
    this.#approvalExpiresInMs = options.approvalExpiresInMs ?? 5 * 60_000;
    this.#store = options.idempotencyStore ?? new InMemoryIdempotencyStore({ now: options.now });
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
    this.#limiter = options.limiter;
    this.#scheduleProgress = options.scheduleProgress ?? ((flush) => void setTimeout(flush, 0));
    this.#now = options.now ?? Date.now;
    this.#session =
      options.maxConcurrentCalls === null ? undefined : new Semaphore(options.maxConcurrentCalls ?? 16);
    this.#confirmHold = options.confirmHold;
  }

  /** The ids of the calls in progress (awaiting approval, waiting for a slot, or running). */
  get activeCallIds(): string[] {
    return [...this.#active.keys()];
  }

  /**
   * Runs a call and resolves with how it ended; it never rejects for anything the tool or the
   * model did (only for a call without an id or a name). A call whose id is in progress joins
   * it; a call whose id already finished gets the stored result without running again.
   */
  execute(input: ToolCallInput, options?: ExecuteOptions): Promise<ToolExecutionResult> {
    let call: NormalizedToolCall;
    try {
      call = toCall(input);
      assertPositiveInteger("attempt", options?.attempt);
      assertPositiveInteger("timeoutMs", options?.timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const attempt = this.#countDelivery(call.id, options?.attempt);
    const active = this.#active.get(call.id);
    if (active) return active.promise.then((result) => ({ ...result, attempt }));
    const state = this.#createState(call, attempt);
    if (options?.timeoutMs !== undefined) state.explicitTimeoutMs = options.timeoutMs;
    if (options?.checkedArguments !== undefined) state.checkedArguments = options.checkedArguments;
    this.#active.set(call.id, state);
    void this.#begin(state, options?.signal);
    return state.promise;
  }

  /**
   * Cancels every call in progress that the interrupt rule lets an interrupt cancel (its tool is
   * `interruptible` and it is not held; see `interruptCancels`). Their signals abort and they end
   * as `cancelled`. Returns the ids cancelled.
   */
  interrupt(): string[] {
    const cancelled: string[] = [];
    for (const state of [...this.#active.values()]) {
      if (state.settled || !interruptCancels(state)) continue;
      this.#stop(state, "interrupted");
      cancelled.push(state.call.id);
    }
    return cancelled;
  }

  /**
   * Cancels one call for a {@link CancelReason}. `timed_out` ends it as `timed_out` and aborts its
   * held signal too. `interrupted` and `session_closed` leave a held call running (it goes on to
   * its result). `cancelled`, the default, ends any call as `cancelled` (with `held` telling
   * whether a change may have started), leaving a held signal alone. A call waiting for its hold
   * to be confirmed is not held yet: it is cancelled. Returns whether the call was stopped.
   */
  cancel(callId: string, reason: CancelReason = "cancelled"): boolean {
    const state = this.#active.get(callId);
    if (!state || state.settled) return false;
    if (reason === "timed_out") {
      this.#timeOut(state, ModelSentences.timedOut(state.call.name, state.timeoutMs), "timed_out");
      return true;
    }
    if (state.held && reason !== "cancelled") return false;
    this.#stop(state, reason);
    return true;
  }

  /**
   * Whether a call is in progress here and held (its hold was confirmed). A call that finished
   * is not.
   */
  isHeld(callId: string): boolean {
    const state = this.#active.get(callId);
    return state !== undefined && !state.settled && state.held;
  }

  /**
   * Parses arguments with the tool's own schema, as `execute` would: the parsed value, or the
   * issues (one per line). Pass the value as `checkedArguments` so the call is not parsed twice.
   * Resolves `undefined` for a tool this executor does not have.
   */
  async checkArguments(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ ok: true; value: unknown } | { ok: false; issues: string[] } | undefined> {
    const tool = compiledToolOf(this.#tools, name);
    if (!tool) return undefined;
    return tool.parameters.parse(args);
  }

  #countDelivery(id: string, explicit: number | undefined): number {
    const count = Math.max((this.#deliveries.get(id) ?? 0) + 1, explicit ?? 0);
    this.#deliveries.set(id, count);
    return explicit ?? count;
  }

  #createState(call: NormalizedToolCall, attempt: number): CallState {
    const tool = compiledToolOf(this.#tools, call.name);
    return new CallState(call, tool, attempt, this.#now(), this.#storeKey(call.id));
  }

  /**
   * The call's signal, made on first use: an AbortController costs about a tenth of a call, and
   * most calls end without anything listening to it. A signal made after the call was stopped
   * is born aborted, with the same reason.
   */
  #signalOf(state: CallState): AbortSignal {
    let controller = state.controller;
    if (controller === undefined) {
      controller = new AbortController();
      state.controller = controller;
      if (state.aborted) controller.abort(state.abortReason);
    }
    return controller.signal;
  }

  #abort(state: CallState, reason: unknown): void {
    if (state.aborted) return;
    state.aborted = true;
    state.abortReason = reason;
    state.controller?.abort(reason);
  }

  #storeKey(callId: string): string {
    return `${this.sessionId}:${callId}`;
  }

  async #begin(state: CallState, signal: AbortSignal | undefined): Promise<void> {
    let stored: ToolExecutionResult | undefined;
    try {
      stored = await this.#store.get(state.storeKey);
    } catch (error) {
      // Running without knowing whether the call already ran could repeat a side effect.
      this.#finish(state, "failed", {
        text: ModelSentences.lookupFailed(state.call.name),
        code: "idempotency_store_failed",
        message: (error as Error)?.message ?? String(error),
      });
      return;
    }
    if (stored) {
      state.settled = true;
      this.#active.delete(state.call.id);
      state.resolve({ ...stored, attempt: state.attempt });
      return;
    }
    if (signal) {
      if (signal.aborted) {
        this.#stop(state, "cancelled");
        return;
      }
      const onAbort = () => this.#stop(state, "cancelled");
      signal.addEventListener("abort", onAbort, { once: true });
      state.detach = () => signal.removeEventListener("abort", onAbort);
    }
    try {
      await this.#pipeline(state);
    } catch (error) {
      this.#finish(state, "failed", {
        text: ModelSentences.failed(state.call.name, (error as Error)?.message ?? String(error)),
        code: "internal",
        message: (error as Error)?.message ?? String(error),
      });
    }
  }

  async #pipeline(state: CallState): Promise<void> {
    const { call, tool } = state;
    if (call.argumentsError !== undefined) {
      this.#finish(state, "invalid_arguments", {
        text: ModelSentences.unreadableArguments(call.name, call.argumentsError),
        code: "invalid_arguments",
        message: call.argumentsError,
      });
      return;
    }
    if (!tool) {
      const available = this.#tools.names();
      this.#finish(state, "unknown_tool", {
        text: ModelSentences.unknownTool(call.name, available),
        code: "unknown_tool",
        message: `no tool named ${JSON.stringify(call.name)} is registered`,
      });
      return;
    }
    const parsed = state.checkedArguments
      ? ({ ok: true, value: state.checkedArguments.value } as const)
      : await tool.parameters.parse(call.arguments);
    if (state.settled) return;
    if (!parsed.ok) {
      const lines = parsed.issues.join("\n");
      this.#finish(state, "invalid_arguments", {
        text: ModelSentences.invalidArguments(call.name, parsed.issues),
        code: "invalid_arguments",
        message: lines,
      });
      return;
    }
    if (tool.spec.approval && !(await this.#approve(state, tool))) return;
    if (state.settled) return;

    const definition = tool.definition;
    state.timeoutMs = state.explicitTimeoutMs || (definition.timeoutMs ?? this.#defaultTimeoutMs);
    state.timeoutTimer = setTimeout(ToolExecutor.#fireTimeout, state.timeoutMs, this, state);
    // Narrowest caps first, so a call waiting on its tool's cap holds no session slot meanwhile.
    // A free slot is taken without waiting (no promise, no signal); only a wait needs the signal.
    if (this.#limiter) {
      if (!(await this.#waitForSlot(state, this.#limiter.acquire(call.name, this.#signalOf(state))))) return;
    }
    if (tool.shared && !(await this.#takeSlot(state, tool.shared))) return;
    if (definition.concurrency !== undefined && !(await this.#takeSlot(state, this.#toolSlots(tool)))) return;
    if (this.#session !== undefined) {
      const session = this.#takeSlot(state, this.#session);
      if (session !== true && !(await session)) return;
    }

    if (definition.idleTimeoutMs !== undefined) this.#armIdle(state, definition.idleTimeoutMs);
    if (this.listenerCount("started") > 0) {
      this.emit("started", {
        callId: call.id,
        name: call.name,
        attempt: state.attempt,
        arguments: call.arguments,
      });
    }
    const run = definition.run;
    const signal = this.#signalOf(state);
    let value: unknown;
    try {
      value = await run(parsed.value, signal, new ToolExecutor.#Context(this, state));
    } catch (error) {
      if (!state.settled) {
        this.emit("threw", { callId: call.id, name: call.name, sessionId: this.sessionId, error });
        this.#finish(state, "failed", failureOf(call.name, error));
      }
      return;
    }
    if (state.settled) return;
    let content: ToolExecutionResult["content"];
    try {
      content = toToolOutputContent(value);
    } catch (error) {
      this.#finish(state, "failed", failureOf(call.name, error));
      return;
    }
    this.#finish(state, "completed", { text: content.text, content, value });
  }

  async #approve(state: CallState, tool: CompiledTool): Promise<boolean> {
    const { call } = state;
    const approval = tool.spec.approval!;
    const gate = this.#approvalGate;
    if (!gate) {
      this.#finish(state, "declined", {
        text: ModelSentences.approvalUnavailable(call.name),
        code: "approval_unavailable",
        message: "no approval gate is configured",
      });
      return false;
    }
    const expiresInMs = approval.expiresInMs ?? this.#approvalExpiresInMs;
    const request = buildApprovalRequest({
      callId: call.id,
      tool: call.name,
      approval,
      arguments: call.arguments,
      now: this.#now(),
      defaultExpiresInMs: this.#approvalExpiresInMs,
    });
    const argumentsHash = request.argumentsHash;

    const questionController = new AbortController();
    const callSignal = this.#signalOf(state);
    const onCallEnd = () => questionController.abort(callSignal.reason);
    callSignal.addEventListener("abort", onCallEnd, { once: true });
    let expiryTimer: ReturnType<typeof setTimeout> | undefined;
    const expiry = new Promise<"expired">((resolve) => {
      expiryTimer = setTimeout(() => resolve("expired"), expiresInMs);
    });
    const ended = new Promise<"ended">((resolve) => {
      callSignal.addEventListener("abort", () => resolve("ended"), { once: true });
    });
    let answer: ApprovalDecision | "ended";
    try {
      answer = await Promise.race([
        Promise.resolve().then(() => gate(request, questionController.signal)),
        expiry,
        ended,
      ]);
    } catch (error) {
      if (!state.settled) {
        this.#finish(state, "failed", {
          text: ModelSentences.approvalFailed(call.name, (error as Error)?.message ?? String(error)),
          code: "approval_failed",
          message: (error as Error)?.message ?? String(error),
        });
      }
      return false;
    } finally {
      clearTimeout(expiryTimer);
      callSignal.removeEventListener("abort", onCallEnd);
    }
    if (state.settled || answer === "ended") return false;
    const decision = decisionOf(answer);
    if (decision.outcome === "expired" || this.#now() > request.expiresAt) {
      questionController.abort(abortError("the approval request expired", "TimeoutError"));
      this.#finish(state, "approval_expired", {
        text: ModelSentences.approvalExpired(call.name),
        code: "approval_expired",
        message: `the approval request expired after ${expiresInMs} ms`,
      });
      return false;
    }
    if (
      (decision.callId !== undefined && decision.callId !== call.id) ||
      (decision.argumentsHash !== undefined && decision.argumentsHash !== argumentsHash)
    ) {
      this.#finish(state, "declined", {
        text: ModelSentences.approvalMismatch(call.name),
        code: "approval_mismatch",
        message: "the approval is bound to another call id or arguments hash",
      });
      return false;
    }
    if (decision.outcome === "declined") {
      this.#finish(state, "declined", {
        text: ModelSentences.declined(call.name),
        code: "declined",
        message: "the user declined",
      });
      return false;
    }
    if (decision.outcome !== "allowed") {
      this.#finish(state, "failed", {
        text: ModelSentences.approvalFailed(call.name, "its answer was not understood"),
        code: "approval_failed",
        message: `the approval gate answered ${JSON.stringify(answer)}, expected "allowed", "declined" or "expired"`,
      });
      return false;
    }
    return true;
  }

  #toolSlots(tool: CompiledTool): Semaphore {
    let slots = this.#perTool.get(tool);
    if (!slots) {
      slots = new Semaphore(tool.definition.concurrency!);
      this.#perTool.set(tool, slots);
    }
    return slots;
  }

  /**
   * A call's {@link ToolCallContext}: one object per call. Its signal is made when read, and its
   * methods are bound when first read (so `const { update } = ctx` still works), because most
   * tools use none of them. Declared in the class body so it may call the executor's private
   * methods.
   */
  static readonly #Context = class CallContext implements ToolCallContext {
    readonly id: string;
    readonly name: string;
    readonly sessionId: string;
    readonly user: User;
    readonly attempt: number;
    readonly #executor: ToolExecutor;
    readonly #state: CallState;
    #boundUpdate: ((text: string) => void) | undefined;
    #boundSay: ((text: string) => void) | undefined;
    #boundHold: (() => Promise<AbortSignal>) | undefined;

    constructor(executor: ToolExecutor, state: CallState) {
      this.id = state.call.id;
      this.name = state.call.name;
      this.sessionId = executor.sessionId;
      this.user = executor.#user;
      this.attempt = state.attempt;
      this.#executor = executor;
      this.#state = state;
    }

    get signal(): AbortSignal {
      return this.#executor.#signalOf(this.#state);
    }

    get conversation(): readonly ConversationItem[] {
      return this.#executor.#conversation();
    }

    get update(): (text: string) => void {
      const executor = this.#executor;
      const state = this.#state;
      this.#boundUpdate ??= (text) => executor.#update(state, text);
      return this.#boundUpdate;
    }

    get say(): (text: string) => void {
      const executor = this.#executor;
      const state = this.#state;
      this.#boundSay ??= (text) => executor.#say(state, text);
      return this.#boundSay;
    }

    get disallowInterruptions(): () => Promise<AbortSignal> {
      const executor = this.#executor;
      const state = this.#state;
      this.#boundHold ??= () => executor.#hold(state);
      return this.#boundHold;
    }
  };

  #update(state: CallState, text: string): void {
    if (state.settled) return;
    state.pendingProgress = String(text);
    this.#touch(state);
    if (state.progressScheduled) return;
    state.progressScheduled = true;
    this.#scheduleProgress(() => {
      state.progressScheduled = false;
      const pending = state.pendingProgress;
      state.pendingProgress = undefined;
      if (state.settled || pending === undefined) return;
      this.emit("progress", { callId: state.call.id, name: state.call.name, text: pending });
    });
  }

  #say(state: CallState, text: string): void {
    if (state.settled) return;
    this.#touch(state);
    this.emit("say", { callId: state.call.id, name: state.call.name, text: String(text) });
  }

  #hold(state: CallState): Promise<AbortSignal> {
    if (state.settled || state.aborted) {
      return Promise.reject(new CallNotHeld(state.call.id, state.stopReason ?? "finished"));
    }
    if (state.held && state.holdController) return Promise.resolve(state.holdController.signal);
    if (state.holdPending) return state.holdPending;
    const confirm = this.#confirmHold;
    if (confirm === undefined) return Promise.resolve(this.#becomeHeld(state));
    state.holdPending = this.#confirm(state, confirm);
    // A tool that does not await its hold must not leave an unhandled rejection behind.
    state.holdPending.catch(() => undefined);
    return state.holdPending;
  }

  async #confirm(
    state: CallState,
    confirm: NonNullable<ToolExecutorOptions["confirmHold"]>,
  ): Promise<AbortSignal> {
    const signal = this.#signalOf(state);
    let decision: HoldDecision | "ended";
    try {
      decision = await Promise.race([
        Promise.resolve(
          confirm({ callId: state.call.id, name: state.call.name, attempt: state.attempt, signal }),
        ),
        new Promise<"ended">((resolve) => {
          if (signal.aborted) resolve("ended");
          else signal.addEventListener("abort", () => resolve("ended"), { once: true });
        }),
      ]);
    } catch (error) {
      state.holdPending = undefined;
      throw new CallNotHeld(state.call.id, `not confirmed (${(error as Error)?.message ?? String(error)})`);
    }
    state.holdPending = undefined;
    if (decision === "ended" || state.settled || state.aborted) {
      throw new CallNotHeld(state.call.id, state.stopReason ?? "finished");
    }
    if (!decision.accepted) {
      // Refused because a cancel of this call is under way: the call stops now, whichever of
      // the cancel and this answer arrived first.
      if (decision.reason === "cancelling") this.#stop(state, "interrupted");
      throw new CallNotHeld(state.call.id, `refused by the server (${decision.reason ?? "no reason given"})`);
    }
    return this.#becomeHeld(state);
  }

  #becomeHeld(state: CallState): AbortSignal {
    if (!state.held || !state.holdController) {
      state.held = true;
      state.holdController = new AbortController();
      this.emit("held", { callId: state.call.id, name: state.call.name });
    }
    return state.holdController.signal;
  }

  #touch(state: CallState): void {
    const idleMs = state.tool?.definition.idleTimeoutMs;
    if (idleMs !== undefined && state.idleTimer !== undefined) this.#armIdle(state, idleMs);
  }

  #armIdle(state: CallState, idleMs: number): void {
    if (state.idleTimer !== undefined) clearTimeout(state.idleTimer);
    state.idleMs = idleMs;
    state.idleTimer = setTimeout(ToolExecutor.#fireIdle, idleMs, this, state);
  }

  // Timer callbacks are static and get the executor and the call as arguments, so arming a
  // timer makes no closure.
  static #fireTimeout(executor: ToolExecutor, state: CallState): void {
    executor.#timeOut(state, ModelSentences.timedOut(state.call.name, state.timeoutMs), "timed_out");
  }

  static #fireIdle(executor: ToolExecutor, state: CallState): void {
    executor.#timeOut(state, ModelSentences.idleTimedOut(state.call.name, state.idleMs), "idle_timeout");
  }

  /** Takes a free slot at once (true), or waits for one (false when the wait was aborted). */
  #takeSlot(state: CallState, slots: Semaphore): true | Promise<boolean> {
    const release = slots.tryAcquire();
    if (release === undefined) return this.#waitForSlot(state, slots.acquire(this.#signalOf(state)));
    if (state.releases === undefined) state.releases = [release];
    else state.releases.push(release);
    return true;
  }

  async #waitForSlot(state: CallState, waiting: Promise<Release>): Promise<boolean> {
    let release: Release;
    try {
      release = await waiting;
    } catch {
      return false; // the wait was aborted by whoever ended the call
    }
    if (state.releases === undefined) state.releases = [release];
    else state.releases.push(release);
    if (state.settled) {
      this.#releaseAll(state);
      return false;
    }
    return true;
  }

  #timeOut(state: CallState, text: string, code: string): void {
    if (state.settled) return;
    state.stopReason = "timed out";
    this.#finish(state, "timed_out", { text, code, message: text });
    const reason = abortError(text, "TimeoutError");
    state.holdController?.abort(reason);
    this.#abort(state, reason);
  }

  #stop(state: CallState, why: "interrupted" | "session_closed" | "cancelled"): void {
    if (state.settled) return;
    state.stopReason = why === "session_closed" ? "cancelled" : why;
    const text = ModelSentences.cancelled(state.call.name, why, state.held);
    const code = why === "session_closed" ? "cancelled" : why;
    this.#finish(state, "cancelled", { text, code, message: `the call was ${why}` });
    this.#abort(state, abortError(`tool call ${state.call.id} was ${why}`, "AbortError"));
  }

  #releaseAll(state: CallState): void {
    const releases = state.releases;
    if (releases === undefined) return;
    state.releases = undefined;
    for (const release of releases) release();
  }

  #finish(state: CallState, outcome: ToolOutcome, ending: Ending): void {
    if (state.settled) return;
    state.settled = true;
    state.pendingProgress = undefined;
    if (state.timeoutTimer !== undefined) clearTimeout(state.timeoutTimer);
    if (state.idleTimer !== undefined) clearTimeout(state.idleTimer);
    this.#releaseAll(state);
    if (state.detach !== undefined) {
      state.detach();
      state.detach = undefined;
    }
    const result: ToolExecutionResult = {
      callId: state.call.id,
      name: state.call.name,
      outcome,
      content: ending.content ?? { text: ending.text, images: [] },
      held: state.held,
      attempt: state.attempt,
      durationMs: Math.max(0, this.#now() - state.startedAt),
    };
    if (ending.code !== undefined)
      result.error = { code: ending.code, message: ending.message ?? ending.text };
    if (outcome === "completed") result.value = ending.value;
    this.#remember(state, result);
    state.resolve(result);
    this.emit("finished", result);
  }

  #remember(state: CallState, result: ToolExecutionResult): void {
    // Until the store has the result, a new delivery must join this call rather than run again.
    let pending: void | Promise<void>;
    try {
      pending = this.#store.set(state.storeKey, result);
    } catch {
      this.#forget(state);
      return;
    }
    if (pending && typeof pending.then === "function") {
      const forget = () => this.#forget(state);
      pending.then(forget, forget);
    } else {
      this.#forget(state);
    }
  }

  #forget(state: CallState): void {
    if (this.#active.get(state.call.id) === state) this.#active.delete(state.call.id);
  }
}

function failureOf(name: string, error: unknown): Ending {
  if (error instanceof ToolError) return { text: error.message, code: error.code, message: error.message };
  if (error instanceof ToolOutputError) {
    return {
      text: ModelSentences.unusableOutput(name, error.message),
      code: error.code,
      message: error.message,
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  const own = error instanceof Error ? (error as unknown as { code?: unknown }).code : undefined;
  const code = typeof own === "string" && own !== "" ? own : "tool_error";
  return { text: ModelSentences.failed(name, message), code, message };
}
