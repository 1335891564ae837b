// Over 400 lines: the router's one state machine (queue, offer, accept, done, answer, requeue)
// and the join of work a cluster's node delivers again under its id belong together.
import { randomUUID } from "node:crypto";
import type { ServerToWorkerFrame, WireError, WorkerToServerFrame } from "@patchbay/protocol";
import { type Logger, silentLogger } from "../observability/logger";
import type { DispatchMetrics } from "./dispatch-metrics";
import type { ConnectedWorker, WorkerRegistry } from "./worker-registry";

/** The work a worker is offered: a message or an incoming call. */
export type WorkPayload = (ServerToWorkerFrame & { type: "work.offered" })["work"];

/**
 * How a piece of work ended: a worker finished it (`error` when its handler failed), or it never
 * reached one (`dropped`: no worker, queue full, waited too long, interrupted).
 */
export type WorkOutcome =
  | { kind: "done"; workerId: string; error?: WireError }
  | { kind: "dropped"; error: WireError };

/** What the submitter of work hears back. */
export interface WorkHooks {
  /** The worker called `answer` for this message. */
  onAnswer?: () => void;
  /** The work ended; called once. */
  onSettled?: (outcome: WorkOutcome) => void;
}

/** Where submitted work stands right after `submit`. */
export type WorkReceipt =
  | { status: "offered" | "queued"; workId: string }
  | { status: "dropped"; workId: string; error: WireError };

/** `work.done` codes with which a worker hands back work it did not start. */
const REFUSALS = new Set(["draining", "at_capacity", "no_handler"]);

interface Ticket {
  workId: string;
  work: WorkPayload;
  attempt: number;
  state: "queued" | "offered" | "accepted";
  /** The worker socket it was offered to (the object, not the id: a reconnect reuses the id). */
  worker: ConnectedWorker | undefined;
  /** Workers that handed this work back; it is not offered to them again. */
  refusedBy: Set<string>;
  hooks: WorkHooks;
  answered: boolean;
  queueTimer: ReturnType<typeof setTimeout> | undefined;
  /** The accept deadline while offered, then the finish deadline once accepted. */
  deadline: ReturnType<typeof setTimeout> | undefined;
}

/** Options of {@link WorkRouter}. */
export interface WorkRouterOptions {
  registry: WorkerRegistry;
  /** Work waiting for a free worker, at most; more is dropped with `queue_full`. Default 256. */
  maxQueue?: number;
  /** How long work may wait for a free worker before it is dropped with `no_worker`. Default 30 s. */
  queueTimeoutMs?: number;
  /** How long a worker has to accept offered work before it goes to another worker. Default 10 s. */
  acceptTimeoutMs?: number;
  /** How long accepted work may run before the server gives up on it (`work_timeout`). Default 5 min. */
  workTimeoutMs?: number;
  metrics?: DispatchMetrics;
  logger?: Logger;
}

/** Work a worker runs that no ticket here knows, and what it said about it meanwhile. */
interface Orphan {
  worker: ConnectedWorker;
  answered: boolean;
  done: (WorkerToServerFrame & { type: "work.done" }) | undefined;
}

/** Orphans remembered at most (the oldest go first). */
const MAX_ORPHANS = 1_000;
/**
 * How long after its hello a worker's frames about work unknown here are taken as orphans: the
 * frames it sends again after a reconnect (`answer`, `work.done` of work that finished while it
 * was cut off, so its hello did not list it) come right after the hello.
 */
const REPLAY_WINDOW_MS = 10_000;

/**
 * Routes messages and incoming calls to workers: to the one with the most free slots, with the
 * slot reserved at the moment of the offer; into a bounded queue when every worker is full; and
 * dropped, with the submitter told, when no worker is connected. Work whose worker goes away
 * before finishing is offered again (same id, higher attempt).
 */
