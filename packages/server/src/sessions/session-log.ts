import type { ModelMessage } from "@patchbay/models";
import type { ConversationItem, SessionEvent, SessionInfo, ToolSpec } from "@patchbay/protocol";
import { EventEmitter } from "eventemitter3";
import type { AgentConfig } from "../config/agent-config";
import { ServerError } from "../errors";
import type { Logger } from "../observability/logger";
import type { CommitResult, EventDraft, SessionChange, SessionRecord, Store } from "../store/store";
import { ModelMessageLog } from "../turns/model-message-log";
import { eventForEndUsers } from "../turns/reasoning-state";
import {
  type Admission,
  joinedGroups,
  type QueuedChange,
  rejectGroup,
  resolveGroup,
  waitsForAdmission,
  withoutFailedAdmissions,
} from "./change-queue";
import { ConversationWindow } from "./conversation-window";
import { type GroupCommit, type GroupCommitMember, groupCommitFor, type PreparedWrite } from "./group-commit";
import { PageToolRegistry } from "./page-tool-registry";

/**
 * The most command ids a session log keeps to answer {@link SessionLog.isNewCommand} from memory;
 * a session with more asks the store, as one loaded from it does.
 */
export const MAX_KNOWN_COMMANDS = 512;

/** The command ids of a session that has none yet: one shared set, as idle sessions are many. */
const NO_COMMANDS: ReadonlySet<string> = new Set();

/** How a queued change stands to admitted messages (see `QueuedChange`). */
type AdmissionTags = { admits?: Admission | undefined; after?: Admission | undefined };

function queuedChange(
  change: SessionChange,
  resolve: QueuedChange["resolve"],
  reject: QueuedChange["reject"],
  tags: AdmissionTags,
): QueuedChange {
  const entry: QueuedChange = { change, resolve, reject };
  if (tags.admits) entry.admits = tags.admits;
  if (tags.after) entry.after = tags.after;
  return entry;
}

/** A `text.delta` event before the log gives it a seq (see {@link SessionLog.appendTextDelta}). */
export type TextDeltaDraft = Extract<EventDraft, { type: "text.delta" }>;

/**
 * A listener of a session's live events (one per attached socket): a function, or an object
 * whose `deliver` gets them and whose `closed` is told when the log closes (before `closed`
 * listeners of the log are), so one object per attachment needs no closure and no listener.
 */
export type SessionSubscriber = ((event: SessionEvent) => void) | SessionListener;

/** A {@link SessionSubscriber} that is an object: its methods are called with it as `this`. */
export interface SessionListener {
  deliver(event: SessionEvent): void;
  closed?(reason: SessionCloseReason): void;
}

/** Why a session log closed (see {@link SessionLog.close}). */
export type SessionCloseReason = "deleted" | "unloaded" | "shutdown" | "lease_lost";

// Shared by every session until it has a subscriber or a write: an idle session's memory is
// mostly what it holds. The subscribers are one subscriber as it is (most sessions have one
// socket attached) or, for more, a list replaced and never changed in place, so a broadcast goes
// over the list as it was when it began.
const NO_SUBSCRIBERS: readonly SessionSubscriber[] = Object.freeze([]);
type Subscribers = SessionSubscriber | readonly SessionSubscriber[];
const isList = Array.isArray as (subscribers: Subscribers) => subscribers is readonly SessionSubscriber[];
const SETTLED: Promise<unknown> = Promise.resolve();
// What a session without page tools offers (a registry without tools returns one like it).
const NO_PAGE_TOOLS = Object.freeze([]) as unknown as ToolSpec[];
// Never changed in place: a change is queued in a new list when none wait (see queueChange).
const NO_CHANGES = Object.freeze([]) as unknown as QueuedChange[];

/** Events of a {@link SessionLog}. */
export interface SessionLogEvents {
  /** Every committed event, after it is in the log. */
  event: (event: SessionEvent) => void;
  /** The set of page tools or the sockets holding them changed. */
  "page-tools": () => void;
  /** The runtime stopped: the session was deleted, unloaded, the server is closing or lost its lease. */
  closed: (reason: SessionCloseReason) => void;
}

