// One class owns every rule of a tool call (timeout, hold, interrupt, cancel grace, late
// results), on purpose: split across files, the rules drifted apart before. Hence the length.

import type { ReasoningPart } from "@patchbay/models";
import type {
  JsonObject,
  NormalizedToolCall,
  ToolCallItem,
  ToolCallStatus,
  ToolOutcome,
  ToolResult,
  ToolSpec,
  User,
} from "@patchbay/protocol";

import { interruptCancels, ModelSentences, validateArguments, type WithdrawReason } from "@patchbay/tools";
import { nanoid } from "nanoid";
import type {
  ApprovalAnswer,
  CancelReason,
  HoldAnswer,
  ToolCallHandlers,
} from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import type { SessionLog } from "../sessions/session-log";
import type { EventDraft } from "../store/store";
import type { ToolBackend } from "../tools/tool-backend";
import type { ApprovalFlow } from "./approval-flow";
import { ProgressCoalescer } from "./progress-coalescer";
import { attachReasoning } from "./reasoning-state";
import { failedResult, withoutCredentials } from "./tool-results";

const STATUS_BY_OUTCOME: Record<ToolOutcome, ToolCallStatus> = {
  completed: "completed",
  failed: "failed",
  invalid_arguments: "failed",
  unknown_tool: "failed",
  timed_out: "timed_out",
  cancelled: "cancelled",
  declined: "declined",
  approval_expired: "declined",
};

/** A call's timeout when its tool sets none, wherever it runs. */
export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/**
 * The timeout of one call: the tool's `timeoutMs`, else 30 s, never above the ceiling of the
 * place it runs (a worker's `toolTimeoutMs`, the agent's `*_tool_timeout_ms`).
 */
export function callTimeoutMs(spec: Pick<ToolSpec, "timeoutMs">, ceilingMs: number): number {
  return Math.min(spec.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS, ceilingMs);
}

/** What a {@link ToolCallRunner} needs from its session. */
export interface ToolCallRunnerOptions {
  runtime: SessionLog;
  approvals: ApprovalFlow;
  /** In order of precedence: the first backend that has a tool runs it. */
  backends: ToolBackend[];
  user: User;
  responseId: string;
  /** Aborted when the turn is interrupted. */
  signal: AbortSignal;
  maxConcurrent: number;
  progressIntervalMs: number;
  logger: Logger;
  metrics: ServerMetrics;
}

interface Slot {
  item: ToolCallItem;
  backend?: ToolBackend;
  spec?: ToolSpec;
  started: boolean;
  /** The model was told how the call ended (its item has a final status). */
  settled: boolean;
  /** A cancel was asked of the backend for this reason; holds are refused from then on. */
  cancelling?: CancelReason;
  timer?: ReturnType<typeof setTimeout>;
  grace?: ReturnType<typeof setTimeout>;
  /** The call's timeout, kept to start it again after a conditional approval. */
  timeoutMs?: number;
  /** The call holds one of the session's concurrency slots (given back while its question waits). */
  holdsCapacity?: boolean;
  /** The conditional approval the call's host asked for: every delivery gets this one question. */
  approval?: Promise<ApprovalAnswer>;
  /** Withdraws the conditional question when the call ends another way. */
  question?: AbortController;
  /** The question ended the call (declined, expired, withdrawn): the host's answer after it is no news. */
  endedByApproval?: boolean;
  /** Resolves when the call is settled, whichever way. */
  done?: () => void;
  /** A call a previous owner of the session sent (see {@link ToolCallRunner.resume}). */
  resumed?: boolean;
}

/**
 * Runs the tool calls of one model reply and owns every rule of a call, for every place a tool
 * runs (page, worker, server process): each is checked (known tool, arguments fit its schema,
 * once), asked about (approval), routed to its backend under the session's concurrency limit
 * and its timeout (the tool's `timeoutMs` or 30 s, under the backend's ceiling), and its
 * conversation item kept current (status, progress, held, attempt, result). It alone decides:
 *
 * - a hold is accepted unless a cancel of the call is under way, the call ended, or it names an
 *   older delivery;
 * - an interrupt cancels a running call only when its tool is interruptible and it is not held
 *   (`interruptCancels`); calls not yet started are withdrawn;
 * - a cancel is a request: for a page or worker the model is told nothing until the far side
 *   answers (cancelled, or its real result), or the agent's `tool_cancel_grace_ms` passed (then
 *   `cancel_unconfirmed`);
 * - the timeout ends the call `timed_out` at once and asks the backend to stop it, held or not;
 * - a result that arrives after the call ended is recorded as the item's `lateResult`.
 */
