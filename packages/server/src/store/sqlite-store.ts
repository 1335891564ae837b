import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { ConversationItem, SessionEvent, ToolResult, ToolSpec } from "@patchbay/protocol";
import Database from "better-sqlite3";
import { ChangeJson } from "./change-json";
import { migrateSqlite } from "./sqlite-migrations";
import type {
  ApprovalRecord,
  CommitResult,
  GroupedWrite,
  GroupedWriteResult,
  PendingToolCallRecord,
  SessionChange,
  SessionRecord,
  Store,
  TurnRecord,
} from "./store";
import { WAL_BOUND_PAGES, WalCheckpointer } from "./wal-checkpointer";

/** A session's last event seq (schema step 5): the column is where it started, event_rows say the rest. */
const LAST_SEQ =
  "MAX(last_seq, COALESCE((SELECT MAX(e.last_seq) FROM event_rows e WHERE e.session_id = sessions.id), 0))";
const SESSION_COLUMNS = `id, agent, user_id, metadata, created_at, ${LAST_SEQ} AS last_seq`;
/** The statuses the partial index `turns_open` holds (schema step 7): the ones recovery looks for. */
const OPEN_STATUSES: ReadonlySet<TurnRecord["status"]> = new Set(["queued", "running"]);
/** Sessions whose last seq (and last item position) is kept in memory; past this many the memo starts over. */
const LAST_SEQ_MEMO = 50_000;
/** The item ids a session last inserted that the store keeps in memory (see `recentItems`). */
const RECENT_ITEMS = 8;

/**
 * Options of {@link SqliteStore}.
 *
 * @example
 * ```ts
 * new SqliteStore({ dataDir: "/var/lib/patchbay" });
 * ```
 */
export interface SqliteStoreOptions {
  /** The directory that holds `patchbay.sqlite` (and its WAL files). Created when missing. */
  dataDir: string;
  /** The file name inside `dataDir`. */
  fileName?: string;
}

interface SessionRow {
  id: string;
  agent: string;
  user_id: string;
  metadata: string;
  created_at: number;
  last_seq: number;
}

interface TurnRow {
  response_id: string;
  session_id: string;
  command_id: string | null;
  status: TurnRecord["status"];
  started_at: number;
  ended_at: number | null;
}

/**
 * The embedded default {@link Store}: one SQLite file in the data directory, in WAL mode so
 * readers (resume, the HTTP event log) never wait for the writer. Every {@link SessionChange} is
 * one transaction. Opening a file an older server wrote brings its schema up to date (the steps
 * in `sqlite-migrations.ts`); a file a newer server wrote is refused with a `StoreVersionError`.
 *
 * @example
 * ```ts
 * const store = new SqliteStore({ dataDir: "./data" });
 * const { events } = await store.commit("s_1", { events: [{ type: "tool.held", callId: "call_1" }] });
 * await store.close();
 * ```
 */
export class SqliteStore implements Store {
  /** The path of the database file. */
  readonly path: string;
  private readonly db: Database.Database;
  private readonly stmts: ReturnType<typeof prepare>;
  private readonly commitTx: (sessionId: string, change: SessionChange) => CommitResult;
  private readonly commitManyTx: (writes: readonly GroupedWrite[]) => GroupedWriteResult[];
  private readonly commitAllTx: (writes: readonly GroupedWrite[]) => GroupedWriteResult[];
  private readonly checkpoints: WalCheckpointer;
  /**
   * Each session's last event seq once read or written. One server writes a file, so the memo
   * stays true as long as the transactions that advanced it commit; one that fails clears it.
   */
  private readonly lastSeqs = new Map<string, number>();
  /** Each session's highest item position once read or written (schema step 6), kept as {@link lastSeqs}. */
  private readonly lastPositions = new Map<string, number>();
  /**
   * The ids of the items each session inserted last, so that a change to one of them (a call's
   * end, a streamed message's close) is an UPDATE at once instead of an INSERT that finds the row
   * and then the UPDATE. Only an order to try things in: a wrong guess costs a statement, never
   * a row. Bounded as {@link lastSeqs}.
   */
  private readonly recentItems = new Map<string, string[]>();