/**
 * One loaded session's log: the one place its changes are committed (in order, one at a time) and
 * then broadcast to the sockets attached to it (its `LiveSession` holds it as `runtime`). It keeps
 * the conversation in memory so a turn can read it without a query, and knows which attached
 * connection brought which page tools.
 */
export class SessionLog extends EventEmitter<SessionLogEvents> implements GroupCommitMember {
  readonly id: string;
  readonly agent: AgentConfig;
  private record: SessionRecord;
  /** The conversation in memory: a bounded window of it once `limitWindow` was called. */
  private readonly window: ConversationWindow;
  /** The model's messages, kept as the conversation changes; made on the first turn. */
  private messageLog: ModelMessageLog | undefined;
  private subscribers: Subscribers = NO_SUBSCRIBERS;
  /** Made when the session has page tools stored or a connection brings some: most have none. */
  private pageTools: PageToolRegistry | undefined;
  private chain: Promise<unknown> = SETTLED;
  /** Changes waiting for the next write, in order (see {@link enqueue}); shared while none wait. */
  private queued: QueuedChange[] = NO_CHANGES;
  /** Events appended and calls settled this tick, written together at its end (see {@link append}). */
  private pendingAppends:
    | {
        events: EventDraft[];
        settledCalls: string[];
        done: Promise<SessionEvent[]>;
        resolve: (events: SessionEvent[]) => void;
        reject: (error: unknown) => void;
        /** The admission undecided when the batch was begun (see {@link undecidedAdmission}). */
        after: Admission | undefined;
        /** The `text.delta` this batch made by joining pieces (see {@link appendTextDelta}). */
        joinedDelta: TextDeltaDraft | undefined;
      }
    | undefined;
  private closed = false;
  /**
   * The message whose command id was checked new and whose change is not written yet (see
   * {@link commit}): every change queued meanwhile is written only if it was.
   */
  private admission: Admission | undefined;
  /** Command ids of changes queued and not written yet (made on the first). */
  private commandsQueued: Map<string, number> | undefined;
  /**
   * Every command id the session's store has, while this log knows them all: it was made for
   * the session at its creation, every write of a command since was applied here, none failed,
   * and there are at most {@link MAX_KNOWN_COMMANDS}. Undefined otherwise, and for good.
   */
  private knownCommands: ReadonlySet<string> | undefined;
  /** The store's group commit, when it has one: changes are then written with other sessions'. */
  private readonly group: GroupCommit | undefined;

  constructor(
    record: SessionRecord,
    agent: AgentConfig,
    conversation: ConversationItem[],
    private readonly store: Store,
    /** The server's logger; {@link logger} names the session in its lines. */
    private readonly serverLogger: Logger,
    pageTools: ToolSpec[] = [],
    /**
     * The session was created just now by this process, which alone writes it (no cluster): it
     * has no commands yet, and every one it gets is written through this log.
     */
    created = false,
  ) {
    super();
    if (created) this.knownCommands = NO_COMMANDS;
    if (pageTools.length > 0) this.pageTools = new PageToolRegistry(pageTools);
    this.id = record.id;
    this.agent = agent;
    this.record = record;
    this.window = new ConversationWindow(conversation.map((item) => Object.freeze(item)));
    this.group = groupCommitFor(store);
  }

  /**
   * A logger whose lines name the session (`sessionId`): made when asked for, as few loaded
   * sessions ever write a line and a child logger held by each would cost about 80 bytes.
   */
  get logger(): Logger {
    return this.serverLogger.child({ sessionId: this.id });
  }

  /** The session as the wire describes it. */
  get info(): SessionInfo {
    return { ...this.record };
  }

  get userId(): string {
    return this.record.userId;
  }

  get lastSeq(): number {
    return this.record.lastSeq;
  }

