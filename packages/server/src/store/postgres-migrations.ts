import type { Pool } from "pg";
import { StoreVersionError } from "../errors";

/**
 * One step of the Postgres store's schema, the counterpart of `sqlite-migrations.ts`. `version` is
 * the schema version once the step ran; steps run in order, each in its own transaction under an
 * advisory lock, so servers starting together against one database never run a step twice.
 */
export interface PostgresMigration {
  version: number;
  /** What the step changes and why, for the reader of this list. */
  why: string;
  sql: string;
}

/**
 * Every schema step of the Postgres store, oldest first. Never edit or reorder a step that has
 * shipped; add a new one at the end. JSON bodies are `text`, not `jsonb`: events and items are
 * handed back byte for byte as they were written (jsonb would reorder keys).
 */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    why: "the first schema: the same tables as the SQLite store at its version 3",
    sql: `
CREATE TABLE sessions (
  id TEXT PRIMARY KEY, agent TEXT NOT NULL, user_id TEXT NOT NULL, metadata TEXT NOT NULL,
  created_at BIGINT NOT NULL, last_seq BIGINT NOT NULL DEFAULT 0, page_tools TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX sessions_by_agent_user ON sessions (agent, user_id, created_at);
CREATE TABLE items (
  session_id TEXT NOT NULL, item_id TEXT NOT NULL, position BIGINT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (session_id, item_id)
);
CREATE INDEX items_in_order ON items (session_id, position);
CREATE TABLE events (
  session_id TEXT NOT NULL, seq BIGINT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
);
CREATE TABLE commands (
  session_id TEXT NOT NULL, command_id TEXT NOT NULL, kind TEXT NOT NULL, created_at BIGINT NOT NULL,
  PRIMARY KEY (session_id, command_id)
);
CREATE TABLE turns (
  response_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, command_id TEXT, status TEXT NOT NULL,
  started_at BIGINT NOT NULL, ended_at BIGINT
);
CREATE INDEX turns_by_status ON turns (status);
CREATE TABLE pending_calls (call_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX pending_calls_by_session ON pending_calls (session_id);
CREATE TABLE approvals (
  id TEXT PRIMARY KEY, ord BIGSERIAL NOT NULL, session_id TEXT NOT NULL, body TEXT NOT NULL,
  outcome TEXT, decided_at BIGINT
);
CREATE INDEX approvals_by_session ON approvals (session_id, ord);
CREATE TABLE tool_results (
  call_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, body TEXT NOT NULL, stored_at BIGINT NOT NULL
);
CREATE INDEX tool_results_by_session ON tool_results (session_id);
`,
  },
  {
    version: 2,
    why: "session leases with fencing tokens, for a cluster of servers on one database (docs/cluster.md)",
    sql: `
CREATE TABLE session_leases (
  session_id TEXT PRIMARY KEY, node_id TEXT NOT NULL, token BIGINT NOT NULL, expires_at BIGINT NOT NULL
);
CREATE INDEX session_leases_by_expiry ON session_leases (expires_at);
`,
  },
];

/** The schema version this server creates and reads: the last step of {@link POSTGRES_MIGRATIONS}. */
export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS.at(-1)!.version;

/** The advisory lock of schema changes: any constant, the same for every Patchbay server. */
export const MIGRATION_LOCK = 0x7061_7463; // "patc"

/**
 * Brings the schema (the pool's `search_path`) up to the latest version: a new database gets
 * every step, an older one the steps after its version, each in its own transaction (a step that
 * fails leaves the schema at the version before it). A schema newer than the steps known here is
 * refused with a {@link StoreVersionError} before anything in it changes.
 */
export async function migratePostgres(
  pool: Pool,
  where: string,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
): Promise<{ from: number; to: number }> {
  const latest = migrations.at(-1)?.version ?? 0;
  const client = await pool.connect();
  try {
    // Under the lock: servers starting together would race CREATE ... IF NOT EXISTS (Postgres
    // can answer one of them with a unique violation on its catalog).
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
      await client.query("CREATE TABLE IF NOT EXISTS patchbay_schema (version INTEGER NOT NULL)");
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    }
    const version = async () => {
      const { rows } = await client.query<{ version: number }>("SELECT version FROM patchbay_schema");
      return rows[0]?.version ?? 0;
    };
    const from = await version();
    if (from > latest) throw new StoreVersionError(where, from, latest);
    for (const migration of migrations) {
      await client.query("BEGIN");
      try {
        await client.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
        // Read again under the lock: another server may have run this step in between.
        const now = await version();
        if (now > latest) throw new StoreVersionError(where, now, latest);
        if (now + 1 === migration.version) {
          await client.query(migration.sql);
          await client.query("DELETE FROM patchbay_schema");
          await client.query("INSERT INTO patchbay_schema (version) VALUES ($1)", [migration.version]);
        }
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw error;
      }
    }
    return { from, to: await version() };
  } finally {
    client.release();
  }
}