export class WorkRouter {
  readonly #registry: WorkerRegistry;
  readonly #maxQueue: number;
  readonly #queueTimeoutMs: number;
  readonly #acceptTimeoutMs: number;
  readonly #workTimeoutMs: number;
  readonly #metrics: DispatchMetrics | undefined;
  readonly #logger: Logger;
  readonly #tickets = new Map<string, Ticket>();
  readonly #queue: Ticket[] = [];
  readonly #orphans = new Map<string, Orphan>();
  /** When each worker last said hello (cluster mode only). */
  readonly #helloAt = new WeakMap<ConnectedWorker, number>();
  #onOrphans: ((workIds: string[]) => void) | undefined;
  #closed = false;

  constructor(options: WorkRouterOptions) {
    this.#registry = options.registry;
    this.#maxQueue = options.maxQueue ?? 256;
    this.#queueTimeoutMs = options.queueTimeoutMs ?? 30_000;
    this.#acceptTimeoutMs = options.acceptTimeoutMs ?? 10_000;
    this.#workTimeoutMs = options.workTimeoutMs ?? 300_000;
    this.#metrics = options.metrics;
    this.#logger = options.logger ?? silentLogger;
  }

  /**
   * Cluster mode: `listener` hears of work a worker says in its hello it still runs that this
   * router never gave out (another node gave it before that node died; docs/cluster.md). Its owner
   * delivers it here again under its id (`submit`'s `given`), and the worker's run is joined, not
   * started twice. Without a listener such work is only the worker's (its slots stay taken).
   */
  watchOrphans(listener: (workIds: string[]) => void): void {
    this.#onOrphans = listener;
  }

  /** Work waiting for a free worker. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Work offered to or running on a worker. */
  get inFlight(): number {
    return this.#tickets.size - this.#queue.length;
  }