export class ToolCallRunner {
  private readonly slots = new Map<string, Slot>();
  private readonly progress: ProgressCoalescer;
  private active = 0;
  private readonly waiters: (() => void)[] = [];
  /**
   * The session is closing (shutdown, deletion): the interrupt that follows cancels with
   * `session_closed`, and calls withdrawn from now on say so rather than blame the user.
   */
  closing = false;
  /** The calls' pending items (and what the turn wrote before them) are in the log. */
  private recorded: Promise<unknown> = Promise.resolve();
  /** The final items' commits, not waited for (see {@link takeWrites}). */
  private settledWrites: Promise<void>[] = [];

  constructor(private readonly options: ToolCallRunnerOptions) {
    this.progress = new ProgressCoalescer(options.progressIntervalMs, (callId, text) =>
      this.update(callId, { progress: text }, [{ type: "tool.progress", callId, text }]),
    );
    options.signal.addEventListener("abort", () => this.interrupt(), { once: true });
  }

  /**
   * Adds the calls to the conversation, runs them all, and resolves when every one has ended.
   * Each call gets its own server id here (see {@link serverCallId}); the model's id is kept as
   * the item's `providerCallId`. `written` is what the turn wrote before and did not wait for:
   * no call is sent before it and the calls' pending items are in the log.
   */
  async run(
    modelCalls: NormalizedToolCall[],
    reasoning: readonly ReasoningPart[] = [],
    written: Promise<unknown> = Promise.resolve(),
  ): Promise<ToolCallItem[]> {
    const now = Date.now();
    const calls = modelCalls.map(withServerId);
    const items = calls.map((call): ToolCallItem => {
      const backend = this.backendFor(call.name);
      const spec = backend?.specs().find((s) => s.name === call.name);
      const item: ToolCallItem = {
        type: "tool_call",
        id: call.id,
        providerCallId: call.providerCallId,
        name: call.name,
        arguments: call.arguments,
        status: "pending",
        held: false,
        attempt: 1,
        responseId: this.options.responseId,
        createdAt: now,
      };
      if (backend) item.location = backend.location;
      if (spec?.displayTitle) item.displayTitle = spec.displayTitle;
      this.slots.set(call.id, {
        item,
        started: false,
        settled: false,
        ...(backend ? { backend } : {}),
        ...(spec ? { spec } : {}),
      });
      return item;
    });
    attachReasoning(items, reasoning);
    // Not waited for here: the calls' own first changes (running) join its transaction, and each
    // call waits for it before it is sent (see runOne).
    const pending = this.options.runtime.commit({
      items,
      events: items.map((item) => ({ type: "conversation.updated" as const, item })),
    });
    this.recorded = Promise.all([written, pending]);
    const runs = Promise.all(calls.map((call) => this.runOne(call)));
    // When the record failed, run rejects with that error (and no call was sent).
    runs.catch(() => undefined);
    await this.recorded;
    await runs;
    this.progress.clear();
    return calls.map((call) => this.slots.get(call.id)!.item);
  }

  /**
   * Takes over calls of this turn that a previous owner of the session had sent and never saw
   * end (cluster mode: its node died; docs/cluster.md). Each is delivered again with its own id
   * and the next attempt number (its host keys side effects on the id, so it runs once), under
   * every rule of {@link run} but the approval, which was given before it first ran; its timeout
   * starts anew. Resolves with the calls' final items.
   */
  async resume(items: readonly ToolCallItem[]): Promise<ToolCallItem[]> {
    for (const item of items) {
      const backend = this.backendFor(item.name);
      const spec = backend?.specs().find((s) => s.name === item.name);
      this.slots.set(item.id, {
        item,
        started: false,
        settled: false,
        resumed: true,
        ...(backend ? { backend } : {}),
        ...(spec ? { spec } : {}),
      });
    }
    await Promise.all(
      items.map((item, index) =>
        this.runOne({
          id: item.id,
          index,
          name: item.name,
          arguments: item.arguments,
          rawArguments: JSON.stringify(item.arguments),
        }),
      ),
    );
    this.progress.clear();
    return items.map((item) => this.slots.get(item.id)!.item);
  }

