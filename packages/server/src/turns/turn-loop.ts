import { type LanguageModel, ModelError, prepareMessages, type ReasoningPart } from "@patchbay/models";
import type {
  ConversationItem,
  MessageItem,
  NormalizedToolCall,
  ToolCallItem,
  ToolSpec,
  Usage,
  User,
  WireError,
} from "@patchbay/protocol";
import { nanoid } from "nanoid";
import type { MessageRouter } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import { TurnTrace } from "../observability/tracing";
import type { SessionLog } from "../sessions/session-log";
import type { TurnRecord } from "../store/store";
import { firstByName } from "../tools/first-by-name";
import type { ToolBackend } from "../tools/tool-backend";
import type { ApprovalFlow } from "./approval-flow";
import { endUserError, newErrorReference } from "./end-user-error";
import { ToolCallRunner } from "./tool-call-runner";
import { type ReplyOutcome, WorkerFirst, type WorkerReply } from "./worker-first";

export type { ReplyOutcome, WorkerReply } from "./worker-first";

/** Everything one turn needs. */
export interface TurnOptions {
  runtime: SessionLog;
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
  /**
   * The turn was cut off on another node of a cluster while its hosted calls ran (docs/cluster.md):
   * it goes on here, from those calls (delivered again, same ids) and the rounds made so far.
   */
  resume?: { calls: ToolCallItem[]; rounds: number; startedAt: number };
  /**
   * The commit of the message the turn answers, when the turn starts before it is written (its
   * first changes share its transaction; see `SessionLog.commit`). Should it fail or turn out a
   * duplicate, the turn is void: it stops and writes nothing more (the log rejects what it
   * queued meanwhile).
   */
  admitted?: Promise<unknown>;
  progressIntervalMs: number;
  /** The turn's log, with its session and response ids in every line (`logger.child`). */
  logger: Logger;
  metrics: ServerMetrics;
}

/** How a turn ended. */
export type TurnOutcome = "completed" | "interrupted" | "failed";

type CompletedReason = "stop" | "interrupted" | "max_rounds" | "answered_by_worker" | "refusal";

/** Each session's last offered tool list and the backends' lists it was made from (see `Turn.toolSpecs`). */
const offeredTools = new WeakMap<SessionLog, { from: ToolSpec[][]; specs: ToolSpec[] }>();

/** Swallows a rejection where it is only observed later (see {@link Turn.unwritten}). */
const ignore = (): undefined => undefined;

interface RoundResult {
  text: string;
  calls: NormalizedToolCall[];
  usage?: Usage;
  /** The model declined: its text is the refusal the user sees. */
  refused: boolean;
  /** The provider's reasoning state of the reply, kept on its calls (see reasoning-state.ts). */
  reasoning: ReasoningPart[];
}

/**
 * One reply of the agent to one user message: the model runs with the session's tools, its text
 * streams out as `text.delta`, its tool calls run (checked, approved and routed to where each tool
 * runs, by the internal tool-call runner), and the model runs again with the results, up to the
 * agent's round limit. An interrupt stops the model stream,
 * keeps what is done (the partial text as an `interrupted` message), lets calls that survive
 * interrupts finish, and ends the turn with `response.completed { reason: "interrupted" }`. A
 * model error ends it with `response.failed`; the conversation stays whole.
 */
export class Turn {
  readonly responseId: string;
  private readonly controller = new AbortController();
  private readonly startedAt: number;
  private usage: Usage = { inputTokens: 0, outputTokens: 0 };
  private currentRunner: ToolCallRunner | undefined;
  private closingSession = false;
  private readonly trace: TurnTrace;
  /** Made when first needed: most turns never route to a worker first (see {@link workerFirst}). */
  private firstRoute: WorkerFirst | undefined;
  /**
   * Commits made and not waited for: the turn goes on while they queue, so the changes of one
   * step (the reply's message, its deltas, its completion, the turn's end) share a transaction.
   * The session log keeps their order; the turn waits for them before anything leaves the server
   * that depends on them (a tool call sent) and at its end.
   */
  private unwritten: Promise<unknown>[] = [];
  /** The message the turn answers was not written (see {@link TurnOptions.admitted}). */
  private voided = false;

  constructor(private readonly options: TurnOptions) {
    this.responseId = options.responseId;
    this.startedAt = options.resume?.startedAt ?? Date.now();
    this.trace = new TurnTrace({
      sessionId: options.runtime.id,
      agent: options.runtime.agent.id,
      responseId: options.responseId,
    });
    options.admitted?.then(
      (events) => {
        if (events === null) this.abandon();
      },
      () => this.abandon(),
    );
  }

