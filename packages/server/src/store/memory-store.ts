import type { ConversationItem, SessionEvent, ToolResult, ToolSpec } from "@patchbay/protocol";
import { rememberEventJson } from "./change-json";
import { MemoryLeases } from "./memory-leases";
import type {
  ApprovalRecord,
  CommitResult,
  PendingToolCallRecord,
  SessionChange,
  SessionLeases,
  SessionRecord,
  Store,
  TurnRecord,
} from "./store";

interface SessionState {
  record: SessionRecord;
  /** Conversation items by id, in insertion order (a Map keeps it; a replaced id keeps its place). */
  items: Map<string, string>;
  events: string[];
  commands: Set<string>;
  pageTools: string;
  approvals: Map<string, ApprovalRecord>;
}

/**
 * A {@link Store} held in this process's memory: for tests, scripts and development servers that
 * need no data on disk. Everything is gone when the process ends. It keeps the contract of the
 * durable stores exactly (a change applies whole or not at all, command ids, ordering); values
 * are copied in and out through JSON, as a database would, so a caller that mutates an object
 * after a commit changes nothing stored.
 *
 * @example
 * ```ts
 * const server = await createServer({ port: 0, store: new MemoryStore(), agents, apiKey, secret });
 * ```
 */
export class MemoryStore implements Store {
  private readonly sessions = new Map<string, SessionState>();
  private readonly turns = new Map<string, TurnRecord>();
  private readonly pending = new Map<string, string>();
  private readonly results = new Map<string, string>();
  private closed = false;
  /** Session leases (cluster mode), with `now` as their clock. */
  readonly leases: SessionLeases;
  private readonly leaseRows: MemoryLeases;

  constructor(options: { now?: () => number } = {}) {
    this.leaseRows = new MemoryLeases(options.now);
    this.leases = this.leaseRows;
  }

  async createSession(record: SessionRecord): Promise<void> {
    this.open();
    if (this.sessions.has(record.id)) throw new Error(`session ${record.id} already exists`);
    this.sessions.set(record.id, {
      record: copy(record),
      items: new Map(),
      events: [],
      commands: new Set(),
      pageTools: "[]",
      approvals: new Map(),
    });
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const state = this.sessions.get(id);
    return state ? copy(state.record) : undefined;
  }

  async listSessions(query: { agent: string; userId?: string; limit?: number }): Promise<SessionRecord[]> {
    const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
    return [...this.sessions.values()]
      .map((state) => state.record)
      .filter((r) => r.agent === query.agent && (query.userId === undefined || r.userId === query.userId))
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, limit)
      .map(copy);
  }

  async deleteSession(id: string): Promise<boolean> {
    const existed = this.sessions.delete(id);
    this.leaseRows.forget(id);
    for (const [key, turn] of this.turns) if (turn.sessionId === id) this.turns.delete(key);
    for (const [key, body] of this.pending)
      if (parse<PendingToolCallRecord>(body).sessionId === id) this.pending.delete(key);
    for (const [key, body] of this.results)
      if (parse<{ sessionId: string }>(body).sessionId === id) this.results.delete(key);
    return existed;
  }

  async commit(sessionId: string, change: SessionChange): Promise<CommitResult> {
    this.open();
    const state = this.sessions.get(sessionId);
    // Everything that can fail is checked before anything changes: a change applies whole or not at all.
    if (change.fence !== undefined) this.leaseRows.check(sessionId, change.fence);
    if (change.events && change.events.length > 0 && !state) {
      throw new Error(`session ${sessionId} does not exist`);
    }
    if (change.command && state) {
      if (state.commands.has(change.command.commandId)) return { events: [], duplicate: true };
      state.commands.add(change.command.commandId);
    }
    if (state) {
      for (const item of change.items ?? []) state.items.set(item.id, JSON.stringify(item));
      if (change.pageTools) state.pageTools = JSON.stringify(change.pageTools);
      for (const approval of change.approvals ?? []) state.approvals.set(approval.request.id, copy(approval));
    }
    if (change.turn) this.turns.set(change.turn.responseId, copy(change.turn));
    for (const call of change.pendingCalls ?? []) this.pending.set(call.callId, JSON.stringify(call));
    for (const callId of change.settledCalls ?? []) this.pending.delete(callId);
    const events: SessionEvent[] = [];
    if (state && change.events) {
      for (const draft of change.events) {
        const body = JSON.stringify({ ...draft, sessionId, seq: state.record.lastSeq + 1 });
        state.record.lastSeq += 1;
        state.events.push(body);
        const event = parse<SessionEvent>(body);
        rememberEventJson(event, body);
        events.push(event);
      }
    }
    return { events, duplicate: false };
  }

  async readEvents(
    sessionId: string,
    afterSeq: number,
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<SessionEvent[]> {
    const state = this.sessions.get(sessionId);
    if (!state) return [];
    // Events are stored densely from seq 1, so seq n sits at index n - 1.
    const from = Math.max(0, Math.floor(afterSeq));
    return state.events.slice(from, from + Math.max(0, limit)).map((body) => parse<SessionEvent>(body));
  }

  async conversation(sessionId: string): Promise<ConversationItem[]> {
    const state = this.sessions.get(sessionId);
    return state ? [...state.items.values()].map((body) => parse<ConversationItem>(body)) : [];
  }

  async pageTools(sessionId: string): Promise<ToolSpec[]> {
    const state = this.sessions.get(sessionId);
    return state ? parse<ToolSpec[]>(state.pageTools) : [];
  }

  async hasCommand(sessionId: string, commandId: string): Promise<boolean> {
    return this.sessions.get(sessionId)?.commands.has(commandId) ?? false;
  }

  async turnsWithStatus(status: TurnRecord["status"]): Promise<TurnRecord[]> {
    return [...this.turns.values()]
      .filter((turn) => turn.status === status)
      .sort((a, b) => a.startedAt - b.startedAt)
      .map(copy);
  }

  async pendingCalls(sessionId?: string): Promise<PendingToolCallRecord[]> {
    const calls = [...this.pending.values()].map((body) => parse<PendingToolCallRecord>(body));
    return sessionId === undefined ? calls : calls.filter((call) => call.sessionId === sessionId);
  }

  async approvals(sessionId: string, options: { open?: boolean } = {}): Promise<ApprovalRecord[]> {
    const state = this.sessions.get(sessionId);
    if (!state) return [];
    const all = [...state.approvals.values()];
    return (options.open ? all.filter((a) => a.outcome === undefined) : all).map(copy);
  }

  async putToolResult(sessionId: string, callId: string, result: ToolResult): Promise<boolean> {
    this.open();
    if (this.results.has(callId)) return false;
    this.results.set(callId, JSON.stringify({ sessionId, result }));
    return true;
  }

  async getToolResult(callId: string): Promise<ToolResult | undefined> {
    const body = this.results.get(callId);
    return body ? parse<{ result: ToolResult }>(body).result : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private open(): void {
    if (this.closed) throw new Error("the store is closed");
  }
}

function copy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function parse<T>(body: string): T {
  return JSON.parse(body) as T;
}
