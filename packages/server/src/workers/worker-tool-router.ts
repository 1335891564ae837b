import type { ToolResult, ToolSpec, WorkerToServerFrame } from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import { ModelSentences } from "@patchbay/tools";
import type {
  CancelReason,
  HostedToolRequest,
  HostedToolRouter,
  ToolCallHandlers,
} from "../extensions/dispatch-seams";
import { type Logger, silentLogger } from "../observability/logger";
import type { DispatchMetrics } from "./dispatch-metrics";
import { fitHostedCall, type HostedCallFrame } from "./fit-hosted-call";
import type { ConnectedWorker, WorkerRegistry } from "./worker-registry";

interface PendingCall {
  request: HostedToolRequest;
  handlers: ToolCallHandlers;
  attempt: number;
  /** The worker socket the latest delivery went to; undefined while waiting for one to connect. */
  worker: ConnectedWorker | undefined;
  deadline: number;
  /** Set once a cancel was asked: the worker's answer settles the call, or this bound does. */
  cancelTimer: ReturnType<typeof setTimeout> | undefined;
  cancelReason: CancelReason | undefined;
  resolve: (result: ToolResult) => void;
}

/** After a cancel, how long a call waits for the worker's answer before it is given up. */
const CANCEL_ANSWER_WINDOW_MS = 120_000;

/** Calls kept after they settle, so a second result for one of them is recognized and dropped. */
const SETTLED_MEMORY = 10_000;

/** Options of {@link WorkerToolRouter}. */
export interface WorkerToolRouterOptions {
  registry: WorkerRegistry;
  metrics?: DispatchMetrics;
  logger?: Logger;
}

/**
 * Runs hosted tool calls on dispatch workers, exactly once as far as the model is concerned.
 *
 * A call goes to a connected worker hosting the tool, the one with the fewest calls outstanding.
 * When that worker disconnects (or is dropped for missing heartbeats) before answering, the call
 * is delivered again with the same id and a higher attempt to another worker hosting the tool,
 * or to the first one when it comes back. Only a result for the latest delivery, from the worker
 * it went to, settles the call; any other is dropped. Workers key side effects on the call id,
 * so a call that ran partly on a worker that died is not done twice. Holds go to the runner
 * (`handlers.hold`) and its answer back as `hosted.hold.ack`; `cancel` sends `hosted.cancel` and
 * the worker's answer settles the call. The runner times calls out, not this router.
 */
export class WorkerToolRouter implements HostedToolRouter {
  readonly #registry: WorkerRegistry;
  readonly #metrics: DispatchMetrics | undefined;
  readonly #logger: Logger;
  readonly #pending = new Map<string, PendingCall>();
  readonly #settled = new RecentMap<true>(SETTLED_MEMORY);
  #closed = false;