  /**
   * Withdraws calls that are given but not started (the model's reply was cut short), so the
   * conversation shows them and the model learns they did not run.
   */
  async withdraw(
    modelCalls: NormalizedToolCall[],
    reasoning: readonly ReasoningPart[] = [],
    why: WithdrawReason = this.withdrawReason(),
  ): Promise<void> {
    if (modelCalls.length === 0) return;
    const sentence = ModelSentences.withdrawn(why, this.options.runtime.agent.maxToolRounds);
    const now = Date.now();
    const items = modelCalls.map(withServerId).map(
      (call): ToolCallItem => ({
        type: "tool_call",
        id: call.id,
        providerCallId: call.providerCallId,
        name: call.name,
        arguments: call.arguments,
        status: "withdrawn",
        held: false,
        attempt: 1,
        responseId: this.options.responseId,
        createdAt: now,
        result: failedResult("cancelled", "withdrawn", sentence),
      }),
    );
    attachReasoning(items, reasoning);
    await this.options.runtime.commit({
      items,
      events: items.map((item) => ({ type: "conversation.updated" as const, item })),
    });
  }

  /**
   * The session's closing grace is over: every call still running is asked to stop
   * (`session_closed`) and ends `cancelled` at once (`held` kept); there is no one left to wait for.
   */
  close(): void {
    this.closing = true;
    for (const [callId, slot] of this.slots) {
      if (!slot.started || slot.settled || !slot.backend) continue;
      slot.cancelling = "session_closed";
      slot.backend.cancel(callId, "session_closed");
      void this.settle(
        callId,
        failedResult(
          "cancelled",
          "cancelled",
          ModelSentences.cancelled(slot.item.name, "session_closed", slot.item.held),
          slot.item.held,
        ),
      );
    }
  }

  private backendFor(name: string): ToolBackend | undefined {
    return this.options.backends.find((backend) => backend.has(name));
  }

  private async runOne(call: NormalizedToolCall): Promise<void> {
    const slot = this.slots.get(call.id)!;
    const started = Date.now();
    const finish = (result: ToolResult) => this.settle(call.id, result, started);

    if (call.argumentsError !== undefined) {
      return finish(
        failedResult(
          "invalid_arguments",
          "invalid_arguments",
          ModelSentences.unreadableArguments(call.name, call.argumentsError),
        ),
      );
    }
    const { backend, spec } = slot;
    if (!backend || !spec) {
      const names = this.options.backends.flatMap((b) => b.specs().map((s) => s.name));
      return finish(
        failedResult("unknown_tool", "unknown_tool", ModelSentences.unknownTool(call.name, names)),
      );
    }
    // Checked once: by the backend with the tool's own schema when it can, else the JSON Schema.
    const checked = backend.checkArguments
      ? await backend.checkArguments(spec, call.arguments)
      : validateArguments(spec.parameters, call.arguments);
    if (!checked.ok) {
      return finish(
        failedResult(
          "invalid_arguments",
          "invalid_arguments",
          ModelSentences.invalidArguments(call.name, checked.issues),
        ),
      );
    }
    const args = backend.checkArguments ? call.arguments : (checked.value as typeof call.arguments);

    if (this.options.signal.aborted) return this.withdrawSlot(call.id);
    // A conditional approval is decided where the tool runs (its `when`): the host asks through
    // `handlers.approval` once the call reached it (see `askConditional`).
    if (spec.approval && !spec.approval.conditional && !slot.resumed) {
      let declineReason: string | undefined;
      const outcome = await this.options.approvals.ask({
        onDeclineReason: (reason) => {
          declineReason = reason;
        },
        callId: call.id,
        tool: call.name,
        approval: spec.approval,
        arguments: args,
        signal: this.options.signal,
        items: [this.patch(call.id, { status: "awaiting_approval" })],
      });
      if (outcome === "cancelled") return this.withdrawSlot(call.id);
      if (outcome === "declined") {
        return finish(
          failedResult("declined", "declined", ModelSentences.declined(call.name, declineReason)),
        );
      }
      if (outcome === "expired") {
        return finish(
          failedResult("approval_expired", "approval_expired", ModelSentences.approvalExpired(call.name)),
        );
      }
    }

    // The slot is taken after approval: a question waiting for the user holds no capacity.
    await this.acquire();
    slot.holdsCapacity = true;
    try {
      if (this.options.signal.aborted) return this.withdrawSlot(call.id);
      slot.started = true;
      await this.update(call.id, { status: "running" });
      // Durable before sent: the call's pending item (and its running one) are in the log.
      await this.recorded;
      const timeoutMs = callTimeoutMs(spec, backend.timeoutCeilingMs(spec));
      const settled = new Promise<void>((resolve) => {
        slot.done = resolve;
      });
      slot.timeoutMs = timeoutMs;
      slot.timer = setTimeout(() => this.timeOut(call.id, timeoutMs), timeoutMs);
      const handlers: ToolCallHandlers = {
        progress: (text) => this.progress.push(call.id, text),
        say: (text) =>
          void this.options.runtime.append({ type: "tool.say", callId: call.id, text }).catch(() => {}),
        hold: (attempt) => this.hold(call.id, attempt),
        approval: (attempt) => this.approval(call.id, attempt, args),
        // A router reports every delivery, the first one included; the item starts at attempt 1,
        // so only a redelivery is a change worth a transaction.
        attempt: (attempt) => {
          if (attempt !== slot.item.attempt && !slot.settled) void this.update(call.id, { attempt });
        },
      };
      void backend
        .run(
          {
            callId: call.id,
            responseId: this.options.responseId,
            spec,
            arguments: args,
            user: this.options.user,
            timeoutMs,
            ...(slot.resumed ? { attempt: slot.item.attempt + 1 } : {}),
            ...(backend.checkArguments ? { checked: { value: checked.value } } : {}),
          },
          handlers,
        )
        .then(
          (result) => this.answered(call.id, result, started),
          (error: unknown) => {
            this.options.logger.error("tool backend rejected", { callId: call.id, error });
            return this.answered(
              call.id,
              failedResult("failed", "internal", ModelSentences.undelivered(call.name)),
              started,
            );
          },
        );
      await settled;
    } finally {
      if (slot.holdsCapacity) {
        slot.holdsCapacity = false;
        this.release();
      }
    }
  }