  /** The message was not written: the turn stops, and its end is not recorded (see {@link voided}). */
  private abandon(): void {
    this.voided = true;
    this.interrupt();
  }

  /** Stops the turn: see the class description. Safe to call more than once. */
  interrupt(): void {
    if (!this.controller.signal.aborted) this.controller.abort(new Error("interrupted"));
  }

  /**
   * The session is closing: the turn is interrupted as by the user (cancels say
   * `session_closed`), so calls that survive interrupts (not interruptible, or held) keep running
   * for the closing grace; `close` then ends what still runs.
   */
  beginClose(): void {
    this.closingSession = true;
    if (this.currentRunner) this.currentRunner.closing = true;
    this.interrupt();
  }

  /**
   * The closing grace is over: the turn is interrupted and its running tool calls are cancelled
   * (`session_closed`), held ones included, without waiting for their answers.
   */
  close(): void {
    this.beginClose();
    this.currentRunner?.close();
  }

  get interrupted(): boolean {
    return this.controller.signal.aborted;
  }

  /** The message's route to a worker first (`dispatch: { text: enabled }`), made on first use. */
  private get workerFirst(): WorkerFirst {
    this.firstRoute ??= new WorkerFirst({ ...this.options, signal: this.controller.signal });
    return this.firstRoute;
  }

  /** A reply in the backend's own words while the turn waits for a worker (see worker-first.ts). */
  acceptReply(reply: WorkerReply): Promise<ReplyOutcome> {
    return this.workerFirst.acceptReply(reply);
  }

  /** Runs the turn to its end; never rejects. */
  async run(): Promise<TurnOutcome> {
    const { runtime } = this.options;
    try {
      if (this.options.resume) return await this.resumed(this.options.resume);
      this.queueWrite(
        runtime.commit({
          turn: this.record("running"),
          events: [{ type: "response.started", responseId: this.responseId, ...this.command() }],
        }),
      );
      if (this.interrupted) return await this.complete("interrupted", "");
      if (runtime.agent.dispatch.text && this.options.routeToWorker !== false) {
        await this.takeUnwritten();
        const routed = await this.workerFirst.route();
        if (routed.kind === "fail") return this.failWith(routed.error);
        if (routed.kind === "complete") return this.complete(routed.reason, routed.text);
      }
      return await this.rounds();
    } catch (error) {
      return this.fail(error);
    }
  }

  /** A turn taken over from a node that died: its calls end here, then the rounds go on. */
  private async resumed(resume: NonNullable<TurnOptions["resume"]>): Promise<TurnOutcome> {
    const runner = this.runner();
    const ended = await runner.resume(resume.calls);
    this.queueWrite(runner.takeWrites());
    this.trace.toolCalls(ended);
    return this.rounds(resume.rounds, ended);
  }

  private async rounds(first = 0, endedBefore: ToolCallItem[] = []): Promise<TurnOutcome> {
    const { runtime } = this.options;
    const maxRounds = runtime.agent.maxToolRounds;
    let text = "";
    // The last round's calls as they ended, whose final items may still be queued for the log.
    let ended = endedBefore;
    // Round `maxRounds` is the last model reply; tool calls it still makes are withdrawn.
    for (let round = first; round <= maxRounds; round++) {
      if (this.interrupted) return this.complete("interrupted", text);
      const result = await this.modelRound(ended);
      if (result.text || result.calls.length === 0) text = result.text;
      if (result.calls.length === 0) {
        // No call to run or withdraw: no runner for this round (each costs a listener on the signal).
        if (this.interrupted) return this.complete("interrupted", text);
        return this.complete(result.refused ? "refusal" : "stop", text);
      }
      // Made once the round has calls: it sees the interrupt from here on, and a call starts only
      // in it, so an interrupt during the model's reply still finds every call not yet started.
      const runner = this.runner();
      if (this.interrupted) {
        await runner.withdraw(result.calls, result.reasoning);
        return this.complete("interrupted", text);
      }
      if (round >= maxRounds) {
        await runner.withdraw(result.calls, result.reasoning, "round_limit");
        return this.complete("max_rounds", text);
      }
      ended = await runner.run(result.calls, result.reasoning, this.takeUnwritten());
      this.queueWrite(runner.takeWrites());
      this.trace.toolCalls(ended);
    }
    return this.complete("max_rounds", text);
  }

