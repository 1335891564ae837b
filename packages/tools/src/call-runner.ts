import type { ConversationItem, NormalizedToolCall, ToolOutcome, User } from "@patchbay/protocol";
import type { EventEmitter } from "@patchbay/protocol/runtime";
import { RecentMap } from "@patchbay/protocol/runtime";
import type { ApprovalGate } from "./approval-gate";
import { type Ending, messageOf, resultOf } from "./call-ending";
import { holdCall } from "./call-hold";
import { type ApproveStep, type PipelineHost, runPipeline } from "./call-pipeline";
import { releaseAll, type SlotCaps, ToolSlots } from "./call-slots";
import { abortCall, abortError, CallState } from "./call-state";
import { clearTimers, touch } from "./call-timers";
import { assertPositiveInteger, ToolsError } from "./errors";
import { type IdempotencyStore, InMemoryIdempotencyStore } from "./idempotency-store";
import { interruptCancels } from "./interrupt-rule";
import * as Sentences from "./model-sentences";
import { Semaphore } from "./semaphore";
import { type ToolCallInput, toCall } from "./tool-call-input";
import type { ToolExecutionResult } from "./tool-execution-result";
import type {
  CancelReason,
  ExecuteOptions,
  ToolExecutorEvents,
  ToolExecutorOptions,
} from "./tool-executor-options";
import { compiledToolOf, type Tools } from "./tools";

const MAX_TRACKED_DELIVERIES = 10_000;

// How a call is made from its input and taken through the pipeline: the Node entry installs
// faster ways for a server's call rates (object-arguments-call.ts, fast-pipeline.ts), which do
// what the plain ones do; a page, with few calls and a size budget, keeps the plain ones.
let makeCall: (input: ToolCallInput) => NormalizedToolCall = toCall;
let pipeline: (host: PipelineHost, state: CallState) => unknown = runPipeline;

/** Installs the Node entry's ways to make a call and to take it through the pipeline. */
export function useFastPaths(
  fastCall: (input: ToolCallInput) => NormalizedToolCall,
  fastPipeline: (host: PipelineHost, state: CallState) => unknown,
): void {
  makeCall = fastCall;
  pipeline = fastPipeline;
}

/**
 * The machinery behind `ToolExecutor`: the calls in progress of one session, each taken through
 * the pipeline (call-pipeline.ts) and ended exactly once (`finish`), its result remembered so a
 * call delivered again is not run twice. The pipeline's steps see it through the narrow host
 * interfaces they declare; `ToolExecutor` is the public face and the event emitter.
 */
export class CallRunner implements PipelineHost {
  // `declare`d: the constructor sets them (no field definitions emitted; see errors.ts).
  declare readonly sessionId: string;
  declare readonly tools: Tools;
  declare readonly user: User;
  declare readonly conversation: () => readonly ConversationItem[];
  declare readonly approvalGate: ApprovalGate | undefined;
  declare readonly approvalExpiresInMs: number;
  declare readonly defaultTimeoutMs: number;
  declare readonly caps: SlotCaps;
  declare readonly confirmHold: ToolExecutorOptions["confirmHold"];
  declare readonly confirmApproval: ToolExecutorOptions["confirmApproval"];
  declare readonly approve: ApproveStep | undefined;
  declare readonly now: () => number;
  readonly #events: EventEmitter<ToolExecutorEvents>;
  readonly #store: IdempotencyStore;
  readonly #scheduleProgress: (flush: () => void) => void;
  readonly #active = new Map<string, CallState>();
  readonly #deliveries = new RecentMap<number>(MAX_TRACKED_DELIVERIES);

  constructor(
    options: ToolExecutorOptions,
    events: EventEmitter<ToolExecutorEvents>,
    approve: ApproveStep | undefined,
  ) {
    if (!options || typeof options.tools?.register !== "function") {
      throw new ToolsError("invalid_option", "tools: a Tools registry is required");
    }
    if (options.maxConcurrentCalls !== null)
      assertPositiveInteger("maxConcurrentCalls", options.maxConcurrentCalls);
    assertPositiveInteger("defaultTimeoutMs", options.defaultTimeoutMs);
    assertPositiveInteger("approvalExpiresInMs", options.approvalExpiresInMs);
    this.#events = events;
    this.approve = approve;
    this.tools = options.tools;
    this.sessionId = options.sessionId ?? "";
    this.user = options.user ?? { id: "anonymous" };
    const conversation = options.conversation ?? [];
    this.conversation = typeof conversation === "function" ? conversation : () => conversation;
    this.approvalGate = options.approvalGate;
    this.approvalExpiresInMs = options.approvalExpiresInMs ?? 5 * 60_000;
    this.#store = options.idempotencyStore ?? new InMemoryIdempotencyStore({ now: options.now });
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
    this.caps = {
      limiter: options.limiter,
      perTool: new ToolSlots(),
      session:
        options.maxConcurrentCalls === null ? undefined : new Semaphore(options.maxConcurrentCalls ?? 16),
    };
    this.#scheduleProgress = options.scheduleProgress ?? ((flush) => void setTimeout(flush, 0));
    this.now = options.now ?? Date.now;
    this.confirmHold = options.confirmHold;
    this.confirmApproval = options.confirmApproval;
  }