  /**
   * The host of a call whose approval is conditional asks the user (its `when` said yes). One
   * question per call, whichever delivery asks; an older delivery than the latest is refused.
   */
  private approval(callId: string, attempt: number | undefined, args: JsonObject): Promise<ApprovalAnswer> {
    const slot = this.slots.get(callId);
    if (!slot) return Promise.resolve({ outcome: "cancelled", reason: "unknown_call" });
    if (slot.approval) return slot.approval;
    if (slot.settled) return Promise.resolve({ outcome: "cancelled", reason: "settled" });
    if (attempt !== undefined && attempt < slot.item.attempt) {
      return Promise.resolve({ outcome: "cancelled", reason: "stale_attempt" });
    }
    // An unconditional approval was asked before the call was routed: it is allowed.
    if (!slot.spec?.approval?.conditional) return Promise.resolve({ outcome: "allowed" });
    slot.approval = this.askConditional(callId, slot, slot.spec.approval, args);
    return slot.approval;
  }

  /**
   * Asks the user about a running call, as an upfront approval would: the call's timeout stops
   * and its concurrency slot is given back while the question waits (the user's time to answer
   * counts for neither); on `allowed` the call takes a slot again and its timeout starts anew.
   * Any other outcome ends the call here, and the host hears it does not run.
   */
  private async askConditional(
    callId: string,
    slot: Slot,
    approval: NonNullable<ToolSpec["approval"]>,
    args: JsonObject,
  ): Promise<ApprovalAnswer> {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    if (slot.holdsCapacity) {
      slot.holdsCapacity = false;
      this.release();
    }
    const question = new AbortController();
    slot.question = question;
    const onInterrupt = () => question.abort();
    this.options.signal.addEventListener("abort", onInterrupt, { once: true });
    let declineReason: string | undefined;
    let outcome: ApprovalAnswer["outcome"];
    try {
      outcome = await this.options.approvals.ask({
        callId,
        tool: slot.item.name,
        approval,
        arguments: args,
        signal: this.options.signal.aborted ? this.options.signal : question.signal,
        items: [this.patch(callId, { status: "awaiting_approval" })],
        onDeclineReason: (reason) => {
          declineReason = reason;
        },
      });
    } finally {
      this.options.signal.removeEventListener("abort", onInterrupt);
    }
    if (slot.settled) return { outcome: "cancelled", reason: "settled" };
    if (outcome === "allowed") {
      await this.acquire();
      if (slot.settled) {
        this.release();
        return { outcome: "cancelled", reason: "settled" };
      }
      slot.holdsCapacity = true;
      await this.update(callId, { status: "running" });
      const timeoutMs = slot.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
      slot.timer = setTimeout(() => this.timeOut(callId, timeoutMs), timeoutMs);
      return { outcome };
    }
    slot.endedByApproval = true;
    const name = slot.item.name;
    if (outcome === "declined") {
      await this.settle(
        callId,
        failedResult("declined", "declined", ModelSentences.declined(name, declineReason)),
      );
    } else if (outcome === "expired") {
      await this.settle(
        callId,
        failedResult("approval_expired", "approval_expired", ModelSentences.approvalExpired(name)),
      );
    } else {
      await this.settle(
        callId,
        failedResult("cancelled", "withdrawn", ModelSentences.withdrawn(this.withdrawReason())),
        undefined,
        "withdrawn",
      );
    }
    return { outcome, ...(declineReason === undefined ? {} : { reason: declineReason }) };
  }

