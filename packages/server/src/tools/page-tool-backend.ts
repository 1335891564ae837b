import type { JsonObject, ToolResult, ToolSpec, User } from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import { ModelSentences } from "@patchbay/tools";
import type {
  ApprovalAnswer,
  CancelReason,
  HoldAnswer,
  ToolCallHandlers,
} from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { SessionLog } from "../sessions/session-log";
import { failedResult } from "../turns/tool-results";
import type { RoutedToolCall, ToolBackend } from "./tool-backend";

/** A call of a tool that runs in the page holding the session. */
export interface PageToolCall {
  callId: string;
  responseId: string;
  name: string;
  arguments: JsonObject;
  /** The runner's timeout for the call; each delivery tells the page the time left. */
  timeoutMs: number;
  user: User;
}

interface Pending {
  call: PageToolCall;
  attempt: number;
  /** The delivery (attempt) whose free answer was claimed, 0 for none (see claimAnswer). */
  answerClaimed: number;
  deadline: number;
  handlers: ToolCallHandlers;
  resolve: (result: ToolResult) => void;
  /** Set once a cancel was asked: the page's answer settles the call, or this bound does. */
  cancelTimer?: ReturnType<typeof setTimeout>;
}

/** After a cancel, how long a call waits for the page's answer before it is given up. */
const CANCEL_ANSWER_WINDOW_MS = 120_000;
/** Calls kept after they settle, so a hold or result for one of them is told apart from nonsense. */
const SETTLED_MEMORY = 1_000;

/**
 * Sends page tool calls to the session's sockets (`tool.call`) and waits for `tool.result`.
 * A call fails at once when no attached page brought the tool; otherwise it waits for the page's
 * result for the latest delivery. Calls still waiting when a page resumes are delivered again
 * with the same id and a higher attempt, and results for an older attempt are dropped. It decides
 * nothing itself: holds go to the runner (`handlers.hold`) and their answer back to the page as
 * `tool.hold.ack`; `cancel` sends `tool.cancel` and the page's answer settles the call.
 */
export class PageToolBackend implements ToolBackend {
  readonly location = "page" as const;
  readonly remote = true;
  // Made on first use: most loaded sessions never call a page tool.
  private pendingMap: Map<string, Pending> | undefined;
  private settledMap: RecentMap<true> | undefined;