  get activeCallIds(): string[] {
    // An ended call stays in #active until its result is stored and the executor tidied.
    const ids: string[] = [];
    for (const [id, state] of this.#active) if (!state.settled) ids.push(id);
    return ids;
  }

  execute(input: ToolCallInput, options?: ExecuteOptions): Promise<ToolExecutionResult> {
    let call: NormalizedToolCall;
    try {
      call = makeCall(input);
      assertPositiveInteger("attempt", options?.attempt);
      assertPositiveInteger("timeoutMs", options?.timeoutMs);
    } catch (error) {
      return Promise.reject(error);
    }
    const attempt = this.#countDelivery(call.id, options?.attempt);
    const active = this.#active.get(call.id);
    // A call that ended with its result stored is answered from the store, as once it is tidied.
    if (active && !(active.settled && active.forgetWhenTidied)) {
      return active.promise.then((result) => ({ ...result, attempt }));
    }
    const tool = compiledToolOf(this.tools, call.name);
    const state = new CallState(call, tool, attempt, this.now(), `${this.sessionId}:${call.id}`);
    if (options?.timeoutMs !== undefined) state.explicitTimeoutMs = options.timeoutMs;
    if (options?.checkedArguments !== undefined) state.checkedArguments = options.checkedArguments;
    this.#active.set(call.id, state);
    this.#begin(state, options?.signal);
    return state.promise;
  }

  interrupt(): string[] {
    const cancelled: string[] = [];
    for (const state of [...this.#active.values()]) {
      if (state.settled || !interruptCancels(state)) continue;
      this.stop(state, "interrupted");
      cancelled.push(state.call.id);
    }
    return cancelled;
  }

  cancel(callId: string, reason: CancelReason): boolean {
    const state = this.#active.get(callId);
    if (!state || state.settled) return false;
    if (reason === "timed_out") {
      this.timeOut(state, Sentences.timedOut(state.call.name, state.timeoutMs), "timed_out");
      return true;
    }
    if (state.held && reason !== "cancelled") return false;
    this.stop(state, reason);
    return true;
  }

  isHeld(callId: string): boolean {
    const state = this.#active.get(callId);
    return state !== undefined && !state.settled && state.held;
  }

  // A delivery whose sender gave its attempt (a page's and a worker's calls, every one) is
  // counted only for an id counted before, so a sender that always counts never writes here: a
  // lookup in an empty map per call instead of a get and a set in one of 10,000 ids.
  #countDelivery(id: string, explicit: number | undefined): number {
    const seen = this.#deliveries.get(id);
    if (explicit && !seen) return explicit; // a count is 1 or more
    const count = Math.max((seen ?? 0) + 1, explicit ?? 0);
    this.#deliveries.set(id, count);
    return explicit ?? count;
  }

  // Not async functions: an async frame per call, suspended for the whole call, was one of the
  // larger things each call in flight kept alive (and so copied at every scavenge).
  #begin(state: CallState, signal: AbortSignal | undefined): void {
    let lookup: ReturnType<IdempotencyStore["get"]>;
    const failed = (error: unknown) =>
      // Running without knowing whether the call already ran could repeat a side effect.
      this.finish(state, "failed", {
        text: Sentences.lookupFailed(state.call.name),
        code: "idempotency_store_failed",
        message: messageOf(error),
      });
    try {
      lookup = this.#store.get(state.storeKey);
    } catch (error) {
      failed(error);
      return;
    }
    // A store that answers at once (the in-memory default) lets the call go on now, inside
    // `execute()`: a promise job here was a hop every call waited for. A durable store's answer
    // (any thenable) is awaited as `await` took it.
    if (typeof (lookup as { then?: unknown } | undefined)?.then !== "function") {
      this.#proceed(state, lookup as ToolExecutionResult | undefined, signal);
      return;
    }
    Promise.resolve(lookup).then((stored) => this.#proceed(state, stored, signal), failed);
  }

  #proceed(state: CallState, stored: ToolExecutionResult | undefined, signal: AbortSignal | undefined): void {
    if (stored) {
      state.settled = true;
      this.#active.delete(state.call.id);
      state.resolve({ ...stored, attempt: state.attempt });
      return;
    }
    if (signal) {
      if (signal.aborted) {
        this.stop(state, "cancelled");
        return;
      }
      const onAbort = () => this.stop(state, "cancelled");
      signal.addEventListener("abort", onAbort, { once: true });
      state.detach = () => signal.removeEventListener("abort", onAbort);
    }
    // Something threw where nothing should: the call fails (if it has not ended already).
    const crashed = (error: unknown) =>
      this.finish(state, "failed", {
        text: Sentences.failed(state.call.name, messageOf(error)),
        code: "internal",
        message: messageOf(error),
      });
    let running: unknown;
    try {
      running = pipeline(this, state);
    } catch (error) {
      crashed(error);
      return;
    }
    if (typeof (running as { then?: unknown } | undefined)?.then === "function")
      (running as Promise<unknown>).then(undefined, crashed);
  }