  /** A hold, decided here for every backend (see the class comment). */
  private hold(callId: string, attempt: number | undefined): HoldAnswer {
    const slot = this.slots.get(callId);
    if (!slot) return { accepted: false, reason: "unknown_call" };
    if (slot.settled) return { accepted: false, reason: "settled" };
    if (slot.cancelling) return { accepted: false, reason: "cancelling" };
    if (attempt !== undefined && attempt < slot.item.attempt)
      return { accepted: false, reason: "stale_attempt" };
    // The item changes at once (patch is synchronous), so an interrupt read after this sees it.
    if (!slot.item.held) void this.update(callId, { held: true }, [{ type: "tool.held", callId }]);
    return { accepted: true };
  }

  private interrupt(): void {
    for (const [callId, slot] of this.slots) {
      if (!slot.started || slot.settled || slot.cancelling || !slot.backend) continue;
      // A call whose question waits has not run: the interrupt withdraws the question, and it.
      if (slot.item.status === "awaiting_approval") continue;
      if (!interruptCancels({ interruptible: slot.spec?.interruptible === true, held: slot.item.held }))
        continue;
      slot.cancelling = this.closing ? "session_closed" : "interrupted";
      slot.backend.cancel(callId, slot.cancelling);
      if (!slot.backend.remote) continue;
      // The far side says what happened; the model hears nothing until then, or the grace ends.
      const graceMs = this.options.runtime.agent.toolCancelGraceMs;
      slot.grace = setTimeout(() => {
        void this.settle(
          callId,
          failedResult(
            "cancelled",
            "cancel_unconfirmed",
            ModelSentences.cancelUnconfirmed(slot.item.name, graceMs),
            true,
          ),
        );
      }, graceMs);
    }
  }

  private timeOut(callId: string, timeoutMs: number): void {
    const slot = this.slots.get(callId);
    if (!slot || slot.settled || !slot.backend) return;
    slot.cancelling = "timed_out";
    void this.settle(
      callId,
      failedResult(
        "timed_out",
        "timed_out",
        ModelSentences.timedOut(slot.item.name, timeoutMs),
        slot.item.held,
      ),
    );
    slot.backend.cancel(callId, "timed_out");
  }

  /** What the backend reported: the call's result, or, once it ended, a late one. */
  private async answered(callId: string, answer: ToolResult, started: number): Promise<void> {
    const slot = this.slots.get(callId)!;
    const result = withoutCredentials(answer);
    if (slot.settled) {
      // In-process calls stop when told: their answer after a timeout only echoes it; a host's
      // answer to a call its question ended only says it did not run.
      if (result.error?.code === "unanswered" || !slot.backend?.remote || slot.endedByApproval) return;
      this.options.logger.info("late tool result recorded", {
        sessionId: this.options.runtime.id,
        callId,
        outcome: result.outcome,
      });
      const item = this.patch(callId, { lateResult: result });
      await this.commitItem(callId, item, []);
      return;
    }
    let final = result;
    if (result.outcome === "cancelled" && slot.cancelling && slot.cancelling !== "timed_out") {
      // Whatever words the far side used, the model hears the one sentence for this cancel.
      const held = result.held ?? slot.item.held;
      final = {
        ...failedResult(
          "cancelled",
          "cancelled",
          ModelSentences.cancelled(slot.item.name, slot.cancelling, held),
          held,
        ),
      };
    }
    await this.settle(callId, final, started);
  }

