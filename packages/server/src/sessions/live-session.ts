import type { LanguageModel } from "@patchbay/models";
import type { ImageContent, MessageItem, User } from "@patchbay/protocol";
import { nanoid } from "nanoid";
import { checkMessageQuotas, type ServerLimits } from "../config/limits";
import { ServerError } from "../errors";
import type { HostedToolRouter, MessageRouter } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { ServerMetrics } from "../observability/metrics";
import type { SessionChange, TurnRecord } from "../store/store";
import { PageToolBackend } from "../tools/page-tool-backend";
import type { ToolBackend } from "../tools/tool-backend";
import { WorkerToolBackend } from "../tools/worker-tool-backend";
import { ApprovalFlow } from "../turns/approval-flow";
import { type ReplyOutcome, Turn, type TurnOptions, type WorkerReply } from "../turns/turn-loop";
import { checkImages } from "./image-guard";
import type { SessionLog } from "./session-log";

/** How long a closing turn may take to end once its calls were all ended (they settle at once). */
const CLOSED_TURN_END_MS = 1_000;

/**
 * What a live session shares with every other: the model of its agent, the in-process tools, the
 * dispatch seams, the logger and metrics.
 */
export interface LiveSessionDeps {
  model: LanguageModel;
  /** Makes this session's backend for in-process tools (over the server's `Tools` registry). */
  serverTools?: (runtime: SessionLog) => ToolBackend;
  hostedTools?: HostedToolRouter;
  messageRouter?: MessageRouter;
  logger: Logger;
  metrics: ServerMetrics;
  progressIntervalMs: number;
  /** Messages waiting behind a running turn, at most. */
  maxQueuedMessages?: number;
  /** The message and conversation quotas (`maxMessageBytes`, `maxConversationItems`, `maxConversationBytes`). */
  limits?: Pick<
    ServerLimits,
    "maxMessageBytes" | "maxConversationItems" | "maxConversationBytes" | "allowPrivateImageUrls"
  >;
}

/** A user message to answer. */
export interface SendMessageInput {
  commandId: string;
  text: string;
  images?: ImageContent[];
  /**
   * Who sent it: `user` (a user-token socket or HTTP call; the default) or `backend` (the API
   * key: your backend or a dispatch worker, which is the server side speaking). With
   * `dispatch: { text: enabled }` only a user's message goes to a worker first; a backend's goes
   * straight to the model. Otherwise a worker's own `session.responses.create` would wait for a
   * second worker slot while its handler holds the first.
   */
  sender?: "user" | "backend";
}

interface QueuedTurn {
  responseId: string;
  commandId: string | undefined;
  item: MessageItem;
  sender: "user" | "backend";
  resume?: TurnOptions["resume"];
  /** The message's commit, when the turn starts without waiting for it (see sendMessage). */
  admitted?: Promise<unknown>;
}

/**
 * A session that is loaded, as the turns see it: its {@link SessionLog} (what happened), its
 * approvals, its tool backends and its queue of turns (what happens next). Messages are answered one at a time, in order; a message that arrives while a turn runs
 * interrupts it, and when several wait only the newest is answered (the model sees them all).
 */
export class LiveSession {
  // The approvals and the page and hosted backends are made on first use: an idle session's
  // memory is mostly what it holds, and most loaded sessions are idle.
  private approvalFlow: ApprovalFlow | undefined;
  private pageBackend: PageToolBackend | undefined;
  private hostedBackend: WorkerToolBackend | undefined;
  private readonly server: ToolBackend | undefined;
  /** Turns waiting, oldest first; made when one is queued (most loaded sessions are idle). */
  private queue: QueuedTurn[] | undefined;
  private current: Turn | undefined;
  private loop: Promise<void> | undefined;
  private closing = false;
  /** A message's command id is being checked (see sendMessage): later messages wait for it. */
  private admitting: Promise<void> | undefined;

  constructor(
    readonly runtime: SessionLog,
    private readonly deps: LiveSessionDeps,
  ) {
    this.server = deps.serverTools?.(runtime);
  }

  /** The session's approvals (questions to the user and how they ended). */
  get approvals(): ApprovalFlow {
    this.approvalFlow ??= new ApprovalFlow(this.runtime, {
      defaultExpiresInMs: this.runtime.agent.approvalTimeoutMs,
    });
    return this.approvalFlow;
  }

  /** The tools the session's pages run. */
  get pages(): PageToolBackend {
    // The session log's logger already names the session.
    this.pageBackend ??= new PageToolBackend(this.runtime, this.runtime.logger);
    return this.pageBackend;
  }