  constructor(options: SqliteStoreOptions) {
    mkdirSync(options.dataDir, { recursive: true });
    this.path = join(options.dataDir, options.fileName ?? "patchbay.sqlite");
    this.db = new Database(this.path);
    try {
      this.db.pragma("busy_timeout = 5000");
      // Before anything else touches the file: a database a newer server wrote is refused as it is.
      // Then WAL, before the schema steps: in the rollback journal each step's transaction of a
      // new file synced the file and its journal (36 fsyncs to open a new store, 6 now).
      migrateSqlite(this.db, undefined, (db) => {
        db.pragma("journal_mode = WAL");
        // NORMAL in WAL mode loses at most the last transactions on power loss, never corrupts.
        db.pragma("synchronous = NORMAL");
      });
    } catch (error) {
      this.db.close();
      throw error;
    }
    // Checkpoints run on a thread of their own; the connection's own is only a bound (wal-checkpointer.ts).
    this.db.pragma(`wal_autocheckpoint = ${WAL_BOUND_PAGES}`);
    this.checkpoints = new WalCheckpointer(this.path, () => {
      if (this.db.open) this.db.pragma("wal_autocheckpoint = 1000");
    });
    this.checkpoints.open();
    this.stmts = prepare(this.db);
    this.commitTx = this.db.transaction((sessionId: string, change: SessionChange) =>
      this.applyChange(sessionId, change),
    );
    // A group as one transaction without savepoints: the first try, since a change rarely throws
    // (see commitMany).
    this.commitAllTx = this.db.transaction((writes: readonly GroupedWrite[]) =>
      writes.map(
        (write): GroupedWriteResult => ({
          ok: true,
          result: this.applyChange(write.sessionId, write.change),
        }),
      ),
    );
    // Inside this transaction each commitTx is a savepoint: a change that throws is rolled back
    // alone, and the group's one COMMIT writes the rest.
    this.commitManyTx = this.db.transaction((writes: readonly GroupedWrite[]) =>
      writes.map((write): GroupedWriteResult => {
        try {
          return { ok: true, result: this.commitTx(write.sessionId, write.change) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
  }

  async createSession(record: SessionRecord): Promise<void> {
    this.stmts.insertSession.run(
      record.id,
      record.agent,
      record.userId,
      JSON.stringify(record.metadata),
      record.createdAt,
      record.lastSeq,
    );
    this.checkpoints.wrote();
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const row = this.stmts.getSession.get(id) as SessionRow | undefined;
    return row ? toSession(row) : undefined;
  }

  async listSessions(query: { agent: string; userId?: string; limit?: number }): Promise<SessionRecord[]> {
    const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
    const rows = (
      query.userId === undefined
        ? this.stmts.listByAgent.all(query.agent, limit)
        : this.stmts.listByAgentUser.all(query.agent, query.userId, limit)
    ) as SessionRow[];
    return rows.map(toSession);
  }

  async countSessions(query: { userId: string; agents: readonly string[] }): Promise<number> {
    let total = 0;
    for (const agent of query.agents) {
      total += (this.stmts.countByAgentUser.get(agent, query.userId) as { n: number }).n;
    }
    return total;
  }

  async deleteSession(id: string): Promise<boolean> {
    this.checkpoints.wrote();
    this.lastSeqs.delete(id);
    this.lastPositions.delete(id);
    this.recentItems.delete(id);
    return this.db.transaction(() => {
      const existed = this.stmts.deleteSession.run(id).changes > 0;
      for (const table of [
        "items",
        "event_rows",
        "commands",
        "turns",
        "pending_calls",
        "approvals",
        "tool_results",
      ]) {
        this.db.prepare(`DELETE FROM ${table} WHERE session_id = ?`).run(id);
      }
      return existed;
    })();
  }

  async commit(sessionId: string, change: SessionChange): Promise<CommitResult> {
    // One server per SQLite file: no leases, so a fenced write (cluster mode) cannot be honoured.
    if (change.fence !== undefined)
      throw new Error("the SQLite store keeps no session leases: a cluster needs Postgres");
    let result: CommitResult;
    try {
      result = this.commitTx(sessionId, change);
    } catch (error) {
      this.forgetMemos();
      throw error;
    }
    this.checkpoints.wrote();
    return result;
  }

  async commitMany(writes: readonly GroupedWrite[]): Promise<GroupedWriteResult[]> {
    let results: GroupedWriteResult[];
    try {
      // A group of one is its own transaction: no savepoint needed to roll it back alone.
      if (writes.length === 1) {
        results = [{ ok: true, result: this.commitTx(writes[0]!.sessionId, writes[0]!.change) }];
      } else {
        // Without a savepoint per change (two statements each, a third of a turn's), and only when
        // one throws (which rolled all of them back) again with them, so it fails alone.
        try {
          results = this.commitAllTx(writes);
        } catch {
          this.forgetMemos();
          results = this.commitManyTx(writes);
        }
      }
    } catch (error) {
      this.forgetMemos();
      if (writes.length === 1) return [{ ok: false, error }];
      throw error;
    }
    this.checkpoints.wrote();
    return results;
  }

  async readEvents(
    sessionId: string,
    afterSeq: number,
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<SessionEvent[]> {
    // A row holds a change's events; its key is the last one's seq, so every row with an event
    // after `afterSeq` is read, and `limit` rows hold at least `limit` such events.
    const rows = this.stmts.readEvents.all(sessionId, afterSeq, limit) as { body: string }[];
    const events: SessionEvent[] = [];
    for (const row of rows) {
      for (const event of JSON.parse(row.body) as SessionEvent[]) {
        if (event.seq > afterSeq && events.length < limit) events.push(event);
      }
    }
    return events;
  }

  async conversation(sessionId: string): Promise<ConversationItem[]> {
    const rows = this.stmts.conversation.all(sessionId) as { body: string }[];
    return rows.map((row) => JSON.parse(row.body) as ConversationItem);
  }

  async pageTools(sessionId: string): Promise<ToolSpec[]> {
    const row = this.stmts.getPageTools.get(sessionId) as { page_tools: string } | undefined;
    return row ? (JSON.parse(row.page_tools) as ToolSpec[]) : [];
  }

  async hasCommand(sessionId: string, commandId: string): Promise<boolean> {
    return this.stmts.getCommand.get(sessionId, commandId) !== undefined;
  }

  async turnsWithStatus(status: TurnRecord["status"]): Promise<TurnRecord[]> {
    // Queued and running turns are found by the partial index turns_open (schema step 7); the
    // planner uses it only when the query names its condition. Others are not indexed.
    const statement = OPEN_STATUSES.has(status) ? this.stmts.openTurnsByStatus : this.stmts.turnsByStatus;
    return (statement.all(status) as TurnRow[]).map((row) => {
      const turn: TurnRecord = {
        responseId: row.response_id,
        sessionId: row.session_id,
        status: row.status,
        startedAt: row.started_at,
      };
      if (row.command_id !== null) turn.commandId = row.command_id;
      if (row.ended_at !== null) turn.endedAt = row.ended_at;
      return turn;
    });
  }

  async pendingCalls(sessionId?: string): Promise<PendingToolCallRecord[]> {
    const rows = (
      sessionId === undefined ? this.stmts.allPendingCalls.all() : this.stmts.pendingCalls.all(sessionId)
    ) as { body: string }[];
    return rows.map((row) => JSON.parse(row.body) as PendingToolCallRecord);
  }

  async approvals(sessionId: string, options: { open?: boolean } = {}): Promise<ApprovalRecord[]> {
    const rows = (
      options.open ? this.stmts.openApprovals.all(sessionId) : this.stmts.approvals.all(sessionId)
    ) as { body: string }[];
    return rows.map((row) => JSON.parse(row.body) as ApprovalRecord);
  }

  async putToolResult(sessionId: string, callId: string, result: ToolResult): Promise<boolean> {
    const stored =
      this.stmts.putResult.run(callId, sessionId, JSON.stringify(result), Date.now()).changes > 0;
    this.checkpoints.wrote();
    return stored;
  }

  async getToolResult(callId: string): Promise<ToolResult | undefined> {
    const row = this.stmts.getResult.get(callId) as { body: string } | undefined;
    return row ? (JSON.parse(row.body) as ToolResult) : undefined;
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    await this.checkpoints.close();
    if (!this.db.open) return;
    // Fold the WAL back into the main file so a copy of the .sqlite alone is a full backup.
    this.db.pragma("wal_checkpoint(TRUNCATE)");
    this.db.close();
  }

  private applyChange(sessionId: string, change: SessionChange): CommitResult {
    const s = this.stmts;
    const json = new ChangeJson();
    if (change.command) {
      const inserted = s.insertCommand.run(
        sessionId,
        change.command.commandId,
        change.command.kind,
        Date.now(),
      );
      if (inserted.changes === 0) return { events: [], duplicate: true };
    }
    const items = latestItems(change.items);
    let lastPosition: number | undefined;
    let inserted: string[] | undefined;
    if (items.length > 0) {
      let position = this.lastPosition(sessionId);
      const recent = this.recentItems.get(sessionId);
      for (const item of items) {
        // A new item takes the next position; one the session has keeps its own and gets the new body.
        const body = json.item(item);
        if (recent?.includes(item.id) && s.updateItem.run(body, sessionId, item.id).changes > 0) continue;
        if (s.insertItem.run(sessionId, item.id, position + 1, body).changes > 0) {
          position++;
          inserted ??= [];
          inserted.push(item.id);
        } else s.updateItem.run(body, sessionId, item.id);
      }
      lastPosition = position;
    }
    if (change.pageTools) s.setPageTools.run(JSON.stringify(change.pageTools), sessionId);
    if (change.turn) {
      const t = change.turn;
      s.upsertTurn.run(
        t.responseId,
        t.sessionId,
        t.commandId ?? null,
        t.status,
        t.startedAt,
        t.endedAt ?? null,
      );
    }
    for (const call of change.pendingCalls ?? [])
      s.upsertPendingCall.run(call.callId, sessionId, JSON.stringify(call));
    for (const callId of change.settledCalls ?? []) s.deletePendingCall.run(callId);
    for (const approval of change.approvals ?? []) {
      s.upsertApproval.run(
        approval.request.id,
        sessionId,
        JSON.stringify(approval),
        approval.outcome ?? null,
        approval.decidedAt ?? null,
      );
    }
    const events: SessionEvent[] = [];
    const drafts = change.events;
    if (drafts && drafts.length > 0) {
      const before = this.lastSeq(sessionId);
      if (before === undefined) throw new Error(`session ${sessionId} does not exist`);
      const first = before + 1;
      const last = before + drafts.length;
      // One row for the change's events, a JSON array of each event's own text (schema step 4).
      let body = "[";
      for (let i = 0; i < drafts.length; i++) {
        const event = { ...drafts[i], sessionId, seq: first + i } as SessionEvent;
        body += i === 0 ? json.event(event) : `,${json.event(event)}`;
        events.push(event);
      }
      s.insertEvents.run(sessionId, first, last, `${body}]`);
      // Last, once nothing of this change can throw: a savepoint rolled back leaves the memo as it was.
      this.lastSeqs.set(sessionId, last);
    }
    if (lastPosition !== undefined) this.lastPositions.set(sessionId, lastPosition);
    if (inserted) this.rememberItems(sessionId, inserted);
    return { events, duplicate: false };
  }

  /** A transaction failed: what the memos say may not be in the file. */
  private forgetMemos(): void {
    this.lastSeqs.clear();
    this.lastPositions.clear();
    this.recentItems.clear();
  }

  /** `inserted` are the session's newest items now: the last {@link RECENT_ITEMS} ids are kept. */
  private rememberItems(sessionId: string, inserted: string[]): void {
    const recent = this.recentItems.get(sessionId);
    if (!recent) {
      if (this.recentItems.size >= LAST_SEQ_MEMO) this.recentItems.clear();
      this.recentItems.set(sessionId, inserted.slice(-RECENT_ITEMS));
      return;
    }
    for (const id of inserted) recent.push(id);
    if (recent.length > RECENT_ITEMS) recent.splice(0, recent.length - RECENT_ITEMS);
  }

  /** A session's highest item position (0 without items), from the memo or the file. */
  private lastPosition(sessionId: string): number {
    const known = this.lastPositions.get(sessionId);
    if (known !== undefined) return known;
    const row = this.stmts.lastPosition.get(sessionId) as { position: number };
    if (this.lastPositions.size >= LAST_SEQ_MEMO) this.lastPositions.clear();
    this.lastPositions.set(sessionId, row.position);
    return row.position;
  }

  /** A session's last event seq, from the memo or the file; undefined when there is no such session. */
  private lastSeq(sessionId: string): number | undefined {
    const known = this.lastSeqs.get(sessionId);
    if (known !== undefined) return known;
    const row = this.stmts.lastSeq.get(sessionId) as { last_seq: number } | undefined;
    if (!row) return undefined;
    if (this.lastSeqs.size >= LAST_SEQ_MEMO) this.lastSeqs.clear();
    this.lastSeqs.set(sessionId, row.last_seq);
    return row.last_seq;
  }
}

function prepare(db: Database.Database) {
  return {
    insertSession: db.prepare(
      "INSERT INTO sessions (id, agent, user_id, metadata, created_at, last_seq) VALUES (?, ?, ?, ?, ?, ?)",
    ),
    getSession: db.prepare(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ?`),
    listByAgent: db.prepare(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE agent = ? ORDER BY created_at DESC, id LIMIT ?`,
    ),
    listByAgentUser: db.prepare(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE agent = ? AND user_id = ? ORDER BY created_at DESC, id LIMIT ?`,
    ),
    countByAgentUser: db.prepare("SELECT COUNT(*) AS n FROM sessions WHERE agent = ? AND user_id = ?"),
    deleteSession: db.prepare("DELETE FROM sessions WHERE id = ?"),
    lastSeq: db.prepare(`SELECT ${LAST_SEQ} AS last_seq FROM sessions WHERE id = ?`),
    setPageTools: db.prepare("UPDATE sessions SET page_tools = ? WHERE id = ?"),
    getPageTools: db.prepare("SELECT page_tools FROM sessions WHERE id = ?"),
    insertEvents: db.prepare(
      "INSERT INTO event_rows (session_id, first_seq, last_seq, body) VALUES (?, ?, ?, ?)",
    ),
    readEvents: db.prepare(
      "SELECT body FROM event_rows WHERE session_id = ? AND last_seq > ? ORDER BY last_seq LIMIT ?",
    ),
    insertItem: db.prepare(
      "INSERT INTO items (session_id, item_id, position, body) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    ),
    updateItem: db.prepare("UPDATE items SET body = ? WHERE session_id = ? AND item_id = ?"),
    lastPosition: db.prepare("SELECT COALESCE(MAX(position), 0) AS position FROM items WHERE session_id = ?"),
    conversation: db.prepare("SELECT body FROM items WHERE session_id = ? ORDER BY position"),
    insertCommand: db.prepare(
      "INSERT INTO commands (session_id, command_id, kind, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    ),
    getCommand: db.prepare("SELECT 1 FROM commands WHERE session_id = ? AND command_id = ?"),
    upsertTurn: db.prepare(
      `INSERT INTO turns (response_id, session_id, command_id, status, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (response_id) DO UPDATE SET status = excluded.status, ended_at = excluded.ended_at`,
    ),
    openTurnsByStatus: db.prepare(
      "SELECT * FROM turns WHERE status = ? AND status IN ('queued', 'running') ORDER BY started_at",
    ),
    turnsByStatus: db.prepare("SELECT * FROM turns WHERE status = ? ORDER BY started_at"),
    upsertPendingCall: db.prepare(
      "INSERT INTO pending_calls (call_id, session_id, body) VALUES (?, ?, ?) ON CONFLICT (call_id) DO UPDATE SET body = excluded.body",
    ),
    deletePendingCall: db.prepare("DELETE FROM pending_calls WHERE call_id = ?"),
    pendingCalls: db.prepare("SELECT body FROM pending_calls WHERE session_id = ?"),
    allPendingCalls: db.prepare("SELECT body FROM pending_calls"),
    upsertApproval: db.prepare(
      `INSERT INTO approvals (id, session_id, body, outcome, decided_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET body = excluded.body, outcome = excluded.outcome, decided_at = excluded.decided_at`,
    ),
    approvals: db.prepare("SELECT body FROM approvals WHERE session_id = ? ORDER BY rowid"),
    openApprovals: db.prepare(
      "SELECT body FROM approvals WHERE session_id = ? AND outcome IS NULL ORDER BY rowid",
    ),
    putResult: db.prepare(
      "INSERT INTO tool_results (call_id, session_id, body, stored_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
    ),
    getResult: db.prepare("SELECT body FROM tool_results WHERE call_id = ?"),
  };
}

/**
 * A change's items, each id once in its latest state, in the order first named: a joined change
 * often carries a call's pending and running items, and only the last state needs a row.
 */
function latestItems(items: readonly ConversationItem[] | undefined): readonly ConversationItem[] {
  if (!items || items.length < 2) return items ?? [];
  const latest = new Map<string, ConversationItem>();
  for (const item of items) latest.set(item.id, item);
  return latest.size === items.length ? items : [...latest.values()];
}

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    agent: row.agent,
    userId: row.user_id,
    metadata: JSON.parse(row.metadata),
    createdAt: row.created_at,
    lastSeq: row.last_seq,
  };
}