  private withdrawReason(): WithdrawReason {
    return this.closing ? "session_closed" : "interrupted";
  }

  private async withdrawSlot(callId: string): Promise<void> {
    await this.update(callId, {
      status: "withdrawn",
      result: failedResult("cancelled", "withdrawn", ModelSentences.withdrawn(this.withdrawReason())),
    });
    this.slots.get(callId)!.settled = true;
  }

  /** Ends a call: the model is told through its item's final status and result, once. */
  private async settle(
    callId: string,
    result: ToolResult,
    started?: number,
    status: ToolCallStatus = STATUS_BY_OUTCOME[result.outcome],
  ): Promise<void> {
    const slot = this.slots.get(callId)!;
    if (slot.settled) return;
    slot.settled = true;
    clearTimeout(slot.timer);
    clearTimeout(slot.grace);
    // A question still open for the call (its host ran it without asking, after all) is withdrawn.
    slot.question?.abort();
    this.progress.drop(callId);
    const location = slot.item.location ?? "server";
    const metrics = this.options.metrics;
    const tool = metrics.toolLabel(slot.item.name, location, result.outcome);
    metrics.toolCalls.inc({ tool, location, outcome: result.outcome });
    if (started !== undefined || slot.started) {
      metrics.toolCallSeconds.observe(
        { tool, location },
        (Date.now() - (started ?? slot.item.createdAt)) / 1000,
      );
    }
    const held = result.held ?? slot.item.held;
    const patch: Partial<ToolCallItem> = {
      status,
      result: result.held === undefined ? { ...result, held } : result,
      held,
      progress: undefined,
    };
    // Not waited for: the call is over for the turn now, which gives the model the final items
    // (see Turn) and waits for their commits with its next ones (takeWrites), in one transaction.
    this.settledWrites.push(this.update(callId, patch));
    slot.done?.();
  }

  /** The commits of the calls' final items made so far, for the turn to wait for with its own. */
  takeWrites(): Promise<unknown> {
    const writes = this.settledWrites;
    this.settledWrites = [];
    return Promise.all(writes);
  }

  private patch(callId: string, patch: Partial<ToolCallItem>): ToolCallItem {
    const slot = this.slots.get(callId)!;
    const next = { ...slot.item, ...patch } as ToolCallItem;
    if (next.progress === undefined) delete next.progress;
    slot.item = next;
    return next;
  }

  private async update(
    callId: string,
    patch: Partial<ToolCallItem>,
    events: EventDraft[] = [],
  ): Promise<void> {
    const slot = this.slots.get(callId)!;
    // A late progress line or hold must not reopen a call that already ended.
    if (!isOpen(slot.item.status) && patch.status === undefined) return;
    const item = this.patch(callId, patch);
    await this.commitItem(callId, item, events);
  }

  private async commitItem(callId: string, item: ToolCallItem, events: EventDraft[]): Promise<void> {
    try {
      await this.options.runtime.commit({
        items: [item],
        events: [...events, { type: "conversation.updated", item }],
      });
    } catch (error) {
      this.options.logger.error("tool call update failed", {
        sessionId: this.options.runtime.id,
        callId,
        error,
      });
    }
  }

  private acquire(): Promise<void> {
    if (this.active < this.options.maxConcurrent) {
      this.active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.waiters.push(() => {
        this.active += 1;
        resolve();
      });
    });
  }

  private release(): void {
    this.active -= 1;
    this.waiters.shift()?.();
  }
}

/**
 * A new call id, unique across sessions and turns. The model's own id cannot serve: the scripted
 * model derives it from the message, so two sessions that say the same thing get the same ids,
 * and OpenAI-compatible servers that leave ids out get `call_<index>` on every turn. Yet the call
 * id is the idempotency key of executors, workers and the apps' tables, so it must never repeat.
 */
function serverCallId(): string {
  return `call_${nanoid(21)}`;
}

function withServerId(call: NormalizedToolCall): NormalizedToolCall & { providerCallId: string } {
  return { ...call, id: serverCallId(), providerCallId: call.id };
}

function isOpen(status: ToolCallStatus): boolean {
  return status === "pending" || status === "awaiting_approval" || status === "running";
}