  constructor(
    private readonly runtime: SessionLog,
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

  timeoutCeilingMs(): number {
    return this.runtime.agent.pageToolTimeoutMs;
  }

  /** Runs a call in the page; never rejects. */
  run(routed: RoutedToolCall, handlers: ToolCallHandlers): Promise<ToolResult> {
    const call: PageToolCall = {
      callId: routed.callId,
      responseId: routed.responseId,
      name: routed.spec.name,
      arguments: routed.arguments as JsonObject,
      timeoutMs: routed.timeoutMs,
      user: routed.user,
    };
    if (!this.runtime.hasPageTool(call.name)) {
      return Promise.resolve(failedResult("failed", "no_page", ModelSentences.noPage(call.name)));
    }
    return new Promise<ToolResult>((resolve) => {
      const pending: Pending = {
        call,
        attempt: 1,
        answerClaimed: 0,
        deadline: this.now() + call.timeoutMs,
        handlers,
        resolve,
      };
      this.pendingMap ??= new Map();
      this.pendingMap.set(call.callId, pending);
      this.deliver(pending).catch((error) => {
        this.logger.error("page tool call could not be delivered", { callId: call.callId, error });
        this.settle(call.callId, failedResult("failed", "internal", ModelSentences.undelivered(call.name)));
      });
    });
  }

  /** A `tool.result` from a page. Returns whether it was used. */
  result(callId: string, attempt: number, result: ToolResult): boolean {
    const pending = this.pendingMap?.get(callId);
    if (!pending) {
      this.logger.warn(
        this.settledMap?.has(callId)
          ? "tool result dropped: the call already ended"
          : "tool result dropped: the call is unknown",
        { sessionId: this.runtime.id, callId, attempt },
      );
      return false;
    }
    if (attempt !== pending.attempt) {
      this.logger.warn(
        attempt > pending.attempt
          ? "tool result dropped: attempt was never delivered"
          : "tool result dropped: the call was delivered again since",
        { sessionId: this.runtime.id, callId, attempt, delivered: pending.attempt },
      );
      return false;
    }
    this.settle(callId, result);
    return true;
  }

  /** `tool.progress` from a page; dropped when the call is not waiting. */
  progress(callId: string, text: string): void {
    this.pendingMap?.get(callId)?.handlers.progress(text);
  }

  say(callId: string, text: string): void {
    this.pendingMap?.get(callId)?.handlers.say(text);
  }

  /**
   * A `tool.hold` from a page: the runner's answer, with the attempt it is for (the latest
   * delivery when the page named none), for the `tool.hold.ack` frame.
   */
  hold(callId: string, attempt: number | undefined): HoldAnswer & { attempt: number } {
    const pending = this.pendingMap?.get(callId);
    if (!pending) {
      return {
        accepted: false,
        reason: this.settledMap?.has(callId) ? "settled" : "unknown_call",
        attempt: attempt ?? 1,
      };
    }
    const named = attempt ?? pending.attempt;
    if (named !== pending.attempt) return { accepted: false, reason: "stale_attempt", attempt: named };
    return { ...pending.handlers.hold(named), attempt: named };
  }

  /**
   * A `tool.approval` from a page (a conditional approval's `when` said yes): the runner's
   * answer once the question ended, with the attempt it is for, for the `tool.approval.ack` frame.
   */
  async approval(callId: string, attempt: number): Promise<ApprovalAnswer & { attempt: number }> {
    const pending = this.pendingMap?.get(callId);
    if (!pending) {
      return {
        outcome: "cancelled",
        reason: this.settledMap?.has(callId) ? "settled" : "unknown_call",
        attempt,
      };
    }
    if (attempt !== pending.attempt) return { outcome: "cancelled", reason: "stale_attempt", attempt };
    const answer = (await pending.handlers.approval?.(attempt)) ?? {
      outcome: "cancelled",
      reason: "unknown_call",
    };
    return { ...answer, attempt };
  }

  /**
   * Whether a result for this call would be one the router waits for, and the first asked about
   * since the call's latest delivery: a socket lets one answer per delivery through its rate
   * limit for free, and a page repeating a result pays for the repeats.
   */
  claimAnswer(callId: string, attempt: number): boolean {
    const pending = this.pendingMap?.get(callId);
    if (!pending || attempt !== pending.attempt || pending.answerClaimed === pending.attempt) return false;
    pending.answerClaimed = pending.attempt;
    return true;
  }

  /**
   * Asks the page to stop a call (`tool.cancel`, naming the latest delivery). The page answers
   * with the call's `tool.result`, which settles it; a call the page never answers is given up
   * after a bound (the runner has told the model by then).
   */
  cancel(callId: string, reason: CancelReason): void {
    const pending = this.pendingMap?.get(callId);
    if (!pending || pending.cancelTimer) return;
    pending.cancelTimer = setTimeout(
      () =>
        this.settle(callId, failedResult("cancelled", "unanswered", "the page did not answer the cancel")),
      CANCEL_ANSWER_WINDOW_MS,
    );
    pending.cancelTimer.unref?.();
    void this.runtime
      .append({ type: "tool.cancel", callId, reason, attempt: pending.attempt })
      .catch(() => undefined);
  }

  /**
   * Delivers every waiting call again with a higher attempt (a page resumed the session). A call
   * being cancelled is not delivered again: its cancel is in the replayed events.
   */
  async redeliver(): Promise<void> {
    for (const pending of [...(this.pendingMap?.values() ?? [])]) {
      if (pending.cancelTimer || !this.runtime.hasPageTool(pending.call.name)) continue;
      pending.attempt += 1;
      pending.handlers.attempt(pending.attempt);
      await this.deliver(pending);
    }
  }

  /** Ids of the calls waiting for a page. */
  waiting(): string[] {
    return [...(this.pendingMap?.keys() ?? [])];
  }

  /**
   * Commits the call's `tool.call` event, which the session's sockets get once it is in the log:
   * that event is the call's durable record (no row of its own in the store's pending calls,
   * which nothing read back but recovery, to clear them). After a crash the call's conversation
   * item, in the log before any call is sent, is what recovery ends as `server_restart`.
   */
  private deliver(pending: Pending): Promise<unknown> {
    const { call } = pending;
    return this.runtime.commit({
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

  private settle(callId: string, result: ToolResult): void {
    const pending = this.pendingMap?.get(callId);
    if (!pending) return;
    this.pendingMap!.delete(callId);
    this.settledMap ??= new RecentMap<true>(SETTLED_MEMORY);
    this.settledMap.set(callId, true);
    clearTimeout(pending.cancelTimer);
    pending.resolve(result);
  }
}