  /**
   * Hands work to a worker now, queues it, or drops it (and says why). `given` is work delivered
   * again under the id and attempt another node gave it (a cluster's reroute): a worker here that
   * still runs it keeps it, and what it already said about it counts.
   */
  submit(work: WorkPayload, hooks: WorkHooks = {}, given?: { workId: string; attempt: number }): WorkReceipt {
    const kind = work.kind;
    const workId = given?.workId ?? `wk_${randomUUID()}`;
    const joined = given ? this.#join(work, hooks, given) : undefined;
    if (joined) return joined;
    const drop = (error: WireError): WorkReceipt => {
      this.#metrics?.work.inc({ kind, event: "dropped" });
      this.#logger.info("dispatch work dropped", { workId, kind, code: error.code });
      return { status: "dropped", workId, error };
    };
    if (this.#closed) return drop({ code: "unavailable", message: "the server is shutting down" });
    if (!this.#registry.handles(kind)) {
      return drop({
        code: "no_worker",
        message: `no dispatch worker that handles ${kind === "message" ? "messages" : "calls"} is connected`,
      });
    }
    const ticket: Ticket = {
      workId,
      work,
      attempt: given?.attempt ?? 1,
      state: "queued",
      worker: undefined,
      refusedBy: new Set(),
      hooks,
      answered: false,
      queueTimer: undefined,
      deadline: undefined,
    };
    if (this.#offer(ticket)) {
      this.#tickets.set(workId, ticket);
      return { status: "offered", workId };
    }
    if (this.#queue.length >= this.#maxQueue) {
      return drop({
        code: "queue_full",
        message: `every worker is busy and ${this.#queue.length} messages and calls already wait`,
      });
    }
    this.#tickets.set(workId, ticket);
    this.#enqueue(ticket, "back");
    return { status: "queued", workId };
  }

  /** Stops waiting for work that has not reached a worker (its turn was interrupted). */
  withdraw(workId: string, error: WireError): boolean {
    const ticket = this.#tickets.get(workId);
    if (ticket?.state !== "queued") return false;
    this.#unqueue(ticket);
    this.#settle(ticket, { kind: "dropped", error });
    return true;
  }

  /** A worker's frame about work: accepted, done, answer. */
  onFrame(worker: ConnectedWorker, frame: WorkerToServerFrame): void {
    switch (frame.type) {
      case "work.accepted": {
        const ticket = this.#tickets.get(frame.workId);
        if (ticket && ticket.worker === worker && ticket.state === "offered") {
          ticket.state = "accepted";
          this.#arm(ticket, this.#workTimeoutMs, () => this.#workTimedOut(ticket, worker));
        }
        return;
      }
      case "work.done":
        this.#onDone(worker, frame);
        return;
      case "answer": {
        const ticket =
          frame.workId === undefined ? this.#byMessageId(frame.messageId) : this.#tickets.get(frame.workId);
        const orphan = ticket || frame.workId === undefined ? undefined : this.#orphan(worker, frame.workId);
        if (!ticket && orphan?.worker === worker) {
          // Its owner will deliver it here again; the answer counts then.
          orphan.answered = true;
          return;
        }
        const refuse = (code: string, message: string, path: string) =>
          worker.send({ type: "error", code, message, path });
        // An answer nobody waits for is an error the worker hears about, never a silent no-op.
        if (ticket?.work.kind !== "message" || ticket.worker !== worker) {
          refuse(
            "not_found",
            `answer: no running message work ${frame.workId ?? `for message ${frame.messageId}`} on this worker (answer before work.done)`,
            frame.workId === undefined ? "messageId" : "workId",
          );
          return;
        }
        if (ticket.work.message.sessionId !== frame.sessionId || ticket.work.message.id !== frame.messageId) {
          refuse(
            "invalid_frame",
            `answer: work ${ticket.workId} is message ${ticket.work.message.id} of session ${ticket.work.message.sessionId ?? "(none)"}`,
            ticket.work.message.sessionId !== frame.sessionId ? "sessionId" : "messageId",
          );
          return;
        }
        if (ticket.answered) {
          refuse("conflict", `answer: message ${frame.messageId} was already answered`, "messageId");
          return;
        }
        ticket.answered = true;
        ticket.hooks.onAnswer?.();
        return;
      }
      default:
        return;
    }
  }

  /**
   * A worker said hello. Work it says it still runs is its own again (and holds its slots), so
   * nothing it runs is handed out twice; then waiting work may fit.
   */
  adopt(worker: ConnectedWorker, running: readonly string[]): void {
    const orphans: string[] = [];
    if (this.#onOrphans) this.#helloAt.set(worker, Date.now());
    for (const workId of running) {
      worker.reserved.add(workId);
      const ticket = this.#tickets.get(workId);
      if (!ticket) {
        if (!this.#onOrphans) continue;
        this.#orphans.delete(workId);
        this.#orphans.set(workId, { worker, answered: false, done: undefined });
        if (this.#orphans.size > MAX_ORPHANS) this.#orphans.delete(this.#orphans.keys().next().value!);
        orphans.push(workId);
        continue;
      }
      if (ticket.state === "queued") this.#unqueue(ticket);
      else if (ticket.worker !== undefined && ticket.worker.id !== worker.id) continue;
      ticket.state = "accepted";
      ticket.worker = worker;
      this.#arm(ticket, this.#workTimeoutMs, () => this.#workTimedOut(ticket, worker));
    }
    if (orphans.length > 0) this.#onOrphans?.(orphans);
    this.pump();
  }

  /** A worker went away: what it had not finished is offered again, before anything newer. */
  onWorkerGone(worker: ConnectedWorker): void {
    for (const [workId, orphan] of this.#orphans) if (orphan.worker === worker) this.#orphans.delete(workId);
    const orphans = [...this.#tickets.values()].filter((t) => t.worker === worker && t.state !== "queued");
    for (const ticket of orphans.reverse()) {
      clearTimeout(ticket.deadline);
      ticket.attempt++;
      ticket.worker = undefined;
      this.#metrics?.work.inc({ kind: ticket.work.kind, event: "requeued" });
      this.#logger.info("dispatch work requeued", {
        workId: ticket.workId,
        worker: worker.id,
        attempt: ticket.attempt,
      });
      this.#enqueue(ticket, "front");
    }
    this.pump();
  }

  /** Offers waiting work to workers with free slots, oldest first. */
  pump(): void {
    for (let i = 0; i < this.#queue.length; ) {
      const ticket = this.#queue[i]!;
      if (this.#offer(ticket)) {
        this.#queue.splice(i, 1);
        clearTimeout(ticket.queueTimer);
        ticket.queueTimer = undefined;
        continue;
      }
      i++;
    }
    this.#metrics?.queueDepth.set(this.#queue.length);
  }

  /** Drops everything that waits; work on workers is left to them. */
  close(): void {
    this.#closed = true;
    for (const ticket of [...this.#queue]) {
      this.#unqueue(ticket);
      this.#settle(ticket, {
        kind: "dropped",
        error: { code: "unavailable", message: "the server is shutting down" },
      });
    }
  }

  /**
   * Work delivered again under its id (`submit`'s `given`) that a worker here still runs, or
   * finished since it said hello: that worker keeps it, no second worker gets it.
   */
  #join(
    work: WorkPayload,
    hooks: WorkHooks,
    given: { workId: string; attempt: number },
  ): WorkReceipt | undefined {
    const orphan = this.#orphans.get(given.workId);
    if (!orphan || !this.#registry.isCurrent(orphan.worker)) return undefined;
    this.#orphans.delete(given.workId);
    const { worker } = orphan;
    const ticket: Ticket = {
      workId: given.workId,
      work,
      attempt: given.attempt,
      state: "accepted",
      worker,
      refusedBy: new Set(),
      hooks,
      answered: false,
      queueTimer: undefined,
      deadline: undefined,
    };
    this.#tickets.set(given.workId, ticket);
    this.#logger.info("dispatch work joined on the worker still running it", {
      workId: given.workId,
      worker: worker.id,
    });
    if (!orphan.done) {
      worker.reserved.add(given.workId);
      this.#arm(ticket, this.#workTimeoutMs, () => this.#workTimedOut(ticket, worker));
    }
    // What the worker said meanwhile counts, once the submitter has its receipt.
    queueMicrotask(() => {
      if (orphan.answered && !ticket.answered) {
        ticket.answered = true;
        hooks.onAnswer?.();
      }
      if (orphan.done) this.#onDone(worker, orphan.done);
    });
    return { status: "offered", workId: given.workId };
  }

  /**
   * The orphan record of work unknown here: the one made at the worker's hello, or, for a frame
   * it sends again right after its hello about work that finished while it was cut off (so its
   * hello did not list it), a new one, told to the cluster like those of the hello.
   */
  #orphan(worker: ConnectedWorker, workId: string): Orphan | undefined {
    const known = this.#orphans.get(workId);
    if (known) return known;
    const helloAt = this.#helloAt.get(worker);
    if (!this.#onOrphans || helloAt === undefined || Date.now() - helloAt > REPLAY_WINDOW_MS)
      return undefined;
    const orphan: Orphan = { worker, answered: false, done: undefined };
    this.#orphans.set(workId, orphan);
    if (this.#orphans.size > MAX_ORPHANS) this.#orphans.delete(this.#orphans.keys().next().value!);
    this.#onOrphans([workId]);
    return orphan;
  }

  #offer(ticket: Ticket): boolean {
    const worker = this.#registry.pickForWork(ticket.work.kind, ticket.refusedBy);
    if (!worker) return false;
    // The slot is taken now, before the frame leaves: a second offer in the same tick sees it gone.
    worker.reserved.add(ticket.workId);
    worker.lastGivenAt = Date.now();
    ticket.state = "offered";
    ticket.worker = worker;
    this.#metrics?.work.inc({ kind: ticket.work.kind, event: "offered" });
    worker.send({ type: "work.offered", workId: ticket.workId, attempt: ticket.attempt, work: ticket.work });
    this.#arm(ticket, this.#acceptTimeoutMs, () => this.#acceptTimedOut(ticket, worker));
    return true;
  }

  #arm(ticket: Ticket, ms: number, fire: () => void): void {
    clearTimeout(ticket.deadline);
    ticket.deadline = setTimeout(fire, ms);
    ticket.deadline.unref?.();
  }

