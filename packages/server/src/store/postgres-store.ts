import type { ConversationItem, SessionEvent, ToolResult, ToolSpec } from "@patchbay/protocol";
import type { Pool, PoolClient, PoolConfig } from "pg";
import { createLogger, type Logger } from "../observability/logger";
import { applyChange } from "./postgres-change";
import { PostgresLeases } from "./postgres-leases";
import { PostgresStoreLock, type StoreLockStatus } from "./postgres-lock";
import { MIGRATION_LOCK, migratePostgres } from "./postgres-migrations";
import { inTransaction } from "./postgres-transaction";
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

/**
 * Options of {@link PostgresStore.open}.
 *
 * @example
 * ```ts
 * await PostgresStore.open({ url: "postgres://patchbay@127.0.0.1/patchbay", schema: "patchbay" });
 * ```
 */
export interface PostgresStoreOptions {
  /** A `postgres://` connection string. Its password is never logged or put in an error. */
  url: string;
  /** The schema that holds the tables (created when missing); default `public`. */
  schema?: string;
  /** Most connections the pool opens (default 10). */
  maxConnections?: number;
  /** Passed to `pg`'s Pool as is (ssl, timeouts, ...); `url`, `schema` and `maxConnections` win. */
  pool?: PoolConfig;
  /**
   * Hold the schema for this process alone (default true): a second server opening it is refused
   * with a `StoreLockedError` naming the holder, because its start-up recovery would end this
   * one's running turns. The lock is a session advisory lock on a connection of its own, so it
   * goes away with the process (even on SIGKILL) and the next server can start at once. A
   * cluster (docs/cluster.md) opens with `false`: per-session leases replace the lock.
   * If the lock's connection drops, the store takes the lock again; a write meanwhile waits
   * briefly, and once another server holds it every write fails with `store_lock_lost`
   * (`postgres-lock.ts`).
   */
  exclusive?: boolean;
  /** Where the store says its lock's connection dropped or was lost (default: the server's default logger). */
  logger?: Logger;
}

interface SessionRow {
  id: string;
  agent: string;
  user_id: string;
  metadata: string;
  created_at: string;
  last_seq: string;
}

interface TurnRow {
  response_id: string;
  session_id: string;
  command_id: string | null;
  status: TurnRecord["status"];
  started_at: string;
  ended_at: string | null;
}

const SESSION_COLUMNS = "id, agent, user_id, metadata, created_at, last_seq";
const SESSION_TABLES = [
  "items",
  "events",
  "commands",
  "turns",
  "pending_calls",
  "approvals",
  "tool_results",
  "session_leases",
];

/**
 * A {@link Store} on PostgreSQL, for teams that run Postgres already or need the data off the
 * server's disk. Every {@link SessionChange} is one transaction on one pooled connection; the
 * session row's `last_seq` is bumped with `UPDATE ... RETURNING`, which also locks the row, so
 * sequence numbers stay dense even if two writers raced. Opening runs the schema steps of
 * `postgres-migrations.ts` (an older schema is upgraded, a newer one refused with a
 * `StoreVersionError`). Needs the `pg` package, loaded only when this store is opened.
 *
 * @example
 * ```ts
 * const store = await PostgresStore.open({ url: process.env.PATCHBAY_DATABASE_URL! });
 * const server = await createServer({ port: 8787, store, agents, apiKey, secret });
 * ```
 */
export class PostgresStore implements Store {
  /** The connection string with its password masked, for logs and errors. */
  readonly where: string;
  /** Session leases with fencing tokens, for a cluster of servers on this database. */
  readonly leases: SessionLeases;
  private readonly pool: Pool;
  private lock: PostgresStoreLock | undefined;
  private closed = false;

  private constructor(pool: Pool, where: string) {
    this.pool = pool;
    this.where = where;
    this.leases = new PostgresLeases(pool);
  }

