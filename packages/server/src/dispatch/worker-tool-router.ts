import type { ToolResult, ToolSpec, WorkerToServerFrame } from "@patchbay/protocol";
import { RecentMap } from "@patchbay/tools";
import type { HostedToolHandlers, HostedToolRequest, HostedToolRouter } from "../dispatch-seams";
import { type Logger, silentLogger } from "../logger";
import type { DispatchMetrics } from "./dispatch-metrics";
import { fitHostedCall } from "./fit-hosted-call";
import type { ConnectedWorker, WorkerRegistry } from "./worker-registry";

interface PendingCall {
  request: HostedToolRequest;
  handlers: HostedToolHandlers;
  attempt: number;
  /** The worker socket the latest delivery went to; undefined while waiting for one to connect. */
  worker: ConnectedWorker | undefined;
  deadline: number;
  timeoutMs: number;
  timer: ReturnType<typeof setTimeout>;
  resolve: (result: ToolResult) => void;
}

/** Calls kept after they settle, so a second result for one of them is recognized and dropped. */
const SETTLED_MEMORY = 10_000;

/**
 * Options of {@link WorkerToolRouter}.
 *
 * @example
 * ```ts
 * new WorkerToolRouter({ registry, logger });
 * ```
 */
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
 * or to the first one when it comes back, for as long as the call's timeout allows. The first
 * result settles the call; any later one is dropped. Workers key side effects on the call id, so
 * a call that ran partly on a worker that died is not done twice.
 *
 * @example
 * ```ts
 * const result = await router.call(request, { progress, say, hold, attempt });
 * ```
 */
export class WorkerToolRouter implements HostedToolRouter {
  readonly #registry: WorkerRegistry;
  readonly #metrics: DispatchMetrics | undefined;
  /** The counter of every delivery, bound once: a label lookup per call hashes the labels. */
  readonly #offered: { inc(): void } | undefined;
  readonly #logger: Logger;
  readonly #pending = new Map<string, PendingCall>();
  readonly #settled = new RecentMap<true>(SETTLED_MEMORY);
  #closed = false;

  constructor(options: WorkerToolRouterOptions) {
    this.#registry = options.registry;
    this.#metrics = options.metrics;
    this.#offered = options.metrics?.hostedCalls.labels({ event: "offered" });
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

  call(request: HostedToolRequest, handlers: HostedToolHandlers): Promise<ToolResult> {
    if (this.#closed) {
      return Promise.resolve(failed("unavailable", "The server is shutting down; the tool did not run."));
    }
    const known = this.#pending.get(request.callId);
    if (known) {
      // The turn loop asked again for a call that still runs (a resumed turn): join it.
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
      return Promise.resolve(
        failed("no_worker", `No worker hosting ${request.tool} is connected, so the tool did not run.`),
      );
    }
    // The longest timeout any hosting worker offered; the agent's default when none did.
    const timeoutMs = this.#registry.toolTimeoutMs(request.agent, request.tool) ?? request.defaultTimeoutMs;
    return new Promise<ToolResult>((resolve) => {
      const call: PendingCall = {
        request,
        handlers,
        attempt: 0,
        worker: undefined,
        deadline: Date.now() + timeoutMs,
        timeoutMs,
        timer: setTimeout(() => this.#timeOut(request.callId), timeoutMs),
        resolve,
      };
      this.#pending.set(request.callId, call);
      this.#deliver(call, worker);
    });
  }

  cancel(callId: string, reason: "interrupted" | "timed_out" | "session_closed"): void {
    const call = this.#pending.get(callId);
    if (!call) return;
    call.worker?.send({ type: "hosted.cancel", callId, reason });
    const text =
      reason === "interrupted"
        ? `The call to ${call.request.tool} was cancelled: the user interrupted.`
        : reason === "timed_out"
          ? `The call to ${call.request.tool} timed out.`
          : `The call to ${call.request.tool} was cancelled: the session closed.`;
    this.#settle(callId, {
      outcome: reason === "timed_out" ? "timed_out" : "cancelled",
      content: { text, images: [] },
      error: { code: reason === "timed_out" ? "timed_out" : "cancelled", message: text },
      held: false,
    });
  }

  /** A worker's frame about a hosted call: progress, say, hold, result. */
  onFrame(worker: ConnectedWorker, frame: WorkerToServerFrame): void {
    switch (frame.type) {
      case "hosted.result": {
        worker.calls.delete(frame.callId);
        if (!this.#pending.has(frame.callId)) {
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
        this.#pending.get(frame.callId)?.handlers.hold();
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
      if (call.worker === undefined || call.worker.id === worker.id) call.worker = worker;
    }
    for (const call of this.#pending.values()) {
      if (call.worker !== undefined) continue;
      if (!worker.hosts.get(call.request.agent)?.tools.has(call.request.tool)) continue;
      this.#deliver(call, worker);
    }
  }

  /** A worker went away: its unanswered calls go to another worker hosting the tool. */
  onWorkerGone(worker: ConnectedWorker): void {
    for (const call of this.#pending.values()) {
      if (call.worker !== worker) continue;
      call.worker = undefined;
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
    for (const callId of [...this.#pending.keys()]) {
      this.#settle(callId, failed("unavailable", "The server shut down before the tool answered."));
    }
  }

  #deliver(call: PendingCall, worker: ConnectedWorker): void {
    call.attempt++;
    call.worker = worker;
    worker.calls.add(call.request.callId);
    worker.lastGivenAt = Date.now();
    const { request } = call;
    const timeoutMs = Math.max(1, call.deadline - Date.now());
    const fitted = fitHostedCall(
      {
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
      },
      worker.maxFrameBytes,
    );
    if (!fitted.ok) {
      // Sending it would close the worker's socket and deliver it again, forever: fail it once.
      this.#logger.warn("hosted call too large for its worker; the call fails", {
        callId: request.callId,
        worker: worker.id,
        bytes: fitted.bytes,
        limit: worker.maxFrameBytes,
      });
      const text =
        `The call to ${request.tool} could not be delivered: its arguments take ${fitted.bytes} bytes, ` +
        `more than the ${worker.maxFrameBytes} bytes its worker accepts in one frame.`;
      this.#settle(request.callId, failed("call_too_large", text));
      return;
    }
    this.#offered?.inc();
    worker.send(fitted.frame, fitted.text);
    call.handlers.attempt(call.attempt);
  }

  #timeOut(callId: string): void {
    const call = this.#pending.get(callId);
    if (!call) return;
    this.#metrics?.hostedCalls.inc({ event: "timed_out" });
    call.worker?.send({ type: "hosted.cancel", callId, reason: "timed_out" });
    const text =
      call.worker === undefined
        ? `No worker hosting ${call.request.tool} answered within ${call.timeoutMs} ms.`
        : `The tool ${call.request.tool} did not answer within ${call.timeoutMs} ms.`;
    this.#settle(callId, {
      outcome: "timed_out",
      content: { text, images: [] },
      error: { code: "timed_out", message: text },
      held: false,
    });
  }

  #settle(callId: string, result: ToolResult): void {
    const call = this.#pending.get(callId);
    if (!call) return;
    this.#pending.delete(callId);
    clearTimeout(call.timer);
    call.worker?.calls.delete(callId);
    this.#settled.set(callId, true);
    call.resolve(result);
  }
}

function failed(code: string, text: string): ToolResult {
  return { outcome: "failed", content: { text, images: [] }, error: { code, message: text }, held: false };
}