  // The hosts' side, called by the steps, the call's context and its timers.

  started(state: CallState): void {
    if (this.#events.listenerCount("started") > 0) {
      const { call } = state;
      this.#events.emit("started", {
        callId: call.id,
        name: call.name,
        attempt: state.attempt,
        arguments: call.arguments,
      });
    }
  }

  threw(state: CallState, error: unknown, step: "run" | "when" = "run"): void {
    this.#events.emit("threw", {
      callId: state.call.id,
      name: state.call.name,
      sessionId: this.sessionId,
      error,
      step,
    });
  }

  held(state: CallState): void {
    this.#events.emit("held", { callId: state.call.id, name: state.call.name });
  }

  hold(state: CallState): Promise<AbortSignal> {
    return holdCall(this, state);
  }

  update(state: CallState, text: string): void {
    if (state.settled) return;
    state.pendingProgress = String(text);
    touch(this, state);
    if (state.progressScheduled) return;
    state.progressScheduled = true;
    this.#scheduleProgress(() => {
      state.progressScheduled = false;
      const pending = state.pendingProgress;
      state.pendingProgress = undefined;
      if (state.settled || pending === undefined) return;
      this.#events.emit("progress", { callId: state.call.id, name: state.call.name, text: pending });
    });
  }

  say(state: CallState, text: string): void {
    if (state.settled) return;
    touch(this, state);
    this.#events.emit("say", { callId: state.call.id, name: state.call.name, text: String(text) });
  }

  timeOut(state: CallState, text: string, code: "timed_out" | "idle_timeout"): void {
    if (state.settled) return;
    state.stopReason = "timed out";
    this.finish(state, "timed_out", { text, code, message: text });
    const reason = abortError(text, "TimeoutError");
    state.holdController?.abort(reason);
    abortCall(state, reason);
  }

  stop(state: CallState, why: "interrupted" | "session_closed" | "cancelled"): void {
    if (state.settled) return;
    state.stopReason = why === "session_closed" ? "cancelled" : why;
    const text = Sentences.cancelled(state.call.name, why, state.held);
    const code = why === "session_closed" ? "cancelled" : why;
    this.finish(state, "cancelled", { text, code, message: `the call was ${why}` });
    abortCall(state, abortError(`tool call ${state.call.id} was ${why}`, "AbortError"));
  }

  finish(state: CallState, outcome: ToolOutcome, ending: Ending): void {
    if (state.settled) return;
    state.settled = true;
    state.pendingProgress = undefined;
    const result = resultOf(state, outcome, ending, this.now());
    state.forgetWhenTidied = this.#remember(state, result);
    state.resolve(result);
    this.#events.emit("finished", result);
    // The rest waits until whoever awaits the result has it (a worker's answer leaves sooner):
    // the continuations of `resolve` were queued first. Nothing can come between but microtasks.
    queueMicrotask(() => this.#tidy(state));
  }

  /** An ended call's timers, slots and signal listener go, and (stored) its entry as active. */
  #tidy(state: CallState): void {
    clearTimers(state);
    releaseAll(state);
    state.detach?.();
    state.detach = undefined;
    if (state.forgetWhenTidied) this.#forget(state);
  }

  /**
   * Puts the result in the store. Until the store has it, a new delivery joins this call rather
   * than run again: returns whether the call may be forgotten now (else when the store's write ends).
   */
  #remember(state: CallState, result: ToolExecutionResult): boolean {
    let pending: void | Promise<void>;
    try {
      pending = this.#store.set(state.storeKey, result);
    } catch {
      return true;
    }
    if (pending && typeof pending.then === "function") {
      const forget = () => this.#forget(state);
      pending.then(forget, forget);
      return false;
    }
    return true;
  }

  #forget(state: CallState): void {
    if (this.#active.get(state.call.id) === state) this.#active.delete(state.call.id);
  }
}