  private get hosted(): WorkerToolBackend | undefined {
    const router = this.deps.hostedTools;
    if (router) this.hostedBackend ??= new WorkerToolBackend(this.runtime, router);
    return this.hostedBackend;
  }

  get id(): string {
    return this.runtime.id;
  }

  /** Whether a turn runs or waits. */
  get busy(): boolean {
    return this.loop !== undefined;
  }

  /**
   * Adds a user message and queues its turn. Idempotent by `commandId`: a repeat changes nothing
   * and resolves `{ duplicate: true }`.
   */
  async sendMessage(input: SendMessageInput): Promise<{ duplicate: boolean; responseId?: string }> {
    // In the order they came: a message checked before its commit is queued keeps its place.
    while (this.admitting) await this.admitting;
    if (this.closing) throw new ServerError("unavailable", "the session is closing");
    if ((this.queue?.length ?? 0) >= (this.deps.maxQueuedMessages ?? 32)) {
      throw new ServerError("rate_limited", "too many messages are waiting for this session");
    }
    if (this.deps.limits) {
      checkMessageQuotas(input, this.runtime.conversationSize, this.deps.limits);
      checkImages(input.images, this.deps.limits.allowPrivateImageUrls === 1);
    }
    const item: MessageItem = {
      type: "message",
      id: `m_${nanoid(12)}`,
      role: "user",
      text: input.text,
      status: "completed",
      createdAt: Date.now(),
    };
    if (input.images && input.images.length > 0) item.images = input.images;
    const responseId = `r_${nanoid(12)}`;
    const change: SessionChange = {
      command: { commandId: input.commandId, kind: "message" },
      items: [item],
      turn: {
        responseId,
        sessionId: this.id,
        commandId: input.commandId,
        status: "queued",
        startedAt: Date.now(),
      },
      events: [{ type: "message.created", commandId: input.commandId, item }],
    };
    const queued: QueuedTurn = {
      responseId,
      commandId: input.commandId,
      item,
      sender: input.sender ?? "user",
    };
    if (!this.loop) return this.admit(change, queued);
    return this.commitThenQueue(change, queued);
  }

  /** A message to a busy session: committed, then its turn is queued and interrupts the running one. */
  private async commitThenQueue(
    change: SessionChange,
    queued: QueuedTurn,
  ): Promise<{ duplicate: boolean; responseId?: string }> {
    const events = await this.runtime.commit(change);
    if (events === null) return { duplicate: true };
    this.enqueue(queued);
    this.current?.interrupt();
    this.pump();
    return { duplicate: false, responseId: queued.responseId };
  }

  /**
   * A message to an idle session: its command id is checked first, then its turn starts at once
   * without waiting for the message's commit, so the turn's first changes (the turn started,
   * its first calls) share the message's transaction: one commit where there were two. The
   * session log writes nothing of the turn unless the message is written (see
   * `SessionLog.commit`), and the turn stops without a word if it is not.
   */
  private async admit(
    change: SessionChange,
    queued: QueuedTurn,
  ): Promise<{ duplicate: boolean; responseId?: string }> {
    const commandId = queued.commandId!;
    let fresh: boolean;
    let checked!: () => void;
    this.admitting = new Promise((resolve) => {
      checked = resolve;
    });
    try {
      fresh = await this.runtime.isNewCommand(commandId);
    } finally {
      this.admitting = undefined;
      checked();
    }
    if (!fresh) return { duplicate: true };
    if (this.closing) throw new ServerError("unavailable", "the session is closing");
    // A turn was resumed meanwhile: this message waits behind it, as any other would.
    if (this.loop) return this.commitThenQueue(change, queued);
    const written = this.runtime.commit(change, { admits: true });
    written.catch(() => undefined);
    this.enqueue({ ...queued, admitted: written });
    this.pump();
    const events = await written;
    if (events === null) return { duplicate: true };
    return { duplicate: false, responseId: queued.responseId };
  }

  /**
   * A backend's reply in its own words to the message a dispatch worker is handling: added as
   * an assistant message, and the user's turn ends with it. Idempotent by `commandId`. A reply
   * when no turn waits for a worker (or for another message than `messageId`) is a `conflict`.
   */
  async reply(input: WorkerReply): Promise<{ duplicate: boolean; item?: MessageItem }> {
    const outcome: ReplyOutcome = this.current
      ? await this.current.acceptReply(input)
      : { kind: "not_waiting" };
    if (outcome.kind === "added") return { duplicate: false, item: outcome.item };
    if (outcome.kind === "duplicate" || (await this.runtime.hasCommand(input.commandId))) {
      return { duplicate: true };
    }
    if (outcome.kind === "other_message") {
      throw new ServerError(
        "conflict",
        `messageId: the turn waiting for a reply answers message ${outcome.expected}, not ${input.messageId}`,
        { path: "messageId" },
      );
    }
    throw new ServerError(
      "conflict",
      "no turn of this session waits for a reply: a reply in your own words answers a message a dispatch worker is handling (dispatch.text: enabled), before its handler returns",
    );
  }