  /**
   * The conversation as it stands: a new array (the caller may change it) of the session's items.
   * The items themselves are shared, not copied: a committed item is never changed in place (a
   * change commits a new item with the same id, which replaces it), and each is frozen, so
   * handing them out is safe and costs one array copy instead of a deep clone of every item.
   */
  conversation(): ConversationItem[] {
    return this.window.all();
  }

  /**
   * The model's messages for the conversation in memory, the agent's instructions first: kept as
   * items are added and replaced, so a round rebuilds only what changed (see ModelMessageLog).
   * `overrides` are items read in place of the ones with their ids (a call's final item, while
   * its commit is queued).
   */
  modelMessages(overrides?: readonly ConversationItem[]): ModelMessage[] {
    this.messageLog ??= new ModelMessageLog(this.window);
    return this.messageLog.read(this.agent.instructions, overrides);
  }

  /** Keeps at most `items` conversation items in memory (the store keeps them all). */
  limitWindow(items: number): void {
    this.window.setLimit(items);
  }

  /** The whole conversation's size (items and JSON bytes), and whether memory holds only part. */
  get conversationSize(): { items: number; bytes: number; partial: boolean } {
    return { items: this.window.itemCount, bytes: this.window.byteCount, partial: this.window.partial };
  }

  /** The last `count` items of the conversation (all of them when there are fewer), oldest first. */
  recentConversation(count: number): ConversationItem[] {
    return this.window.last(count);
  }

  /** One conversation item by id. */
  item(id: string): ConversationItem | undefined {
    return this.window.get(id);
  }

  /**
   * Applies a change in one transaction, after every change committed before it, then hands the
   * new events to every subscriber. Resolves with the events as stored (with `seq`), or `null`
   * when the change carried a command id the session already had.
   *
   * `admits`: the change is a message's whose command id {@link isNewCommand} found new just
   * before, and whose turn starts now without waiting for it. The turn's first changes may then
   * share its transaction (the message, the turn started and its first calls, one commit), and
   * every change queued until it is written is written only if it was: when it fails (or is a
   * duplicate after all), they are rejected, so nothing of the turn is in the log without the
   * message it answers.
   */
  commit(change: SessionChange, options?: { admits: true }): Promise<SessionEvent[] | null> {
    if (options?.admits) {
      this.flushAppends();
      const admission: Admission = { outcome: undefined };
      const stored = this.enqueue(change, { admits: admission });
      this.admission = admission;
      return stored;
    }
    const batch = this.pendingAppends;
    if (batch && change.command === undefined && !this.pendsSettled(change, batch.settledCalls)) {
      // Appends and settles made before this commit go first, in the same transaction: a page
      // tool call settles one call and delivers the next in one tick, one transaction for both.
      this.pendingAppends = undefined;
      const merged: SessionChange = {
        ...change,
        events: [...batch.events, ...(change.events ?? [])],
        settledCalls: [...batch.settledCalls, ...(change.settledCalls ?? [])],
      };
      const stored = this.enqueue(merged, { after: batch.after ?? this.undecidedAdmission() });
      const appended = batch.events.length;
      stored.then((all) => batch.resolve((all ?? []).slice(0, appended)), batch.reject);
      return stored.then((all) => (all === null ? null : all.slice(appended)));
    }
    // Appends made before this commit are logged before it.
    this.flushAppends();
    return this.enqueue(change);
  }

  /**
   * Whether the change records a call pending that the batch settles: one transaction applies
   * pending records before removals, so the two must stay in their own, in order.
   */
  private pendsSettled(change: SessionChange, settled: string[]): boolean {
    if (settled.length === 0 || !change.pendingCalls?.length) return false;
    return change.pendingCalls.some((call) => settled.includes(call.callId));
  }

  /**
   * Removes a finished call's pending record, in the transaction of this tick's appends (see
   * {@link append}) rather than one of its own: nothing waits for it, and a crash before it is
   * written only delivers the call again, as a crash just before the call finished would.
   */
  settleCall(callId: string): Promise<void> {
    const batch = this.appendBatch();
    batch.settledCalls.push(callId);
    return batch.done.then(() => undefined);
  }

