import { type LanguageModel, ModelError, prepareMessages } from "@patchbay/models";
import type { MessageItem, NormalizedToolCall, ToolSpec, Usage, User, WireError } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { ApprovalFlow } from "./approval-flow";
import type { MessageRouter } from "./dispatch-seams";
import type { Logger } from "./logger";
import type { ServerMetrics } from "./metrics";
import { toModelMessages } from "./model-messages";
import type { SessionRuntime } from "./session-runtime";
import type { TurnRecord } from "./store";
import { ToolCallRunner } from "./tool-call-runner";
import type { ToolBackend } from "./tool-location";

/**
 * Everything one turn needs.
 *
 * @example
 * ```ts
 * const turn = new Turn({ runtime, model, approvals, backends, responseId, userItem, user, ... });
 * await turn.run();
 * ```
 */
export interface TurnOptions {
  runtime: SessionRuntime;
  model: LanguageModel;
  approvals: ApprovalFlow;
  /** Where tools run, in order of precedence (page, server, worker). */
  backends: ToolBackend[];
  messageRouter?: MessageRouter;
  responseId: string;
  commandId?: string;
  /** The user message this turn answers. */
  userItem: MessageItem;
  /**
   * Whether the message goes to a dispatch worker first when the agent has
   * `dispatch: { text: enabled }`: true for a user's message, false for one the backend or a
   * worker sent with the API key. Default true.
   */
  routeToWorker?: boolean;
  user: User;
  progressIntervalMs: number;
  logger: Logger;
  metrics: ServerMetrics;
}

/**
 * How a turn ended.
 *
 * @example
 * ```ts
 * if ((await turn.run()) === "failed") alert();
 * ```
 */
export type TurnOutcome = "completed" | "interrupted" | "failed";

type CompletedReason = "stop" | "interrupted" | "max_rounds" | "answered_by_worker";

interface RoundResult {
  text: string;
  calls: NormalizedToolCall[];
  usage?: Usage;
}

/**
 * One reply of the agent to one user message: the model runs with the session's tools, its text
 * streams out as `text.delta`, its tool calls run (checked, approved and routed to where each tool
 * runs, by the internal tool-call runner), and the model runs again with the results, up to the
 * agent's round limit. An interrupt stops the model stream,
 * keeps what is done (the partial text as an `interrupted` message), lets calls that survive
 * interrupts finish, and ends the turn with `response.completed { reason: "interrupted" }`. A
 * model error ends it with `response.failed`; the conversation stays whole.
 *
 * @example
 * ```ts
 * const turn = new Turn(options);
 * setTimeout(() => turn.interrupt(), 1000);
 * const outcome = await turn.run();
 * ```
 */
export class Turn {
  readonly responseId: string;
  private readonly controller = new AbortController();
  private readonly startedAt = Date.now();
  private usage: Usage = { inputTokens: 0, outputTokens: 0 };
  private currentRunner: ToolCallRunner | undefined;

  constructor(private readonly options: TurnOptions) {
    this.responseId = options.responseId;
  }