  constructor(options: WorkerToolRouterOptions) {
    this.#registry = options.registry;
    this.#metrics = options.metrics;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Hosted calls waiting for a result. */
  get pending(): number {
    return this.#pending.size;
  }

  hasTool(agent: string, name: string): boolean {
    return this.#registry.hostsOf(agent, name).length > 0;
  }

  specs(agent: string): ToolSpec[] {
    return this.#registry.specs(agent);
  }

  call(request: HostedToolRequest, handlers: ToolCallHandlers): Promise<ToolResult> {
    if (this.#closed) {
      return Promise.resolve(failed("unavailable", ModelSentences.shuttingDown(request.tool)));
    }
    const known = this.#pending.get(request.callId);
    if (known) {
      // The turn loop asked again for a call that still runs (a resumed turn, maybe of another
      // node): join it; its progress and holds go to the newest asker from now on.
      known.handlers = handlers;
      return new Promise((resolve) => {
        const first = known.resolve;
        known.resolve = (result) => {
          first(result);
          resolve(result);
        };
      });
    }
    const worker = this.#registry.pickForTool(request.agent, request.tool);
    if (!worker) {
      this.#metrics?.hostedCalls.inc({ event: "no_worker" });
      return Promise.resolve(failed("no_worker", ModelSentences.noWorker(request.tool)));
    }
    return new Promise<ToolResult>((resolve) => {
      const call: PendingCall = {
        request,
        handlers,
        attempt: (request.attempt ?? 1) - 1,
        worker: undefined,
        deadline: Date.now() + request.timeoutMs,
        cancelTimer: undefined,
        cancelReason: undefined,
        resolve,
      };
      this.#pending.set(request.callId, call);
      this.#deliver(call, worker);
    });
  }

  /** The longest `toolTimeoutMs` a worker hosting the tool offered, if any did. */
  timeoutCeilingMs(agent: string, tool: string): number | undefined {
    return this.#registry.toolTimeoutMs(agent, tool);
  }

  /**
   * Asks the worker running the call to stop it (`hosted.cancel` naming the latest delivery). Its
   * `hosted.result` settles the call. A call whose worker went away is not delivered again from
   * now on; the worker is asked when it comes back, and the call is given up after a bound.
   */
  cancel(callId: string, reason: CancelReason): void {
    const call = this.#pending.get(callId);
    if (!call || call.cancelReason !== undefined) return;
    if (reason === "timed_out") this.#metrics?.hostedCalls.inc({ event: "timed_out" });
    call.cancelReason = reason;
    call.cancelTimer = setTimeout(
      () => this.#settle(callId, failed("unanswered", "the worker did not answer the cancel")),
      CANCEL_ANSWER_WINDOW_MS,
    );
    call.cancelTimer.unref?.();
    call.worker?.send({ type: "hosted.cancel", callId, reason, attempt: call.attempt });
  }

  /** A worker's frame about a hosted call: progress, say, hold, result. */
  onFrame(worker: ConnectedWorker, frame: WorkerToServerFrame): void {
    switch (frame.type) {
      case "hosted.result": {
        worker.calls.delete(frame.callId);
        const call = this.#pending.get(frame.callId);
        if (call && (call.worker?.id !== worker.id || frame.attempt !== call.attempt)) {
          this.#metrics?.hostedCalls.inc({ event: "stale_result" });
          this.#logger.info("hosted result dropped: not the latest delivery", {
            callId: frame.callId,
            worker: worker.id,
            attempt: frame.attempt,
            delivered: call.attempt,
            deliveredTo: call.worker?.id,
          });
          return;
        }
        if (!call) {
          if (this.#settled.has(frame.callId)) {
            this.#metrics?.hostedCalls.inc({ event: "duplicate_result" });
            this.#logger.debug("hosted result dropped: call already settled", {
              callId: frame.callId,
              worker: worker.id,
              attempt: frame.attempt,
            });
          } else {
            this.#logger.info("hosted result dropped: unknown call", {
              callId: frame.callId,
              worker: worker.id,
            });
          }
          return;
        }
        this.#settle(frame.callId, frame.result);
        return;
      }
      case "hosted.progress":
        this.#pending.get(frame.callId)?.handlers.progress(frame.text);
        return;
      case "hosted.say":
        this.#pending.get(frame.callId)?.handlers.say(frame.text);
        return;
      case "hosted.hold":
        this.#hold(worker, frame.callId, frame.attempt);
        return;
      case "hosted.approval":
        void this.#approval(worker, frame.callId, frame.attempt);
        return;
      default:
        return;
    }
  }

  /**
   * A worker said hello. Calls it still runs are its own again (it will answer them); calls that
   * wait for a worker hosting their tool go out now.
   */
  adopt(worker: ConnectedWorker, running: readonly string[]): void {
    for (const callId of running) {
      const call = this.#pending.get(callId);
      if (!call) continue;
      worker.calls.add(callId);
      // Undefined: it waited for a worker; same id: this is the same worker on a new socket.
      if (call.worker === undefined || call.worker.id === worker.id) {
        call.worker = worker;
        // A cancel sent to the old socket may have been lost with it: ask again.
        if (call.cancelReason !== undefined) {
          worker.send({ type: "hosted.cancel", callId, reason: call.cancelReason, attempt: call.attempt });
        }
      }
    }
    for (const call of this.#pending.values()) {
      // A call being cancelled is never delivered again: it must not start anew.
      if (call.worker !== undefined || call.cancelReason !== undefined) continue;
      if (!worker.hosts.get(call.request.agent)?.tools.has(call.request.tool)) continue;
      this.#deliver(call, worker);
    }
  }

  /** A worker went away: its unanswered calls go to another worker hosting the tool. */
  onWorkerGone(worker: ConnectedWorker): void {
    for (const call of this.#pending.values()) {
      if (call.worker !== worker) continue;
      call.worker = undefined;
      if (call.cancelReason !== undefined) continue; // waits for the worker to come back and answer
      const next = this.#registry.pickForTool(call.request.agent, call.request.tool);
      if (next) {
        this.#metrics?.hostedCalls.inc({ event: "redelivered" });
        this.#deliver(call, next);
      } else {
        this.#logger.info("hosted call waits for a worker", {
          callId: call.request.callId,
          tool: call.request.tool,
        });
      }
    }
    worker.calls.clear();
  }

  /** Settles every pending call as failed (the server is shutting down). */
  close(): void {
    this.#closed = true;
    for (const [callId, call] of [...this.#pending]) {
      this.#settle(callId, failed("unavailable", ModelSentences.shutDown(call.request.tool)));
    }
  }

  /** A `hosted.hold`: the runner decides; the worker hears the answer for the attempt it named. */
  #hold(worker: ConnectedWorker, callId: string, attempt: number | undefined): void {
    const call = this.#pending.get(callId);
    const named = attempt ?? call?.attempt ?? 1;
    let answer: { accepted: boolean; reason?: string };
    if (!call) answer = { accepted: false, reason: this.#settled.has(callId) ? "settled" : "unknown_call" };
    else if (call.worker?.id !== worker.id || named !== call.attempt)
      answer = { accepted: false, reason: "stale_attempt" };
    else answer = call.handlers.hold(named);
    worker.send({
      type: "hosted.hold.ack",
      callId,
      attempt: named,
      accepted: answer.accepted,
      ...(answer.reason === undefined ? {} : { reason: answer.reason }),
    });
  }

  /**
   * A `hosted.approval` (a conditional approval's `when` said yes): the runner asks the user; the
   * worker hears how it ended, for the attempt it named. A worker that has gone since gets
   * nothing: the call's next delivery asks again and gets the same question's outcome.
   */
  async #approval(worker: ConnectedWorker, callId: string, attempt: number): Promise<void> {
    const call = this.#pending.get(callId);
    let answer: { outcome: "allowed" | "declined" | "expired" | "cancelled"; reason?: string };
    if (!call)
      answer = { outcome: "cancelled", reason: this.#settled.has(callId) ? "settled" : "unknown_call" };
    else if (call.worker?.id !== worker.id || attempt !== call.attempt)
      answer = { outcome: "cancelled", reason: "stale_attempt" };
    else
      answer = (await call.handlers.approval?.(attempt)) ?? { outcome: "cancelled", reason: "unknown_call" };
    worker.send({
      type: "hosted.approval.ack",
      callId,
      attempt,
      outcome: answer.outcome,
      ...(answer.reason === undefined ? {} : { reason: answer.reason }),
    });
  }

  #deliver(call: PendingCall, worker: ConnectedWorker): void {
    call.attempt++;
    call.worker = worker;
    worker.calls.add(call.request.callId);
    const now = Date.now();
    worker.lastGivenAt = now;
    const { request } = call;
    const timeoutMs = Math.max(1, call.deadline - now);
    const frame: HostedCallFrame = {
      type: "hosted.call",
      callId: request.callId,
      attempt: call.attempt,
      agent: request.agent,
      sessionId: request.sessionId,
      tool: request.tool,
      arguments: request.arguments,
      user: request.user,
      conversation: request.conversation,
      timeoutMs,
    };
    const fitted = worker.conversations
      ? worker.conversations.fit(frame, worker.maxFrameBytes)
      : fitHostedCall(frame, worker.maxFrameBytes);
    if (!fitted.ok) {
      // Sending it would close the worker's socket and deliver it again, forever: fail it once.
      this.#logger.warn("hosted call too large for its worker; the call fails", {
        callId: request.callId,
        worker: worker.id,
        bytes: fitted.bytes,
        limit: worker.maxFrameBytes,
      });
      const text = ModelSentences.callTooLarge(request.tool, fitted.bytes, worker.maxFrameBytes);
      this.#settle(request.callId, failed("call_too_large", text));
      return;
    }
    this.#metrics?.countOffered();
    worker.send(fitted.frame, fitted.text);
    call.handlers.attempt(call.attempt);
  }

  #settle(callId: string, result: ToolResult): void {
    const call = this.#pending.get(callId);
    if (!call) return;
    this.#pending.delete(callId);
    clearTimeout(call.cancelTimer);
    call.worker?.calls.delete(callId);
    this.#settled.set(callId, true);
    call.resolve(result);
  }
}

function failed(code: string, text: string): ToolResult {
  return { outcome: "failed", content: { text, images: [] }, error: { code, message: text }, held: false };
}