  /**
   * Commits events only. The appends of one tick (a burst of `text.delta` from a model that
   * streams fast) are gathered and written in one transaction at the end of the tick, instead of
   * one transaction each: every event still gets its own `seq` and is logged and broadcast in
   * the order appended, and a {@link commit} made meanwhile writes the gathered events first.
   */
  append(...events: EventDraft[]): Promise<SessionEvent[]> {
    const batch = this.appendBatch();
    const start = batch.events.length;
    batch.events.push(...events);
    return batch.done.then((all) => all.slice(start, start + events.length));
  }

  /**
   * Appends a piece of a reply's text ({@link append}), joined to the piece appended before it
   * in this tick when both are of one message: the words a model streams in one burst are one
   * `text.delta` (one seq, one frame to each socket, one event to decode) instead of one per
   * piece. The text is the same concatenated (docs/protocol.md); a burst that spans ticks is
   * one delta per tick. Resolves once the text is in the log.
   */
  appendTextDelta(delta: TextDeltaDraft): Promise<unknown> {
    const batch = this.appendBatch();
    const events = batch.events;
    const last = events[events.length - 1];
    if (last?.type === "text.delta" && last.itemId === delta.itemId && last.responseId === delta.responseId) {
      // The joined delta is the batch's own (a copy made at the first join), so later pieces are
      // added to it in place instead of copying it again for every word.
      if (last === batch.joinedDelta) last.delta += delta.delta;
      else events[events.length - 1] = batch.joinedDelta = { ...last, delta: last.delta + delta.delta };
    } else {
      events.push(delta);
    }
    return batch.done;
  }

  private appendBatch(): NonNullable<SessionLog["pendingAppends"]> {
    let batch = this.pendingAppends;
    if (!batch) {
      let resolve!: (events: SessionEvent[]) => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<SessionEvent[]>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      batch = {
        events: [],
        settledCalls: [],
        done,
        resolve,
        reject,
        after: this.undecidedAdmission(),
        joinedDelta: undefined,
      };
      this.pendingAppends = batch;
      if (this.group) this.group.schedule(this);
      else setImmediate(() => this.flushAppends());
    }
    return batch;
  }

  /** Queues the gathered appends as one transaction (see {@link append}). */
  private flushAppends(): void {
    const batch = this.pendingAppends;
    if (!batch) return;
    this.pendingAppends = undefined;
    this.enqueue({ events: batch.events, settledCalls: batch.settledCalls }, { after: batch.after }).then(
      (stored) => batch.resolve(stored ?? []),
      batch.reject,
    );
  }

  /**
   * The group commit takes this session's queued changes (the gathered appends last, as a
   * flush at this point would queue them), joined as {@link writeQueued} joins them.
   */
  takeWrites(): PreparedWrite[] {
    const batch = this.pendingAppends;
    if (batch) {
      this.pendingAppends = undefined;
      this.queueChange(
        queuedChange(
          { events: batch.events, settledCalls: batch.settledCalls },
          (stored) => batch.resolve(stored ?? []),
          batch.reject,
          { after: batch.after },
        ),
      );
    }
    const queued = withoutFailedAdmissions(this.queued);
    this.queued = NO_CHANGES;
    const writes: PreparedWrite[] = [];
    const groups = joinedGroups(queued, (a, b, head) => this.joins(a, b, head));
    for (let g = 0; g < groups.length; g++) {
      const { group, change, slots } = groups[g]!;
      if (waitsForAdmission(group)) {
        // Its message's change is in this write and this one could not join it: it goes in
        // the next write, once that one is known to be in the log (and the rest after it).
        for (const rest of groups.slice(g)) for (const entry of rest.group) this.queueChange(entry);
        this.group?.schedule(this);
        break;
      }
      if (this.closed) {
        rejectGroup(group, new ServerError("not_found", `session ${this.id} is closed or was deleted`));
        continue;
      }
      writes.push({
        sessionId: this.id,
        change: this.forStore(change),
        settle: (outcome) => {
          if (!outcome.ok) {
            rejectGroup(group, outcome.error);
            return;
          }
          try {
            resolveGroup(group, this.applyResult(change, outcome.result), slots);
          } catch (error) {
            rejectGroup(group, error);
          }
        },
      });
    }
    return writes;
  }