  /** Connects, creates the schema when missing and brings it up to date. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const where = redactUrl(options.url);
    const schema = options.schema ?? "public";
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
      throw new Error(`schema: '${schema}' is not a plain Postgres identifier (letters, digits, _)`);
    }
    const { default: pg } = await import("pg");
    const pool = new pg.Pool({
      ...options.pool,
      connectionString: options.url,
      max: options.maxConnections ?? options.pool?.max ?? 10,
      options: `-c search_path=${schema}`,
    });
    // An idle connection that dies (the database restarted) must not crash the process.
    pool.on("error", () => {});
    const store = new PostgresStore(pool, where);
    try {
      await createSchema(pool, schema);
      if (options.exclusive !== false) {
        store.lock = await PostgresStoreLock.take({
          connect: () =>
            new pg.Client({
              // A dead peer is noticed, and a retake gives up on a host that does not answer.
              keepAlive: true,
              connectionTimeoutMillis: 5_000,
              ...options.pool,
              connectionString: options.url,
              options: `-c search_path=${schema}`,
            }),
          schema,
          where,
          logger: options.logger ?? createLogger(),
        });
      }
      await migratePostgres(pool, where);
    } catch (error) {
      await store.lock?.close();
      await pool.end().catch(() => {});
      throw withoutSecret(error, options.url, where);
    }
    return store;
  }

  /**
   * Where the store lock stands (`postgres-lock.ts`): `held`, `retaking` after its connection
   * dropped, `lost` once another server took the database; undefined without the lock (a cluster).
   */
  get lockStatus(): StoreLockStatus | undefined {
    return this.lock?.status;
  }

  async createSession(record: SessionRecord): Promise<void> {
    await this.writeOne(
      "INSERT INTO sessions (id, agent, user_id, metadata, created_at, last_seq) VALUES ($1, $2, $3, $4, $5, $6)",
      [
        record.id,
        record.agent,
        record.userId,
        JSON.stringify(record.metadata),
        record.createdAt,
        record.lastSeq,
      ],
    );
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.pool.query<SessionRow>(
      `SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1`,
      [id],
    );
    return rows[0] ? toSession(rows[0]) : undefined;
  }

  async listSessions(query: { agent: string; userId?: string; limit?: number }): Promise<SessionRecord[]> {
    const limit = Math.min(Math.max(query.limit ?? 100, 1), 1000);
    const { rows } =
      query.userId === undefined
        ? await this.pool.query<SessionRow>(
            `SELECT ${SESSION_COLUMNS} FROM sessions WHERE agent = $1 ORDER BY created_at DESC, id LIMIT $2`,
            [query.agent, limit],
          )
        : await this.pool.query<SessionRow>(
            `SELECT ${SESSION_COLUMNS} FROM sessions WHERE agent = $1 AND user_id = $2 ORDER BY created_at DESC, id LIMIT $3`,
            [query.agent, query.userId, limit],
          );
    return rows.map(toSession);
  }

  async deleteSession(id: string): Promise<boolean> {
    return this.transaction(async (client) => {
      const deleted = await client.query("DELETE FROM sessions WHERE id = $1", [id]);
      for (const table of SESSION_TABLES)
        await client.query(`DELETE FROM ${table} WHERE session_id = $1`, [id]);
      return (deleted.rowCount ?? 0) > 0;
    });
  }

  async commit(sessionId: string, change: SessionChange): Promise<CommitResult> {
    return this.transaction((client) => applyChange(client, sessionId, change));
  }

  async readEvents(
    sessionId: string,
    afterSeq: number,
    limit = Number.MAX_SAFE_INTEGER,
  ): Promise<SessionEvent[]> {
    const { rows } = await this.pool.query<{ body: string }>(
      "SELECT body FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
      [sessionId, afterSeq, Math.max(0, Math.min(limit, Number.MAX_SAFE_INTEGER))],
    );
    return rows.map((row) => JSON.parse(row.body) as SessionEvent);
  }

  async conversation(sessionId: string): Promise<ConversationItem[]> {
    const { rows } = await this.pool.query<{ body: string }>(
      "SELECT body FROM items WHERE session_id = $1 ORDER BY position",
      [sessionId],
    );
    return rows.map((row) => JSON.parse(row.body) as ConversationItem);
  }

  async pageTools(sessionId: string): Promise<ToolSpec[]> {
    const { rows } = await this.pool.query<{ page_tools: string }>(
      "SELECT page_tools FROM sessions WHERE id = $1",
      [sessionId],
    );
    return rows[0] ? (JSON.parse(rows[0].page_tools) as ToolSpec[]) : [];
  }