  // A worker that does not accept in time is treated as one that declined: the work goes to
  // another worker (never back to this one), and a late work.accepted from it is ignored.
  #acceptTimedOut(ticket: Ticket, worker: ConnectedWorker): void {
    if (ticket.state !== "offered" || ticket.worker !== worker) return;
    this.#logger.warn("dispatch work not accepted in time; offering it elsewhere", {
      workId: ticket.workId,
      worker: worker.id,
      acceptTimeoutMs: this.#acceptTimeoutMs,
    });
    worker.reserved.delete(ticket.workId);
    ticket.refusedBy.add(worker.id);
    ticket.worker = undefined;
    this.#enqueue(ticket, "front");
    this.pump();
  }

  // Work that runs past its deadline ends for the user (the reply fails with work_timeout); the
  // slot is the worker's again, and its late work.done or answer is ignored.
  #workTimedOut(ticket: Ticket, worker: ConnectedWorker): void {
    if (ticket.state !== "accepted" || ticket.worker !== worker) return;
    this.#logger.warn("dispatch work did not finish in time", {
      workId: ticket.workId,
      worker: worker.id,
      workTimeoutMs: this.#workTimeoutMs,
    });
    worker.reserved.delete(ticket.workId);
    this.#metrics?.work.inc({ kind: ticket.work.kind, event: "dropped" });
    this.#settle(ticket, {
      kind: "dropped",
      error: { code: "work_timeout", message: `the worker did not finish within ${this.#workTimeoutMs} ms` },
    });
    this.pump();
  }

  #onDone(worker: ConnectedWorker, frame: WorkerToServerFrame & { type: "work.done" }): void {
    worker.reserved.delete(frame.workId);
    const ticket = this.#tickets.get(frame.workId);
    if (!ticket) {
      const orphan = this.#orphan(worker, frame.workId);
      if (orphan?.worker === worker) orphan.done = frame;
      this.pump();
      return;
    }
    if (ticket.worker !== worker && ticket.state !== "queued") {
      // Another worker has it now (this one was thought gone); only that one's word counts.
      this.pump();
      return;
    }
    const code = frame.error?.code;
    if (code !== undefined && REFUSALS.has(code) && ticket.state === "offered") {
      ticket.refusedBy.add(worker.id);
      ticket.worker = undefined;
      this.#enqueue(ticket, "front");
      this.pump();
      return;
    }
    if (ticket.state === "queued") this.#unqueue(ticket);
    this.#settle(ticket, {
      kind: "done",
      workerId: worker.id,
      ...(frame.error ? { error: frame.error } : {}),
    });
    this.pump();
  }

  #enqueue(ticket: Ticket, where: "front" | "back"): void {
    clearTimeout(ticket.deadline);
    ticket.state = "queued";
    if (where === "front") this.#queue.unshift(ticket);
    else this.#queue.push(ticket);
    this.#metrics?.work.inc({ kind: ticket.work.kind, event: "queued" });
    this.#metrics?.queueDepth.set(this.#queue.length);
    clearTimeout(ticket.queueTimer);
    ticket.queueTimer = setTimeout(() => {
      if (ticket.state !== "queued") return;
      this.#unqueue(ticket);
      this.#metrics?.work.inc({ kind: ticket.work.kind, event: "dropped" });
      this.#settle(ticket, {
        kind: "dropped",
        error: { code: "no_worker", message: `no worker had a free slot within ${this.#queueTimeoutMs} ms` },
      });
    }, this.#queueTimeoutMs);
    ticket.queueTimer.unref?.();
  }

  #unqueue(ticket: Ticket): void {
    const index = this.#queue.indexOf(ticket);
    if (index >= 0) this.#queue.splice(index, 1);
    clearTimeout(ticket.queueTimer);
    ticket.queueTimer = undefined;
    this.#metrics?.queueDepth.set(this.#queue.length);
  }

  #settle(ticket: Ticket, outcome: WorkOutcome): void {
    if (!this.#tickets.delete(ticket.workId)) return;
    clearTimeout(ticket.queueTimer);
    clearTimeout(ticket.deadline);
    try {
      ticket.hooks.onSettled?.(outcome);
    } catch (error) {
      this.#logger.error("dispatch work hook failed", { workId: ticket.workId, error });
    }
  }

  #byMessageId(messageId: string): Ticket | undefined {
    for (const ticket of this.#tickets.values()) {
      if (ticket.work.kind === "message" && ticket.work.message.id === messageId) return ticket;
    }
    return undefined;
  }
}