  /**
   * Queues a change. The changes queued while the previous write ran (64 page tool calls
   * delivered in one tick, say) are written in as few transactions as they allow (see
   * {@link joins}), each still applied, logged and broadcast in order: a transaction costs far
   * more than its rows. One that fails fails the changes it carried, and no later one.
   */
  private enqueue(change: SessionChange, tags?: AdmissionTags): Promise<SessionEvent[] | null> {
    // Frozen from here, not only once applied: an item's JSON text is then made once and shared
    // by the store, the quota's measure and the workers' frames (store/item-json.ts).
    if (change.items) for (const item of change.items) Object.freeze(item);
    const commandId = change.command?.commandId;
    if (commandId !== undefined) this.countCommand(commandId, 1);
    const stored = this.enqueueChange(change, { after: this.undecidedAdmission(), ...tags });
    if (commandId === undefined) return stored;
    const done = () => this.countCommand(commandId, -1);
    // A write that failed may still be in the store (a commit whose answer was lost): from now
    // on the store says which ids it has.
    const failed = () => {
      this.knownCommands = undefined;
      done();
    };
    stored.then(done, failed);
    return stored;
  }

  private enqueueChange(change: SessionChange, tags: AdmissionTags): Promise<SessionEvent[] | null> {
    if (this.group) {
      const group = this.group;
      const stored = new Promise<SessionEvent[] | null>((resolve, reject) => {
        this.queueChange(queuedChange(change, resolve, reject, tags));
        group.schedule(this);
      });
      // What settled() waits for: changes are written in the order queued, so the last one is last.
      this.chain = stored.catch(() => undefined);
      return stored;
    }
    return new Promise((resolve, reject) => {
      if (this.queueChange(queuedChange(change, resolve, reject, tags)) > 1) return; // a write of the queue is already scheduled
      const write = () => this.writeQueued();
      // The chain must survive a failed commit, or every later commit would fail with it.
      this.chain = this.chain.then(write, write).catch(() => undefined);
    });
  }

  /** Adds a change to the queue; how many wait now. */
  private queueChange(queued: QueuedChange): number {
    if (this.queued === NO_CHANGES) this.queued = [queued];
    else this.queued.push(queued);
    return this.queued.length;
  }

  /**
   * The admitted message whose change is not written yet, if any: a change made now (committed,
   * or appended to a batch begun now) is written only if that one was.
   */
  private undecidedAdmission(): Admission | undefined {
    const admission = this.admission;
    if (admission?.outcome !== undefined) this.admission = undefined;
    return this.admission;
  }

  private countCommand(commandId: string, delta: 1 | -1): void {
    this.commandsQueued ??= new Map();
    const count = (this.commandsQueued.get(commandId) ?? 0) + delta;
    if (count > 0) this.commandsQueued.set(commandId, count);
    else this.commandsQueued.delete(commandId);
    if (this.commandsQueued.size === 0) this.commandsQueued = undefined;
  }

  private async writeQueued(): Promise<void> {
    let queued = this.queued;
    this.queued = NO_CHANGES;
    // One group at a time: an admission decided by one is known before the next is written.
    while (queued.length > 0) {
      queued = withoutFailedAdmissions(queued);
      const [first] = joinedGroups(queued, (a, b, head) => this.joins(a, b, head), 1);
      if (!first) return;
      queued = queued.slice(first.group.length);
      try {
        resolveGroup(first.group, await this.write(first.change), first.slots);
      } catch (error) {
        rejectGroup(first.group, error);
      }
    }
  }