  async hasCommand(sessionId: string, commandId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      "SELECT 1 FROM commands WHERE session_id = $1 AND command_id = $2",
      [sessionId, commandId],
    );
    return (rowCount ?? 0) > 0;
  }

  async turnsWithStatus(status: TurnRecord["status"]): Promise<TurnRecord[]> {
    const { rows } = await this.pool.query<TurnRow>(
      "SELECT * FROM turns WHERE status = $1 ORDER BY started_at",
      [status],
    );
    return rows.map((row) => {
      const turn: TurnRecord = {
        responseId: row.response_id,
        sessionId: row.session_id,
        status: row.status,
        startedAt: Number(row.started_at),
      };
      if (row.command_id !== null) turn.commandId = row.command_id;
      if (row.ended_at !== null) turn.endedAt = Number(row.ended_at);
      return turn;
    });
  }

  async pendingCalls(sessionId?: string): Promise<PendingToolCallRecord[]> {
    const { rows } =
      sessionId === undefined
        ? await this.pool.query<{ body: string }>("SELECT body FROM pending_calls")
        : await this.pool.query<{ body: string }>("SELECT body FROM pending_calls WHERE session_id = $1", [
            sessionId,
          ]);
    return rows.map((row) => JSON.parse(row.body) as PendingToolCallRecord);
  }

  async approvals(sessionId: string, options: { open?: boolean } = {}): Promise<ApprovalRecord[]> {
    const { rows } = await this.pool.query<{ body: string }>(
      `SELECT body FROM approvals WHERE session_id = $1${options.open ? " AND outcome IS NULL" : ""} ORDER BY ord`,
      [sessionId],
    );
    return rows.map((row) => JSON.parse(row.body) as ApprovalRecord);
  }

  async putToolResult(sessionId: string, callId: string, result: ToolResult): Promise<boolean> {
    const { rowCount } = await this.writeOne(
      "INSERT INTO tool_results (call_id, session_id, body, stored_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
      [callId, sessionId, JSON.stringify(result), Date.now()],
    );
    return (rowCount ?? 0) > 0;
  }

  async getToolResult(callId: string): Promise<ToolResult | undefined> {
    const { rows } = await this.pool.query<{ body: string }>(
      "SELECT body FROM tool_results WHERE call_id = $1",
      [callId],
    );
    return rows[0] ? (JSON.parse(rows[0].body) as ToolResult) : undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
    // Ending the connection releases the advisory lock.
    await this.lock?.close();
  }

  /** Every write's transaction: with the store lock, its fence runs first (`postgres-lock.ts`). */
  private transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const lock = this.lock;
    return inTransaction(
      this.pool,
      lock
        ? async (client) => {
            await lock.fence(client);
            return work(client);
          }
        : work,
    );
  }

  /** One write statement: a transaction of its own under the store lock, else straight on the pool. */
  private writeOne(sql: string, values: unknown[]): Promise<{ rowCount: number | null }> {
    return this.lock ? this.transaction((client) => client.query(sql, values)) : this.pool.query(sql, values);
  }
}

/** Creates the schema under the migration lock, so servers starting together do not race. */
async function createSchema(pool: Pool, schema: string): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  });
}

function toSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    agent: row.agent,
    userId: row.user_id,
    metadata: JSON.parse(row.metadata),
    createdAt: Number(row.created_at),
    lastSeq: Number(row.last_seq),
  };
}

/** The connection string with its password masked: `postgres://app:***@db/patchbay`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "the database URL (unparsable)";
  }
}

/** An error from opening the store, its message without the password if pg quoted the URL. */
function withoutSecret(error: unknown, url: string, where: string): unknown {
  if (!(error instanceof Error)) return error;
  const password = (() => {
    try {
      return decodeURIComponent(new URL(url).password);
    } catch {
      return "";
    }
  })();
  if (password && error.message.includes(password)) error.message = error.message.split(password).join("***");
  if (!error.message.includes(where)) error.message = `${where}: ${error.message}`;
  return error;
}