  /**
   * Goes on with a turn another node of a cluster cut off when it died, mid hosted calls
   * (docs/cluster.md): the calls are delivered again (same ids) and the model answers with
   * their results, as the turn would have there. `userItem` is the message the turn answers.
   */
  resumeTurn(turn: TurnRecord, userItem: MessageItem, resume: NonNullable<TurnOptions["resume"]>): void {
    this.enqueue({
      responseId: turn.responseId,
      commandId: turn.commandId,
      item: userItem,
      sender: "backend",
      resume,
    });
    this.pump();
  }

  /** Interrupts the running turn. Idempotent by `commandId`. */
  async interrupt(commandId: string): Promise<{ duplicate: boolean }> {
    const events = await this.runtime.commit({ command: { commandId, kind: "interrupt" } });
    if (events === null) return { duplicate: true };
    this.current?.interrupt();
    return { duplicate: false };
  }

  /** Resolves when no turn runs or waits. */
  async idle(): Promise<void> {
    while (this.loop) await this.loop;
  }

  /**
   * Stops the session's work: the running turn is interrupted, waiting turns end as interrupted,
   * open approvals are cancelled, and interruptible calls are cancelled. Calls that survive
   * interrupts (not interruptible, or held), wherever they run, get `graceMs` to answer with
   * their real result; what still runs then ends `cancelled`. Resolves when the turn has ended.
   */
  async close(graceMs: number): Promise<void> {
    this.closing = true;
    this.current?.beginClose();
    this.approvalFlow?.cancelAll();
    await this.idleWithin(graceMs);
    this.current?.close();
    await this.idleWithin(Math.min(graceMs, CLOSED_TURN_END_MS));
    await this.runtime.settled();
  }

  private async idleWithin(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.idle(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
      }),
    ]);
    clearTimeout(timer);
  }

  private enqueue(turn: QueuedTurn): void {
    if (this.queue) this.queue.push(turn);
    else this.queue = [turn];
  }

  private pump(): void {
    if (this.loop) return;
    this.loop = this.drain().finally(() => {
      this.loop = undefined;
      this.current = undefined;
    });
  }

  private async drain(): Promise<void> {
    for (let next = this.queue?.shift(); next; next = this.queue?.shift()) {
      const turn = new Turn({
        runtime: this.runtime,
        model: this.deps.model,
        approvals: this.approvals,
        backends: this.backends(),
        ...(this.deps.messageRouter ? { messageRouter: this.deps.messageRouter } : {}),
        responseId: next.responseId,
        ...(next.commandId === undefined ? {} : { commandId: next.commandId }),
        ...(next.resume ? { resume: next.resume } : {}),
        ...(next.admitted ? { admitted: next.admitted } : {}),
        userItem: next.item,
        routeToWorker: next.sender === "user",
        user: this.user(),
        progressIntervalMs: this.deps.progressIntervalMs,
        logger: this.deps.logger.child({ sessionId: this.id, responseId: next.responseId }),
        metrics: this.deps.metrics,
      });
      this.current = turn;
      // A newer message already waits, or the session closes: this one starts interrupted, so it
      // ends at once and the newest message is answered with every earlier one in view.
      if (this.closing) turn.beginClose();
      else if (this.queue?.length) turn.interrupt();
      await turn.run();
      this.current = undefined;
    }
    // Nothing waits (a turn queued from here on makes a new queue).
    this.queue = undefined;
  }

  /**
   * Where a call of a name goes, first match wins: the server's own tools and connectors, then
   * the workers', then the page's. A page is the user's and is not trusted (docs/security.md):
   * a page tool named like a trusted one never stands in for it, its spec nor its approval.
   */
  private backends(): ToolBackend[] {
    const backends: ToolBackend[] = [];
    if (this.server) backends.push(this.server);
    const hosted = this.hosted;
    if (hosted) backends.push(hosted);
    backends.push(this.pages);
    return backends;
  }

  private user(): User {
    return { id: this.runtime.userId };
  }
}