  /**
   * Whether `next` can share `change`'s transaction and come out as if written after it. Not
   * with a command id (a duplicate drops its whole change), unless `change`'s is a message's
   * checked new before (`head.admits`: its turn's first changes join it, and are rejected if it
   * was a duplicate after all); not two turn records of different turns (one row each; the
   * later record of one turn replaces the earlier), nor two page tool lists; and not when `next`
   * records pending a call `change` settles (a transaction writes pending records before
   * removals).
   */
  private joins(change: SessionChange, next: SessionChange, head: QueuedChange): boolean {
    if (next.command || (change.command && !head.admits)) return false;
    if (change.turn && next.turn && change.turn.responseId !== next.turn.responseId) return false;
    if (change.pageTools && next.pageTools) return false;
    return !this.pendsSettled(next, change.settledCalls ?? []);
  }

  private async write(change: SessionChange): Promise<SessionEvent[] | null> {
    if (this.closed) throw new ServerError("not_found", `session ${this.id} is closed or was deleted`);
    return this.applyResult(change, await this.store.commit(this.id, this.forStore(change)));
  }

  /** Items keep the model's reasoning state; the events clients get never do. */
  private forStore(change: SessionChange): SessionChange {
    return change.events ? { ...change, events: change.events.map(eventForEndUsers) } : change;
  }

  /** A written change takes effect here: its items, the last seq, and its events broadcast. */
  private applyResult(change: SessionChange, result: CommitResult): SessionEvent[] | null {
    const commandId = change.command?.commandId;
    const known = this.knownCommands;
    if (commandId !== undefined && known) {
      if (known.size >= MAX_KNOWN_COMMANDS) this.knownCommands = undefined;
      else if (known === NO_COMMANDS) this.knownCommands = new Set([commandId]);
      else (known as Set<string>).add(commandId);
    }
    if (result.duplicate) return null;
    for (const item of change.items ?? []) this.applyItem(item);
    const last = result.events.at(-1);
    if (last) this.record = { ...this.record, lastSeq: last.seq };
    for (const event of result.events) this.broadcast(event);
    return result.events;
  }

  /** Whether a change with this command id was applied to the session. */
  hasCommand(commandId: string): Promise<boolean> {
    return this.store.hasCommand(this.id, commandId);
  }

  /**
   * Whether no change with this command id was applied or is queued to be: the check a message
   * passes before its turn starts without waiting for its commit (see {@link commit}'s
   * `admits`). A change queued with the id is waited for first, so the answer is the store's.
   * The caller keeps other messages of the session from being checked meanwhile. A log that
   * knows every command id the session has (see {@link knownCommands}) answers without asking
   * the store; the message's own transaction still refuses an id the store has.
   */
  async isNewCommand(commandId: string): Promise<boolean> {
    for (;;) {
      while (this.commandsQueued?.has(commandId)) await this.settled();
      if (this.knownCommands) return !this.knownCommands.has(commandId);
      const known = await this.store.hasCommand(this.id, commandId);
      if (known) return false;
      // Queued while the store was asked: it is written first, so ask again once it is.
      if (!this.commandsQueued?.has(commandId)) return true;
    }
  }

  /**
   * Logged events after `afterSeq`, at most `limit`: every event up to {@link lastSeq}, and maybe
   * some of a change being applied (its events reach subscribers when it is, so a subscriber reads
   * this after subscribing and skips what it saw). A reader already at `lastSeq` (an attach right
   * after `session.create`, a resume that missed nothing) is answered without asking the store.
   */
  readEvents(afterSeq: number, limit?: number): Promise<SessionEvent[]> {
    if (afterSeq >= this.record.lastSeq) return Promise.resolve([]);
    return this.store.readEvents(this.id, afterSeq, limit);
  }

  /** Waits until every commit and append made so far is applied. */
  settled(): Promise<void> {
    this.flushAppends();
    return this.chain.then(() => undefined);
  }

