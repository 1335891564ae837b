import type { JsonObject, ToolResult, ToolSpec, User } from "@patchbay/protocol";
import type { HostedToolHandlers } from "./dispatch-seams";
import type { Logger } from "./logger";
import type { SessionRuntime } from "./session-runtime";
import type { PendingToolCallRecord } from "./store";
import type { RoutedToolCall, ToolBackend } from "./tool-location";
import { failedResult } from "./tool-results";

/**
 * A call of a tool that runs in the page holding the session.
 *
 * @example
 * ```ts
 * const call: PageToolCall = { callId: "call_1", responseId: "r_1", name: "get_location", arguments: {}, timeoutMs: 30_000, interruptible: true, user: { id: "u_1" } };
 * ```
 */
export interface PageToolCall {
  callId: string;
  responseId: string;
  name: string;
  arguments: JsonObject;
  timeoutMs: number;
  interruptible: boolean;
  user: User;
}

interface Pending {
  call: PageToolCall;
  attempt: number;
  /** The delivery (attempt) whose free answer was claimed, 0 for none (see claimAnswer). */
  answerClaimed: number;
  held: boolean;
  deadline: number;
  createdAt: number;
  timer: ReturnType<typeof setTimeout>;
  handlers: HostedToolHandlers;
  resolve: (result: ToolResult) => void;
}

/**
 * Sends page tool calls to the session's sockets (`tool.call`) and waits for `tool.result`.
 * A call fails at once when no attached page brought the tool; otherwise it waits until the
 * result, its timeout (`tool.cancel { reason: "timed_out" }`), or a cancel. Calls still waiting
 * when a page resumes are delivered again with the same id and a higher attempt. Results for
 * calls it does not wait for (unknown, finished, timed out) are dropped and logged.
 *
 * @example
 * ```ts
 * const result = await pages.call(call, { progress, say, hold, attempt });
 * ```
 */
export class PageToolRouter implements ToolBackend {
  readonly location = "page" as const;
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly runtime: SessionRuntime,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  specs(): ToolSpec[] {
    return this.runtime.pageToolSpecs();
  }

  /** Whether the session has this page tool, attached right now or not. */
  has(name: string): boolean {
    return this.runtime.pageToolSpecs().some((spec) => spec.name === name);
  }

  run(call: RoutedToolCall, handlers: HostedToolHandlers): Promise<ToolResult> {
    return this.call(
      {
        callId: call.callId,
        responseId: call.responseId,
        name: call.spec.name,
        arguments: call.arguments,
        timeoutMs: call.spec.timeoutMs ?? this.runtime.agent.pageToolTimeoutMs,
        interruptible: call.spec.interruptible ?? false,
        user: call.user,
      },
      handlers,
    );
  }

  interrupt(callId: string): boolean {
    const pending = this.pending.get(callId);
    if (!pending || pending.held || !pending.call.interruptible) return false;
    return this.cancel(callId, "interrupted");
  }

  /** Runs a call in the page; never rejects. */
  call(call: PageToolCall, handlers: HostedToolHandlers): Promise<ToolResult> {
    if (!this.runtime.hasPageTool(call.name)) {
      return Promise.resolve(
        failedResult(
          "failed",
          "no_page",
          `The tool "${call.name}" runs in the user's page, and no page is connected to this session right now.`,
        ),
      );
    }
    return new Promise<ToolResult>((resolve) => {
      const createdAt = this.now();
      const pending: Pending = {
        call,
        attempt: 1,
        answerClaimed: 0,
        held: false,
        createdAt,
        deadline: createdAt + call.timeoutMs,
        handlers,
        resolve,
        timer: setTimeout(() => this.timeOut(call.callId), call.timeoutMs),
      };
      this.pending.set(call.callId, pending);
      this.deliver(pending).catch((error) => {
        this.logger.error("page tool call could not be delivered", { callId: call.callId, error });
        this.settle(call.callId, failedResult("failed", "internal", "The tool call could not be delivered."));
      });
    });
  }