  /** Stops the turn: see the class description. Safe to call more than once. */
  interrupt(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error("interrupted"));
  }

  /**
   * The session is closing: the turn is interrupted and its running tool calls are cancelled
   * (`session_closed`), held ones included, without waiting for their answers.
   */
  close(): void {
    this.interrupt();
    this.currentRunner?.close();
  }

  get interrupted(): boolean {
    return this.controller.signal.aborted;
  }

  /** Runs the turn to its end; never rejects. */
  async run(): Promise<TurnOutcome> {
    const { runtime } = this.options;
    try {
      await runtime.commit({
        turn: this.record("running"),
        events: [{ type: "response.started", responseId: this.responseId, ...this.command() }],
      });
      if (this.interrupted) return await this.complete("interrupted", "");
      if (runtime.agent.dispatch.text && this.options.routeToWorker !== false) {
        const routed = await this.routeToWorker();
        if (routed !== "answer") return routed;
      }
      return await this.rounds();
    } catch (error) {
      return this.fail(error);
    }
  }

  private async rounds(): Promise<TurnOutcome> {
    const { runtime } = this.options;
    const maxRounds = runtime.agent.maxToolRounds;
    let text = "";
    // Round `maxRounds` is the last model reply; tool calls it still makes are withdrawn.
    for (let round = 0; round <= maxRounds; round++) {
      if (this.interrupted) return this.complete("interrupted", text);
      const runner = this.runner();
      const result = await this.modelRound();
      if (result.text || result.calls.length === 0) text = result.text;
      if (this.interrupted) {
        await runner.withdraw(result.calls);
        return this.complete("interrupted", text);
      }
      if (result.calls.length === 0) return this.complete("stop", text);
      if (round >= maxRounds) {
        await runner.withdraw(result.calls);
        return this.complete("max_rounds", text);
      }
      await runner.run(result.calls);
    }
    return this.complete("max_rounds", text);
  }

  private runner(): ToolCallRunner {
    const o = this.options;
    this.currentRunner = new ToolCallRunner({
      runtime: o.runtime,
      approvals: o.approvals,
      backends: o.backends,
      user: o.user,
      responseId: this.responseId,
      signal: this.controller.signal,
      maxConcurrent: o.runtime.agent.maxConcurrentToolCalls,
      progressIntervalMs: o.progressIntervalMs,
      logger: o.logger,
      metrics: o.metrics,
    });
    return this.currentRunner;
  }

  /** One model reply, streamed. An interrupt ends it early with what arrived so far. */
  private async modelRound(): Promise<RoundResult> {
    const { runtime, model } = this.options;
    const tools = this.toolSpecs();
    const messages = prepareMessages(
      toModelMessages(runtime.agent.instructions, runtime.conversation()),
      model.capabilities,
    );
    const calls: NormalizedToolCall[] = [];
    let item: MessageItem | undefined;
    let usage: Usage | undefined;
    // Deltas are appended without waiting for each one's transaction, so the deltas of a burst
    // share one (see SessionRuntime.append); `flushDeltas` waits for them and surfaces a failure.
    let deltaWrites: Promise<unknown> = Promise.resolve();
    let deltaError: { error: unknown } | undefined;
    const flushDeltas = async () => {
      await deltaWrites;
      if (deltaError) throw deltaError.error;
    };
    try {
      let count = 0;
      for await (const event of model.stream({ messages, tools, signal: this.controller.signal })) {
        if (this.interrupted) break;
        // A model that streams from memory never yields to I/O on its own; without this a fast
        // reply would starve every socket (and other sessions) until it ends. Waiting for the
        // deltas written so far also bounds how many are in flight.
        if (++count % 32 === 0) {
          await flushDeltas();
          await new Promise((resolve) => setImmediate(resolve));
        }
        if (event.type === "text-delta") {
          if (!event.delta) continue;
          if (!item) {
            item = {
              type: "message",
              id: `m_${nanoid(12)}`,
              role: "assistant",
              text: "",
              status: "in_progress",
              responseId: this.responseId,
              createdAt: Date.now(),
            };
            await runtime.commit({ items: [item], events: [{ type: "conversation.updated", item }] });
          }
          item = { ...item, text: item.text + event.delta };
          deltaWrites = runtime
            .append({ type: "text.delta", responseId: this.responseId, itemId: item.id, delta: event.delta })
            .catch((error: unknown) => {
              deltaError ??= { error };
            });
        } else if (event.type === "tool-call") {
          calls.push(event.call);
        } else if (event.type === "finish") {
          usage = event.usage;
        }
      }
      await flushDeltas();
    } catch (error) {
      if (!this.interrupted) {
        if (item) await this.closeMessage({ ...item, status: "failed" });
        throw error;
      }
    }
    if (usage) {
      this.usage = {
        inputTokens: this.usage.inputTokens + usage.inputTokens,
        outputTokens: this.usage.outputTokens + usage.outputTokens,
      };
    }
    if (item) await this.closeMessage({ ...item, status: this.interrupted ? "interrupted" : "completed" });
    return { text: item?.text ?? "", calls, ...(usage ? { usage } : {}) };
  }

  private async closeMessage(item: MessageItem): Promise<void> {
    await this.options.runtime.commit({ items: [item], events: [{ type: "message.completed", item }] });
  }

  /** The tools offered to the model: the first backend's spec wins for a name in several. */
  private toolSpecs(): ToolSpec[] {
    const byName = new Map<string, ToolSpec>();
    for (const backend of this.options.backends) {
      for (const spec of backend.specs()) if (!byName.has(spec.name)) byName.set(spec.name, spec);
    }
    return [...byName.values()];
  }

  private async routeToWorker(): Promise<TurnOutcome | "answer"> {
    const { runtime, messageRouter, userItem, user } = this.options;
    await runtime.append({ type: "response.thinking", responseId: this.responseId, reason: "dispatch" });
    if (!messageRouter) {
      return this.failWith({
        code: "no_worker",
        message: "this agent sends messages to a dispatch worker first, and no worker is connected",
      });
    }
    const outcome = await messageRouter.route({
      session: runtime.info,
      message: {
        id: userItem.id,
        agent: runtime.agent.id,
        sessionId: runtime.id,
        channel: null,
        user,
        text: userItem.text,
        createdAt: userItem.createdAt,
        metadata: runtime.info.metadata,
      },
      images: userItem.images ?? [],
      signal: this.controller.signal,
    });
    if (this.interrupted) return this.complete("interrupted", "");
    if (outcome.kind === "dropped") return this.failWith(outcome.error);
    if (outcome.kind === "handled") return this.complete("answered_by_worker", "");
    return "answer";
  }

  private async complete(reason: CompletedReason, text: string): Promise<TurnOutcome> {
    const outcome: TurnOutcome = reason === "interrupted" ? "interrupted" : "completed";
    await this.options.runtime.commit({
      turn: this.record(outcome === "interrupted" ? "interrupted" : "completed"),
      events: [
        {
          type: "response.completed",
          responseId: this.responseId,
          ...this.command(),
          reason,
          text,
          usage: this.usage,
        },
      ],
    });
    this.observe(outcome);
    return outcome;
  }

  private async fail(error: unknown): Promise<TurnOutcome> {
    if (error instanceof ModelError) {
      this.options.logger.warn("model call failed", {
        sessionId: this.options.runtime.id,
        code: error.code,
        error,
      });
      return this.failWith({ code: error.code, message: error.message });
    }
    this.options.logger.error("turn failed", { sessionId: this.options.runtime.id, error });
    return this.failWith({ code: "internal", message: "the turn failed on the server" });
  }

  private async failWith(error: WireError): Promise<TurnOutcome> {
    try {
      await this.options.runtime.commit({
        turn: this.record("failed"),
        events: [{ type: "response.failed", responseId: this.responseId, ...this.command(), error }],
      });
    } catch (commitError) {
      this.options.logger.error("could not record a failed turn", {
        sessionId: this.options.runtime.id,
        error: commitError,
      });
    }
    this.observe("failed");
    return "failed";
  }

  private observe(outcome: TurnOutcome): void {
    this.options.metrics.turns.inc({ outcome });
    this.options.metrics.turnSeconds.observe((Date.now() - this.startedAt) / 1000);
  }

  private command(): { commandId?: string } {
    return this.options.commandId === undefined ? {} : { commandId: this.options.commandId };
  }

  private record(status: TurnRecord["status"]): TurnRecord {
    const record: TurnRecord = {
      responseId: this.responseId,
      sessionId: this.options.runtime.id,
      status,
      startedAt: this.startedAt,
    };
    if (this.options.commandId !== undefined) record.commandId = this.options.commandId;
    if (status !== "running") record.endedAt = Date.now();
    return record;
  }
}
