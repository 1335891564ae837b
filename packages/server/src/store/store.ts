import type {
  ApprovalOutcome,
  ApprovalRequest,
  ConversationItem,
  JsonObject,
  SessionEvent,
  ToolLocation,
  ToolResult,
  ToolSpec,
} from "@patchbay/protocol";

/**
 * A session as the store keeps it.
 *
 * @example
 * ```ts
 * const record: SessionRecord = { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
 * ```
 */
export interface SessionRecord {
  id: string;
  agent: string;
  userId: string;
  metadata: JsonObject;
  createdAt: number;
  lastSeq: number;
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * A session event before the store gave it its sequence number.
 *
 * @example
 * ```ts
 * const draft: EventDraft = { type: "tool.held", callId: "call_1" };
 * ```
 */
export type EventDraft = DistributiveOmit<SessionEvent, "seq" | "sessionId">;

/**
 * One reply the agent worked on. A turn still `running` when the server starts was cut off by a
 * crash and is ended as failed.
 *
 * @example
 * ```ts
 * const turn: TurnRecord = { responseId: "r_1", sessionId: "s_1", status: "running", startedAt: Date.now() };
 * ```
 */
export interface TurnRecord {
  responseId: string;
  sessionId: string;
  commandId?: string;
  status: "queued" | "running" | "completed" | "interrupted" | "failed";
  startedAt: number;
  endedAt?: number;
}

/**
 * A tool call that was handed to a page or a worker and has no result yet, as a store keeps it
 * for whoever records one. The server's own page calls write none: a page call's `tool.call`
 * event in the log is its record, and recovery ends an interrupted call from its conversation
 * item; recovery still clears any record an older server left.
 *
 * @example
 * ```ts
 * const call: PendingToolCallRecord = { callId: "call_1", sessionId: "s_1", responseId: "r_1", name: "get_location",
 *   arguments: {}, location: "page", attempt: 1, deadline: Date.now() + 30_000, createdAt: Date.now() };
 * ```
 */
export interface PendingToolCallRecord {
  callId: string;
  sessionId: string;
  responseId: string;
  name: string;
  arguments: JsonObject;
  location: ToolLocation;
  attempt: number;
  /** When the call times out, in ms since the epoch. */
  deadline: number;
  createdAt: number;
}

/**
 * An approval question and, once answered, its outcome.
 *
 * @example
 * ```ts
 * const approval: ApprovalRecord = { sessionId: "s_1", request, outcome: "allowed", decidedAt: Date.now() };
 * ```
 */
export interface ApprovalRecord {
  sessionId: string;
  request: ApprovalRequest;
  outcome?: ApprovalOutcome;
  decidedAt?: number;
}

/**
 * Everything that changes together when something happens in a session. The store applies it in
 * one transaction: either every row changes or none does.
 *
 * @example
 * ```ts
 * await store.commit("s_1", { command: { commandId: "c_1", kind: "message" }, items: [userItem], events: [created] });
 * ```
 */
export interface SessionChange {
  /** Record this command id; if the session already has it, nothing in the change is applied. */
  command?: { commandId: string; kind: string };
  /** Appended to the event log in order, each with the next sequence number. */
  events?: EventDraft[];
  /** Inserted (at the end) or replaced (in place) by id. */
  items?: ConversationItem[];
  turn?: TurnRecord;
  pendingCalls?: PendingToolCallRecord[];
  /** Call ids whose pending record is removed (the call finished). */
  settledCalls?: string[];
  approvals?: ApprovalRecord[];
  /** The session's page tools as last declared (offered to the model while no page is attached). */
  pageTools?: ToolSpec[];
  /**
   * The fencing token of the session's lease this writer holds (cluster mode): the store refuses
   * the whole change with a `LeaseLostError` unless the lease still carries this token.
   */
  fence?: number;
}

/**
 * What a commit did: the events as stored (with `seq`), or `duplicate` when the change carried a
 * command id the session had already seen.
 *
 * @example
 * ```ts
 * const { events, duplicate } = await store.commit(sessionId, change);
 * ```
 */
export interface CommitResult {
  events: SessionEvent[];
  duplicate: boolean;
}

/**
 * One change of a {@link Store.commitMany} group.
 *
 * @example
 * ```ts
 * const write: GroupedWrite = { sessionId: "s_1", change: { events: [{ type: "tool.held", callId: "call_1" }] } };
 * ```
 */
export interface GroupedWrite {
  sessionId: string;
  change: SessionChange;
}

/**
 * What {@link Store.commitMany} did with one change: its result, or the error that rolled it back.
 *
 * @example
 * ```ts
 * if (!outcome.ok) logger.error("commit failed", { error: outcome.error });
 * ```
 */
export type GroupedWriteResult = { ok: true; result: CommitResult } | { ok: false; error: unknown };

/**
 * Where sessions, conversations, the event log, commands, pending calls, approvals and tool
 * results live. The embedded default is {@link SqliteStore}; a server database implements the
 * same interface. Methods are async so such a store can do I/O; callers serialize the commits of
 * one session, so an implementation need not order concurrent commits of the same session.
 *
 * @example
 * ```ts
 * const store: Store = new SqliteStore({ dataDir: "./data" });
 * await store.createSession({ id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: Date.now(), lastSeq: 0 });
 * ```
 */
export interface Store {
  createSession(record: SessionRecord): Promise<void>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  listSessions(query: { agent: string; userId?: string; limit?: number }): Promise<SessionRecord[]>;
  /** How many sessions the user has across these agents (for `maxSessionsPerUser`; optional). */
  countSessions?(query: { userId: string; agents: readonly string[] }): Promise<number>;
  /** Removes a session and everything that belongs to it. Returns whether it existed. */
  deleteSession(id: string): Promise<boolean>;
  commit(sessionId: string, change: SessionChange): Promise<CommitResult>;
  /**
   * Optional group commit: several changes (of one or more sessions, in order) in one
   * transaction, each applied as {@link commit} would or not at all (one that fails is rolled
   * back alone and its slot holds the error). Rejects when the transaction itself fails, in
   * which case none was applied. Sessions commit through it when the store has it.
   */
  commitMany?(writes: readonly GroupedWrite[]): Promise<GroupedWriteResult[]>;
  /** Events with `seq > afterSeq`, in order, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit?: number): Promise<SessionEvent[]>;
  conversation(sessionId: string): Promise<ConversationItem[]>;
  /** The page tools last declared for the session (`[]` when none). */
  pageTools(sessionId: string): Promise<ToolSpec[]>;
  hasCommand(sessionId: string, commandId: string): Promise<boolean>;
  /** Turns in a status, across sessions (recovery looks for `running` and `queued`). */
  turnsWithStatus(status: TurnRecord["status"]): Promise<TurnRecord[]>;
  pendingCalls(sessionId?: string): Promise<PendingToolCallRecord[]>;
  approvals(sessionId: string, options?: { open?: boolean }): Promise<ApprovalRecord[]>;
  /** Keeps the first result stored for a call; returns `false` when one was already there. */
  putToolResult(sessionId: string, callId: string, result: ToolResult): Promise<boolean>;
  getToolResult(callId: string): Promise<ToolResult | undefined>;
  /** Session leases, in a store several servers share (cluster mode); absent otherwise. */
  readonly leases?: SessionLeases;
  close(): Promise<void>;
}

/**
 * Who owns a session in a cluster: the node holding its lease until `expiresAt` (the store's
 * clock, ms since the epoch), and the fencing token every write of that owner carries.
 *
 * @example
 * ```ts
 * const lease: SessionLease = { sessionId: "s_1", nodeId: "n_a", token: 3, expiresAt: Date.now() + 15_000 };
 * ```
 */
export interface SessionLease {
  sessionId: string;
  nodeId: string;
  token: number;
  expiresAt: number;
}

/**
 * What {@link SessionLeases.acquire} did: the lease is this node's (`fresh` when it was not this
 * node's live lease before, so the session's leftovers must be recovered), or another node's.
 *
 * @example
 * ```ts
 * const attempt = await store.leases!.acquire("s_1", "n_a", 15_000);
 * if (!attempt.acquired) console.log(`owned by ${attempt.owner}`);
 * ```
 */
export type LeaseAttempt =
  | { acquired: true; token: number; fresh: boolean }
  | { acquired: false; owner: string; expiresAt: number };

/**
 * Session leases with fencing tokens (docs/cluster.md). A token only grows: taking a lease that
 * expired or was released gives a token higher than any before it, so a commit fenced with an
 * older token is refused. Times are the store's clock.
 *
 * @example
 * ```ts
 * const attempt = await leases.acquire("s_1", "n_a", 15_000);
 * if (attempt.acquired) await store.commit("s_1", { fence: attempt.token, events });
 * ```
 */
export interface SessionLeases {
  /** Takes the lease when it is free, expired or already this node's (then only extends it). */
  acquire(sessionId: string, nodeId: string, ttlMs: number): Promise<LeaseAttempt>;
  /** Extends this node's lease; `false` when it is no longer this node's with this token. */
  renew(sessionId: string, nodeId: string, token: number, ttlMs: number): Promise<boolean>;
  /** Lets the lease go at once (it keeps its token, so the next owner's is higher). */
  release(sessionId: string, nodeId: string, token: number): Promise<void>;
  /** The session's lease as stored, if it ever had one. */
  get(sessionId: string): Promise<SessionLease | undefined>;
  /** Leases that expired without being released (their node died), oldest first, at most `limit`. */
  expired(limit: number): Promise<SessionLease[]>;
}