  /** Starts delivering live events to `subscriber`; returns the function that stops it. */
  subscribe(subscriber: SessionSubscriber): () => void {
    this.addSubscriber(subscriber);
    return () => this.removeSubscriber(subscriber);
  }

  /** {@link subscribe} without the closure that stops it: {@link removeSubscriber} does. */
  addSubscriber(subscriber: SessionSubscriber): void {
    const current = this.subscribers;
    if (this.hasSubscriber(subscriber)) return;
    // One is kept as it is; a literal of two is sized to fit (a spread would leave room to grow).
    if (!isList(current)) this.subscribers = [current, subscriber];
    else this.subscribers = current.length === 0 ? subscriber : [...current, subscriber];
  }

  /** Stops delivering live events to `subscriber`. */
  removeSubscriber(subscriber: SessionSubscriber): void {
    const current = this.subscribers;
    if (!this.hasSubscriber(subscriber)) return;
    const rest = isList(current) ? current.filter((s) => s !== subscriber) : NO_SUBSCRIBERS;
    this.subscribers = rest.length === 0 ? NO_SUBSCRIBERS : rest.length === 1 ? rest[0]! : rest;
  }

  get subscriberCount(): number {
    const current = this.subscribers;
    return isList(current) ? current.length : 1;
  }

  private hasSubscriber(subscriber: SessionSubscriber): boolean {
    const current = this.subscribers;
    return isList(current) ? current.includes(subscriber) : current === subscriber;
  }

  /** Sets the page tools one connection brings to this session (empty removes them). */
  setPageTools(connectionId: string, tools: ToolSpec[]): void {
    if (tools.length > 0) this.pageTools ??= new PageToolRegistry();
    const changed = this.pageTools?.set(connectionId, tools);
    if (changed) {
      // Kept with the session so a later turn (another process, after a restart) still offers
      // them, and a call made while no page is attached fails at once instead of as unknown.
      this.commit({ pageTools: changed }).catch((error) =>
        this.serverLogger.error("could not store page tools", { sessionId: this.id, error }),
      );
    }
    this.emit("page-tools");
  }

  /** Whether a connection that brought this tool is attached right now. */
  hasPageTool(name: string): boolean {
    return this.pageTools?.has(name) ?? false;
  }

  /** The session's page tools (see {@link PageToolRegistry.specs}). */
  pageToolSpecs(): ToolSpec[] {
    return this.pageTools ? this.pageTools.specs() : NO_PAGE_TOOLS;
  }

  /**
   * Stops accepting commits (the session was deleted or unloaded, the server is closing, or in a
   * cluster another node took the session's lease).
   */
  close(reason: SessionCloseReason = "unloaded"): void {
    if (this.closed) return;
    this.closed = true;
    const current = this.subscribers;
    for (const subscriber of isList(current) ? current : [current]) {
      if (typeof subscriber !== "function") subscriber.closed?.(reason);
    }
    this.emit("closed", reason);
    this.subscribers = NO_SUBSCRIBERS;
    this.pageTools?.clear();
    this.removeAllListeners();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private applyItem(item: ConversationItem): void {
    // Frozen since it was queued (shallowly: its fields are replaced, never edited) so that
    // sharing it through conversation() cannot let a reader change the session's copy by accident.
    this.window.apply(item);
  }

  private broadcast(event: SessionEvent): void {
    this.emit("event", event);
    const subscribers = this.subscribers;
    if (!isList(subscribers)) {
      this.deliver(subscribers, event);
      return;
    }
    for (const subscriber of subscribers) {
      // One removed by an earlier subscriber of this broadcast is skipped, as a Set would.
      if (this.subscribers !== subscribers && !this.hasSubscriber(subscriber)) continue;
      this.deliver(subscriber, event);
    }
  }

  private deliver(subscriber: SessionSubscriber, event: SessionEvent): void {
    try {
      if (typeof subscriber === "function") subscriber(event);
      else subscriber.deliver(event);
    } catch (error) {
      this.serverLogger.error("session subscriber failed", { sessionId: this.id, error });
    }
  }
}