  /** Keeps a commit the turn does not wait for now (see {@link unwritten}). */
  private queueWrite(write: Promise<unknown>): void {
    write.catch(ignore);
    this.unwritten.push(write);
  }

  /** The commits not waited for so far, as one promise that rejects when one of them failed. */
  private takeUnwritten(): Promise<unknown> {
    const writes = this.unwritten;
    this.unwritten = [];
    return writes.length === 0 ? Promise.resolve() : Promise.all(writes);
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
    this.currentRunner.closing = this.closingSession;
    return this.currentRunner;
  }

  /** One model reply, streamed. An interrupt ends it early with what arrived so far. */
  private async modelRound(ended: readonly ToolCallItem[]): Promise<RoundResult> {
    const { runtime, model } = this.options;
    const tools = this.toolSpecs();
    // The calls' final items are committed with this round's first changes; the model reads them
    // now (each in place of its earlier state).
    const messages = prepareMessages(runtime.modelMessages(this.unheld(ended)), model.capabilities);
    const calls: NormalizedToolCall[] = [];
    // The reply's message as opened (text ""); its words are kept in `text` until it closes.
    let item: MessageItem | undefined;
    let text = "";
    let usage: Usage | undefined;
    let refused = false;
    const reasoning: ReasoningPart[] = [];
    // The reply's opening and its words are committed without waiting for each, so the words of
    // a burst are one delta and share the opening's transaction (see SessionLog.appendTextDelta);
    // `flushDeltas` waits for them (every 32 events, and at the turn's end) and surfaces a failure.
    let opened: Promise<unknown> | undefined;
    let deltaWrites: Promise<unknown> = Promise.resolve();
    // The log's promise for the words of this tick: the same one for every word of a burst, so
    // its failure is caught once per burst rather than once per word.
    let deltaBatch: Promise<unknown> | undefined;
    let deltaError: { error: unknown } | undefined;
    const flushDeltas = async () => {
      if (opened) await opened;
      await deltaWrites;
      if (deltaError) throw deltaError.error;
    };
    const traced = this.trace.modelCall(model);
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
        if (event.type === "text-delta" || event.type === "refusal-delta") {
          if (!event.delta) continue;
          // A refusal is the model's answer to the user: it streams and is kept like text.
          if (event.type === "refusal-delta") refused = true;
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
            // Written with what the turn queued before it and the words that follow in this
            // tick, in one transaction.
            opened = runtime.commit({
              items: [item],
              events: [{ type: "conversation.updated", item }],
            });
            this.queueWrite(opened);
          }
          text += event.delta;
          const written = runtime.appendTextDelta({
            type: "text.delta",
            responseId: this.responseId,
            itemId: item.id,
            delta: event.delta,
          });
          if (written !== deltaBatch) {
            deltaBatch = written;
            deltaWrites = written.catch((error: unknown) => {
              deltaError ??= { error };
            });
          }
        } else if (event.type === "tool-call") {
          calls.push(event.call);
        } else if (event.type === "reasoning") {
          reasoning.push(event.part);
        } else if (event.type === "finish") {
          usage = event.usage;
          if (event.reason === "refusal") refused = true;
          else if (event.reason === "length" || event.reason === "content_filter") {
            // Cut at the token cap, or blocked by the provider's filter: the developer's log says so.
            // A blocked prompt with nothing said ends as a refusal (with no text), as Anthropic's does.
            this.options.logger.warn("model reply cut short", { finishReason: event.reason });
            if (event.reason === "content_filter" && text === "" && calls.length === 0) refused = true;
          }
          traced.finish(event.reason, event.usage);
        }
      }
      // Not waited for here: a reply that came in one burst (its opening, words and end in one
      // tick) is one transaction and one write to each socket, its events still in order; words
      // that stream over many ticks go out as they come. The turn waits for them at its end.
      this.queueWrite(flushDeltas());
      traced.interrupted();
    } catch (error) {
      if (this.interrupted) traced.interrupted();
      else
        traced.fail(
          error instanceof ModelError ? error.code : "internal",
          error instanceof Error ? error : undefined,
        );
      if (!this.interrupted) {
        if (item) await this.closeMessage({ ...item, text, status: "failed" });
        await Promise.allSettled(this.unwritten.splice(0));
        throw error;
      }
    }
    if (usage) {
      this.usage = {
        inputTokens: this.usage.inputTokens + usage.inputTokens,
        outputTokens: this.usage.outputTokens + usage.outputTokens,
      };
    }
    if (item) {
      const closed: MessageItem = { ...item, text, status: this.interrupted ? "interrupted" : "completed" };
      this.queueWrite(
        runtime.commit({ items: [closed], events: [{ type: "message.completed", item: closed }] }),
      );
    }
    // Asked for one call per reply, a model (Gemini, which has no switch for it, or a server that
    // ignores it) gave several: the first runs, and the model asks for the rest in later rounds.
    if (calls.length > 1 && model.capabilities.parallelToolCalls === false) calls.length = 1;
    return { text, calls, refused, reasoning, ...(usage ? { usage } : {}) };
  }

  private async closeMessage(item: MessageItem): Promise<void> {
    await this.options.runtime.commit({ items: [item], events: [{ type: "message.completed", item }] });
  }

  /**
   * What the model reads in place of the conversation's items: the last calls' final items and,
   * while the message's commit is under way (the turn started without waiting for it), the message.
   */
  private unheld(ended: readonly ToolCallItem[]): readonly ConversationItem[] {
    const { admitted, userItem, runtime } = this.options;
    if (!admitted || runtime.item(userItem.id)) return ended;
    return [userItem, ...ended];
  }

  /**
   * The tools offered to the model: the first backend's spec wins for a name in several. The
   * list is a function of the backends' lists alone, so the session's last one is used again
   * while each backend answers with the very list it was made from (a model round each, two a
   * turn with a tool call, and the same lists nearly always).
   */
  private toolSpecs(): ToolSpec[] {
    const { backends, runtime } = this.options;
    const kept = offeredTools.get(runtime);
    if (kept && kept.from.length === backends.length) {
      let same = true;
      for (let i = 0; i < backends.length && same; i++) same = backends[i]!.specs() === kept.from[i];
      if (same) return kept.specs;
    }
    const from = backends.map((backend) => backend.specs());
    // Frozen: every round of the session gets this array, so an adapter that changed it would
    // change the next round's tools too; it fails at once instead.
    const specs = Object.freeze(firstByName(from)) as ToolSpec[];
    offeredTools.set(runtime, { from, specs });
    return specs;
  }

  private async complete(reason: CompletedReason, text: string): Promise<TurnOutcome> {
    if (this.voided) return this.abandoned();
    const outcome: TurnOutcome = reason === "interrupted" ? "interrupted" : "completed";
    this.trace.end(outcome, reason, this.usage);
    const earlier = this.takeUnwritten();
    const completion = this.options.runtime.commit({
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
    try {
      await earlier;
    } catch (error) {
      // Usually in the completion's transaction, and failing with it; written apart, the turn
      // still ends as recorded, and the developer learns what is missing.
      completion.catch(ignore);
      this.options.logger.error("a change of the turn could not be written", { error });
    }
    await completion;
    this.observe(outcome);
    return outcome;
  }

  /**
   * The boundary between the two audiences: the developer gets the whole error (stack, provider
   * text, session and response ids) in this process's log under a reference; the end user gets
   * a neutral sentence with that reference (end-user-error.ts).
   */
  private async fail(error: unknown): Promise<TurnOutcome> {
    if (this.voided) return this.abandoned();
    const ref = newErrorReference();
    // The turn's logger carries its session and response ids (live-session.ts).
    const fields = { ref, error };
    if (error instanceof ModelError) {
      this.options.logger.warn("model call failed", {
        ...fields,
        code: error.code,
        requestId: error.requestId,
      });
      return this.failWith(endUserError(error.code, ref));
    }
    this.options.logger.error("turn failed", fields);
    return this.failWith(endUserError("internal", ref));
  }

  private async failWith(error: WireError): Promise<TurnOutcome> {
    if (this.voided) return this.abandoned();
    this.trace.end("failed", error.code, this.usage);
    try {
      await this.options.runtime.commit({
        turn: this.record("failed"),
        events: [{ type: "response.failed", responseId: this.responseId, ...this.command(), error }],
      });
    } catch (commitError) {
      this.options.logger.error("could not record a failed turn", { error: commitError });
    }
    this.observe("failed");
    return "failed";
  }

  /** A void turn ends: what it queued is rejected by the log, and nothing more is written. */
  private async abandoned(): Promise<TurnOutcome> {
    await Promise.allSettled(this.unwritten.splice(0));
    this.trace.end("failed", "message_not_written", this.usage);
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