  /** A `tool.result` from a page. Returns whether it was used. */
  result(callId: string, attempt: number, result: ToolResult): boolean {
    const pending = this.pending.get(callId);
    if (!pending) {
      this.logger.warn("tool result dropped: the call is unknown, finished or timed out", {
        sessionId: this.runtime.id,
        callId,
        attempt,
      });
      return false;
    }
    if (attempt > pending.attempt) {
      this.logger.warn("tool result dropped: attempt was never delivered", {
        sessionId: this.runtime.id,
        callId,
        attempt,
        delivered: pending.attempt,
      });
      return false;
    }
    const final: ToolResult = pending.held && result.held === undefined ? { ...result, held: true } : result;
    this.settle(callId, final);
    return true;
  }

  /** `tool.progress` from a page; dropped when the call is not waiting. */
  progress(callId: string, text: string): void {
    this.pending.get(callId)?.handlers.progress(text);
  }

  say(callId: string, text: string): void {
    this.pending.get(callId)?.handlers.say(text);
  }

  hold(callId: string): void {
    const pending = this.pending.get(callId);
    if (!pending || pending.held) return;
    pending.held = true;
    pending.handlers.hold();
  }

  /**
   * Whether a result for this call would be one the router waits for, and the first asked about
   * since the call's latest delivery: a socket lets one answer per delivery through its rate
   * limit for free, and a page repeating a result pays for the repeats.
   */
  claimAnswer(callId: string, attempt: number): boolean {
    const pending = this.pending.get(callId);
    if (!pending || attempt > pending.attempt || pending.answerClaimed === pending.attempt) return false;
    pending.answerClaimed = pending.attempt;
    return true;
  }

  /** Whether a call waits and holds (an interrupt no longer cancels it). */
  isHeld(callId: string): boolean {
    return this.pending.get(callId)?.held ?? false;
  }

  /**
   * Cancels a waiting call: the page is told (`tool.cancel`) and the call ends as `cancelled`.
   * Returns whether the call was waiting.
   */
  cancel(callId: string, reason: "interrupted" | "session_closed"): boolean {
    const pending = this.pending.get(callId);
    if (!pending) return false;
    this.settle(
      callId,
      failedResult(
        "cancelled",
        "cancelled",
        reason === "interrupted"
          ? `The call of "${pending.call.name}" was cancelled: the user interrupted.`
          : `The call of "${pending.call.name}" was cancelled: the session closed.`,
        pending.held,
      ),
    );
    void this.runtime.append({ type: "tool.cancel", callId, reason }).catch(() => undefined);
    return true;
  }

  /** Delivers every waiting call again with a higher attempt (a page resumed the session). */
  async redeliver(): Promise<void> {
    for (const pending of [...this.pending.values()]) {
      if (!this.runtime.hasPageTool(pending.call.name)) continue;
      pending.attempt += 1;
      pending.handlers.attempt(pending.attempt);
      await this.deliver(pending);
    }
  }

  /** Ids of the calls waiting for a page. */
  waiting(): string[] {
    return [...this.pending.keys()];
  }

  private async deliver(pending: Pending): Promise<void> {
    const { call } = pending;
    const record: PendingToolCallRecord = {
      callId: call.callId,
      sessionId: this.runtime.id,
      responseId: call.responseId,
      name: call.name,
      arguments: call.arguments,
      location: "page",
      attempt: pending.attempt,
      deadline: pending.deadline,
      createdAt: pending.createdAt,
    };
    await this.runtime.commit({
      pendingCalls: [record],
      events: [
        {
          type: "tool.call",
          call: { id: call.callId, name: call.name, arguments: call.arguments },
          attempt: pending.attempt,
          timeoutMs: Math.max(1, pending.deadline - this.now()),
          user: call.user,
        },
      ],
    });
  }

  private timeOut(callId: string): void {
    const pending = this.pending.get(callId);
    if (!pending) return;
    this.settle(
      callId,
      failedResult(
        "timed_out",
        "timed_out",
        `The tool "${pending.call.name}" did not answer within ${pending.call.timeoutMs} ms.`,
        pending.held,
      ),
    );
    void this.runtime.append({ type: "tool.cancel", callId, reason: "timed_out" }).catch(() => undefined);
  }

  private settle(callId: string, result: ToolResult): void {
    const pending = this.pending.get(callId);
    if (!pending) return;
    this.pending.delete(callId);
    clearTimeout(pending.timer);
    void this.runtime.settleCall(callId).catch(() => undefined);
    pending.resolve(result);
  }
}
