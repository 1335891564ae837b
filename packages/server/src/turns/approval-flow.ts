import type {
  ApprovalOutcome,
  ApprovalRequest,
  ConversationItem,
  JsonObject,
  ToolApprovalSpec,
} from "@patchbay/protocol";
import { RecentMap } from "@patchbay/protocol/runtime";
import { buildApprovalRequest } from "@patchbay/tools";
import { NotFoundError, ServerError } from "../errors";
import type { SessionLog } from "../sessions/session-log";

/** One question to ask before a tool runs. */
export interface ApprovalQuestion {
  callId: string;
  tool: string;
  approval: ToolApprovalSpec;
  arguments: JsonObject;
  /** Committed together with `approval.requested` (the call's item, now `awaiting_approval`). */
  items?: ConversationItem[];
  /** Aborting it ends the question as `cancelled` (the turn was interrupted). */
  signal?: AbortSignal;
  /** Told the user's reason when they declined with one (it is for the model). */
  onDeclineReason?: (reason: string) => void;
}

interface OpenApproval {
  request: ApprovalRequest;
  settle: (outcome: ApprovalOutcome) => void;
  /** The user's reason for declining, when they gave one. */
  reason?: string;
}

const RECENT_LIMIT = 256;

/**
 * The approvals of one session: asks the page (`approval.requested` with `{argument}`
 * placeholders filled), waits for `approval.decide` or expiry, and records the outcome. A
 * declined, expired or cancelled call never runs.
 */
export class ApprovalFlow {
  // Made on first use: most loaded sessions never ask a question, and an empty Map is not free.
  private openMap: Map<string, OpenApproval> | undefined;
  private recentMap: RecentMap<ApprovalOutcome> | undefined;

  constructor(
    private readonly runtime: SessionLog,
    private readonly options: { defaultExpiresInMs: number; now?: () => number },
  ) {}

  /** Asks the user and resolves with how the question ended. */
  async ask(question: ApprovalQuestion): Promise<ApprovalOutcome> {
    const now = this.options.now?.() ?? Date.now();
    const expiresInMs = question.approval.expiresInMs ?? this.options.defaultExpiresInMs;
    const request = buildApprovalRequest({
      callId: question.callId,
      tool: question.tool,
      approval: question.approval,
      arguments: question.arguments,
      now,
      defaultExpiresInMs: this.options.defaultExpiresInMs,
    });
    if (question.signal?.aborted) return "cancelled";

    let settle!: (outcome: ApprovalOutcome) => void;
    const decided = new Promise<ApprovalOutcome>((resolve) => {
      settle = resolve;
    });
    const entry: OpenApproval = { request, settle: (outcome) => settle(outcome) };
    this.openMap ??= new Map();
    this.openMap.set(request.id, entry);
    const timer = setTimeout(() => this.finish(request.id, "expired"), expiresInMs);
    const onAbort = () => this.finish(request.id, "cancelled");
    question.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await this.runtime.commit({
        approvals: [{ sessionId: this.runtime.id, request }],
        items: question.items,
        // The call's item changes to `awaiting_approval` in the same commit; pages render the
        // step from conversation updates, so they must hear of it with the request.
        events: [
          ...(question.items ?? []).map((item) => ({ type: "conversation.updated" as const, item })),
          { type: "approval.requested", approval: request },
        ],
      });
      const outcome = await decided;
      if (outcome === "declined" && entry.reason !== undefined) question.onDeclineReason?.(entry.reason);
      return outcome;
    } finally {
      clearTimeout(timer);
      question.signal?.removeEventListener("abort", onAbort);
      this.openMap?.delete(request.id);
    }
  }

  /**
   * Records the user's answer. Throws `not_found` for an id this session never asked and
   * `conflict` for one already answered, expired or cancelled.
   */
  decide(approvalId: string, allowed: boolean, reason?: string): void {
    const entry = this.openMap?.get(approvalId);
    if (!entry) {
      const outcome = this.recentMap?.get(approvalId);
      if (outcome !== undefined) {
        throw new ServerError("conflict", `approval ${approvalId} is already resolved (${outcome})`, {
          path: "approvalId",
        });
      }
      throw new NotFoundError("approval", approvalId);
    }
    if (!allowed && reason !== undefined) entry.reason = reason;
    this.finish(approvalId, allowed ? "allowed" : "declined");
  }

  /** How a recently ended approval ended (kept for the last few hundred), or undefined. */
  endedAs(approvalId: string): ApprovalOutcome | undefined {
    return this.recentMap?.get(approvalId);
  }

  /** The questions waiting for an answer. */
  pending(): ApprovalRequest[] {
    return this.openMap ? [...this.openMap.values()].map((entry) => entry.request) : [];
  }

  /** Ends every open question as `cancelled` (session closing). */
  cancelAll(): void {
    if (!this.openMap) return;
    for (const id of [...this.openMap.keys()]) this.finish(id, "cancelled");
  }

  private finish(approvalId: string, outcome: ApprovalOutcome): void {
    const entry = this.openMap?.get(approvalId);
    if (!entry) return;
    this.openMap!.delete(approvalId);
    this.remember(approvalId, outcome);
    const { request } = entry;
    // The outcome is recorded before the caller goes on, so a replay never shows a call running
    // whose approval still looks open.
    this.runtime
      .commit({
        approvals: [{ sessionId: this.runtime.id, request, outcome, decidedAt: Date.now() }],
        events: [{ type: "approval.resolved", approvalId, callId: request.callId, outcome }],
      })
      .then(
        () => entry.settle(outcome),
        () => entry.settle(outcome),
      );
  }

  private remember(approvalId: string, outcome: ApprovalOutcome): void {
    this.recentMap ??= new RecentMap<ApprovalOutcome>(RECENT_LIMIT);
    this.recentMap.set(approvalId, outcome);
  }
}
