import type {
  NormalizedToolCall,
  ToolCallItem,
  ToolCallStatus,
  ToolOutcome,
  ToolResult,
  User,
} from "@patchbay/protocol";
import { validateArguments } from "@patchbay/tools";
import { nanoid } from "nanoid";
import type { ApprovalFlow } from "./approval-flow";
import type { HostedToolHandlers } from "./dispatch-seams";
import type { Logger } from "./logger";
import type { ServerMetrics } from "./metrics";
import { ProgressCoalescer } from "./progress-coalescer";
import type { SessionRuntime } from "./session-runtime";
import type { EventDraft } from "./store";
import type { ToolBackend } from "./tool-location";
import { failedResult } from "./tool-results";

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

/**
 * What a {@link ToolCallRunner} needs from its session.
 *
 * @example
 * ```ts
 * new ToolCallRunner({ runtime, approvals, backends, user, responseId, signal, maxConcurrent: 16, progressIntervalMs: 250, logger, metrics });
 * ```
 */
export interface ToolCallRunnerOptions {
  runtime: SessionRuntime;
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
  started: boolean;
}

/**
 * Runs the tool calls of one model reply: each is checked (known tool, arguments fit its JSON
 * Schema), asked about (approval), routed to where it runs, and its conversation item kept
 * current (status, progress, held, attempt, result). Calls run at once up to the session's
 * concurrency limit. On an interrupt, calls not yet started are withdrawn and running ones are
 * cancelled unless their tool is not interruptible or they hold.
 *
 * @example
 * ```ts
 * const runner = new ToolCallRunner(options);
 * const items = await runner.run(calls); // every call's final item
 * ```
 */
export class ToolCallRunner {
  private readonly slots = new Map<string, Slot>();
  private readonly progress: ProgressCoalescer;
  private active = 0;
  private readonly waiters: (() => void)[] = [];

  constructor(private readonly options: ToolCallRunnerOptions) {
    this.progress = new ProgressCoalescer(options.progressIntervalMs, (callId, text) =>
      this.update(callId, { progress: text }, [{ type: "tool.progress", callId, text }]),
    );
    options.signal.addEventListener("abort", () => this.interrupt(), { once: true });
  }

  /**
   * Adds the calls to the conversation, runs them all, and resolves when every one has ended.
   * Each call gets its own server id here (see {@link serverCallId}); the model's id is kept as
   * the item's `providerCallId`.
   */
  async run(modelCalls: NormalizedToolCall[]): Promise<ToolCallItem[]> {
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
      this.slots.set(call.id, { item, started: false, ...(backend ? { backend } : {}) });
      return item;
    });
    await this.options.runtime.commit({
      items,
      events: items.map((item) => ({ type: "conversation.updated" as const, item })),
    });
    await Promise.all(calls.map((call) => this.runOne(call)));
    this.progress.clear();
    return calls.map((call) => this.slots.get(call.id)!.item);
  }

  /**
   * Withdraws calls that are given but not started (the model's reply was cut short), so the
   * conversation shows them and the model learns they did not run.
   */
  async withdraw(modelCalls: NormalizedToolCall[]): Promise<void> {
    if (modelCalls.length === 0) return;
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
        result: failedResult(
          "cancelled",
          "withdrawn",
          "The call was withdrawn: the user interrupted before it ran.",
        ),
      }),
    );
    await this.options.runtime.commit({
      items,
      events: items.map((item) => ({ type: "conversation.updated" as const, item })),
    });
  }

  private backendFor(name: string): ToolBackend | undefined {
    return this.options.backends.find((backend) => backend.has(name));
  }

  private async runOne(call: NormalizedToolCall): Promise<void> {
    const slot = this.slots.get(call.id)!;
    const started = Date.now();
    const finish = (result: ToolResult) => this.finish(call.id, result, started);

    if (call.argumentsError !== undefined) {
      return finish(failedResult("invalid_arguments", "invalid_arguments", call.argumentsError));
    }
    const backend = slot.backend;
    const spec = backend?.specs().find((s) => s.name === call.name);
    if (!backend || !spec) {
      const names = this.options.backends.flatMap((b) => b.specs().map((s) => s.name));
      return finish(
        failedResult(
          "unknown_tool",
          "unknown_tool",
          `There is no tool named "${call.name}". Available tools: ${names.length ? names.join(", ") : "none"}.`,
        ),
      );
    }
    const checked = validateArguments(spec.parameters, call.arguments);
    if (!checked.ok) {
      return finish(
        failedResult(
          "invalid_arguments",
          "invalid_arguments",
          `The arguments for "${call.name}" do not fit its schema:\n${checked.issues.join("\n")}`,
        ),
      );
    }
    const args = checked.value;

    if (this.options.signal.aborted) return this.withdrawSlot(call.id);
    if (spec.approval) {
      const outcome = await this.options.approvals.ask({
        callId: call.id,
        tool: call.name,
        approval: spec.approval,
        arguments: args,
        signal: this.options.signal,
        items: [this.patch(call.id, { status: "awaiting_approval" })],
      });
      if (outcome === "cancelled") return this.withdrawSlot(call.id);
      if (outcome === "declined") {
        return finish(failedResult("declined", "declined", `The user declined the call of "${call.name}".`));
      }
      if (outcome === "expired") {
        return finish(
          failedResult(
            "approval_expired",
            "approval_expired",
            `The user did not answer the approval for "${call.name}" in time, so it did not run.`,
          ),
        );
      }
    }

    // The slot is taken after approval: a question waiting for the user holds no capacity.
    await this.acquire();
    try {
      if (this.options.signal.aborted) return this.withdrawSlot(call.id);
      slot.started = true;
      await this.update(call.id, { status: "running" });
      const handlers: HostedToolHandlers = {
        progress: (text) => this.progress.push(call.id, text),
        say: (text) =>
          void this.options.runtime.append({ type: "tool.say", callId: call.id, text }).catch(() => {}),
        hold: () => void this.update(call.id, { held: true }, [{ type: "tool.held", callId: call.id }]),
        // A router reports every delivery, the first one included; the item starts at attempt 1,
        // so only a redelivery is a change worth a transaction.
        attempt: (attempt) => {
          if (attempt !== slot.item.attempt) void this.update(call.id, { attempt });
        },
      };
      const result = await backend.run(
        {
          callId: call.id,
          responseId: this.options.responseId,
          spec,
          arguments: args,
          user: this.options.user,
        },
        handlers,
      );
      return await finish(result);
    } finally {
      this.release();
    }
  }

  private interrupt(): void {
    for (const [callId, slot] of this.slots) {
      if (slot.started && slot.backend && isOpen(slot.item.status)) slot.backend.interrupt(callId);
    }
  }

  private async withdrawSlot(callId: string): Promise<void> {
    await this.update(callId, {
      status: "withdrawn",
      result: failedResult(
        "cancelled",
        "withdrawn",
        "The call was withdrawn: the user interrupted before it ran.",
      ),
    });
  }

  private async finish(callId: string, result: ToolResult, started: number): Promise<void> {
    this.progress.drop(callId);
    const slot = this.slots.get(callId)!;
    const location = slot.item.location ?? "server";
    this.options.metrics.toolCalls.inc({ tool: slot.item.name, location, outcome: result.outcome });
    this.options.metrics.toolCallSeconds.observe(
      { tool: slot.item.name, location },
      (Date.now() - started) / 1000,
    );
    const held = result.held ?? slot.item.held;
    const patch: Partial<ToolCallItem> = {
      status: STATUS_BY_OUTCOME[result.outcome],
      result,
      held,
      progress: undefined,
    };
    await this.update(callId, patch);
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
