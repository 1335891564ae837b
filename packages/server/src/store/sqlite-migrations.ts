import type Database from "better-sqlite3";
import { StoreVersionError } from "../errors";

/**
 * One step of the SQLite store's schema. `version` is the `PRAGMA user_version` the database has
 * once the step ran; steps run in order, each in its own transaction, so a database is always at
 * exactly one version.
 */
export interface SqliteMigration {
  version: number;
  /** What the step changes and why, for the reader of this list. */
  why: string;
  up(db: Database.Database): void;
}

/**
 * Every schema step of the store, oldest first. Never edit or reorder a step that has shipped:
 * databases out there are at its version already. Add a new one at the end instead.
 */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    why: "the first schema, as the first server build created it (before versioning)",
    up: (db) =>
      db.exec(`
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, agent TEXT NOT NULL, user_id TEXT NOT NULL, metadata TEXT NOT NULL,
  created_at INTEGER NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_by_agent_user ON sessions (agent, user_id, created_at);
CREATE TABLE IF NOT EXISTS items (
  session_id TEXT NOT NULL, item_id TEXT NOT NULL, position INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (session_id, item_id)
);
CREATE INDEX IF NOT EXISTS items_in_order ON items (session_id, position);
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS commands (
  session_id TEXT NOT NULL, command_id TEXT NOT NULL, kind TEXT NOT NULL, created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, command_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS turns (
  response_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, command_id TEXT, status TEXT NOT NULL,
  started_at INTEGER NOT NULL, ended_at INTEGER
);
CREATE INDEX IF NOT EXISTS turns_by_status ON turns (status);
CREATE TABLE IF NOT EXISTS pending_calls (call_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS pending_calls_by_session ON pending_calls (session_id);
CREATE TABLE IF NOT EXISTS approvals (
  id TEXT PRIMARY KEY, session_id TEXT NOT NULL, body TEXT NOT NULL, outcome TEXT, decided_at INTEGER
);
CREATE INDEX IF NOT EXISTS approvals_by_session ON approvals (session_id);
CREATE TABLE IF NOT EXISTS tool_results (
  call_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, body TEXT NOT NULL, stored_at INTEGER NOT NULL
);
`),
  },
  {
    version: 2,
    why: "keep each session's declared page tools, so a page call with no page attached fails at once after the session was unloaded",
    up: (db) => db.exec("ALTER TABLE sessions ADD COLUMN page_tools TEXT NOT NULL DEFAULT '[]'"),
  },
  {
    version: 3,
    why: "PRAGMA user_version holds the schema version now; the meta table only ever held a schema_version that stayed 1 through version 2",
    up: (db) => db.exec("DROP TABLE meta"),
  },
  {
    version: 4,
    why: "the events a change commits are one row (a JSON array) in a table in commit order, instead of a row per event clustered by session: a turn wrote about 16 event rows into 16 places of a B-tree keyed by session, and each commit rewrote every session's leaf page in the WAL (two thirds of the pages a turn wrote); now its rows go to the table's last page, and the index by session gets one small entry per change",
    up: (db) =>
      db.exec(`
CREATE TABLE event_rows (
  id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
  body TEXT NOT NULL
);
CREATE UNIQUE INDEX event_rows_by_session ON event_rows (session_id, last_seq);
INSERT INTO event_rows (session_id, first_seq, last_seq, body)
  SELECT session_id, seq, seq, '[' || body || ']' FROM events ORDER BY session_id, seq;
DROP TABLE events;
`),
  },
  {
    version: 5,
    why: "sessions.last_seq is no longer advanced by every change (an UPDATE per change, and each session's row rewritten in the WAL by every commit): a session's last seq is the highest of the column and its event_rows' last_seq, which the server keeps in memory once read. Nothing in the file changes; the version keeps an older server, which would read the column alone and hand out a seq again, off a database this one wrote",
    up: () => {},
  },
  {
    version: 6,
    why: "no index of items by position: every transaction that wrote a session's items also rewrote that session's leaf of items_in_order in the WAL (a tenth of the pages a turn wrote). The next position comes from the highest one of the session, read once and then kept in memory by the server; reading a conversation sorts its rows by position, found by the primary key. The version keeps an older server, which would look for the index to number new items, off a database this one wrote",
    up: (db) => db.exec("DROP INDEX IF EXISTS items_in_order"),
  },
  {
    version: 7,
    why: "turns_by_status indexed every turn ever run, and a turn's end moved its entry from the running ones to the far end of the finished ones (two leaves of it in the WAL, and an index that grew with every turn); recovery only ever looks for queued and running turns, so the index holds those alone now (a partial index that stays a page or two). The version keeps an older server, which would look for turns_by_status, off a database this one wrote",
    up: (db) =>
      db.exec(`
DROP INDEX IF EXISTS turns_by_status;
CREATE INDEX turns_open ON turns (status, started_at) WHERE status IN ('queued', 'running');
`),
  },
];

/** The schema version this server creates and reads: the last step of {@link SQLITE_MIGRATIONS}. */
export const SQLITE_SCHEMA_VERSION: number = SQLITE_MIGRATIONS.at(-1)!.version;

/** What {@link migrateSqlite} did: the version it found and the version the database has now. */
export interface SqliteMigrationResult {
  from: number;
  to: number;
}

/**
 * Brings a database up to the latest schema version: a new file gets every step, an older one the
 * steps after its version, each in its own immediate transaction (a step that fails leaves the
 * database at the version before it). A database newer than the steps known here is refused
 * with a {@link StoreVersionError} before anything in it changes. `beforeSteps` runs once the
 * version was found acceptable and before any step: the connection's settings that change the
 * file (the journal mode) go there, so a refused file is left as it was and the steps already
 * run in the mode the server writes in.
 */
export function migrateSqlite(
  db: Database.Database,
  migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS,
  beforeSteps?: (db: Database.Database) => void,
): SqliteMigrationResult {
  const latest = migrations.at(-1)?.version ?? 0;
  const version = () => db.pragma("user_version", { simple: true }) as number;
  const from = version();
  if (from > latest) throw new StoreVersionError(db.name, from, latest);
  beforeSteps?.(db);
  db.transaction(() => {
    if (version() === 0) adoptUnversioned(db);
  }).immediate();
  for (const migration of migrations) {
    // The version is read again inside the transaction: another process that opened the same
    // file may have run this step in between, and a step must never run twice.
    db.transaction(() => {
      if (version() + 1 !== migration.version) return;
      migration.up(db);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
  return { from, to: version() };
}

/**
 * Builds before versioning left `user_version` at 0 and created their tables directly. Such a
 * file is given the version whose shape it has, so the steps after it run and the ones it
 * already has do not. A file without tables is new and stays at 0.
 */
function adoptUnversioned(db: Database.Database): void {
  const hasSessions = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'")
    .get();
  if (!hasSessions) return;
  const columns = db.prepare("SELECT name FROM pragma_table_info('sessions')").all() as { name: string }[];
  const adopted = columns.some((column) => column.name === "page_tools") ? 2 : 1;
  db.pragma(`user_version = ${adopted}`);
}
