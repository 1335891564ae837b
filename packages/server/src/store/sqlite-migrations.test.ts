import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageItem } from "@patchbay/protocol";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { StoreVersionError } from "../errors";
import { migrateSqlite, SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION } from "./sqlite-migrations";
import { SqliteStore } from "./sqlite-store";

// What the first server build (e69308c) ran on open, copied from it: the tables created directly,
// user_version left at 0, and the version written to a meta row instead.
const FIRST_BUILD_SCHEMA = `
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
INSERT INTO meta (key, value) VALUES ('schema_version', '1');
`;

// The builds from 7691851 until versioning: the same, with the page_tools column in CREATE TABLE.
const PAGE_TOOLS_BUILD_SCHEMA = FIRST_BUILD_SCHEMA.replace(
  "last_seq INTEGER NOT NULL DEFAULT 0\n",
  "last_seq INTEGER NOT NULL DEFAULT 0,\n  page_tools TEXT NOT NULL DEFAULT '[]'\n",
);

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-migrations-"));
  dirs.push(dir);
  return dir;
}

function open(dataDir: string): SqliteStore {
  const store = new SqliteStore({ dataDir });
  stores.push(store);
  return store;
}

function message(id: string, text: string): MessageItem {
  return { type: "message", id, role: "user", text, status: "completed", createdAt: 5 };
}

/** Writes `patchbay.sqlite` in `dir` the way an old build left it, with one session of rows. */
function writeOldDatabase(dir: string, schema: string, userVersion = 0): string {
  const path = join(dir, "patchbay.sqlite");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.exec(schema);
  if (userVersion !== 0) db.pragma(`user_version = ${userVersion}`);
  const hi = message("m_1", "hi");
  db.prepare(
    "INSERT INTO sessions (id, agent, user_id, metadata, created_at, last_seq) VALUES (?, ?, ?, ?, ?, ?)",
  ).run("s_old", "support", "u_1", JSON.stringify({ plan: "pro" }), 1, 1);
  db.prepare("INSERT INTO items (session_id, item_id, position, body) VALUES (?, ?, ?, ?)").run(
    "s_old",
    "m_1",
    1,
    JSON.stringify(hi),
  );
  db.prepare("INSERT INTO events (session_id, seq, type, body) VALUES (?, ?, ?, ?)").run(
    "s_old",
    1,
    "message.created",
    JSON.stringify({ type: "message.created", item: hi, sessionId: "s_old", seq: 1 }),
  );
  db.prepare("INSERT INTO commands (session_id, command_id, kind, created_at) VALUES (?, ?, ?, ?)").run(
    "s_old",
    "cmd_1",
    "message",
    2,
  );
  const insertTurn = db.prepare(
    "INSERT INTO turns (response_id, session_id, command_id, status, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?)",
  );
  insertTurn.run("r_open", "s_old", "cmd_1", "running", 2, null);
  insertTurn.run("r_done", "s_old", null, "completed", 1, 2);
  db.prepare("INSERT INTO tool_results (call_id, session_id, body, stored_at) VALUES (?, ?, ?, ?)").run(
    "call_1",
    "s_old",
    JSON.stringify({ outcome: "completed", content: { text: "shipped", images: [] } }),
    3,
  );
  db.close();
  return path;
}

function inspect(path: string): {
  version: number;
  sessionColumns: string[];
  tables: string[];
  indexes: string[];
} {
  const db = new Database(path, { readonly: true });
  try {
    return {
      version: db.pragma("user_version", { simple: true }) as number,
      sessionColumns: (
        db.prepare("SELECT name FROM pragma_table_info('sessions')").all() as { name: string }[]
      ).map((c) => c.name),
      tables: (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as {
          name: string;
        }[]
      ).map((t) => t.name),
      indexes: (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name").all() as {
          name: string;
        }[]
      ).map((t) => t.name),
    };
  } finally {
    db.close();
  }
}

describe("SQLITE_MIGRATIONS", () => {
  it("numbers its steps 1, 2, 3, ... so each version has exactly one step", () => {
    expect(SQLITE_MIGRATIONS.map((m) => m.version)).toEqual(SQLITE_MIGRATIONS.map((_, i) => i + 1));
    expect(SQLITE_SCHEMA_VERSION).toBe(SQLITE_MIGRATIONS.length);
  });
});

describe("opening a SqliteStore", () => {
  it("gives a new database the latest version and the current tables", async () => {
    const dir = tempDir();
    const store = open(dir);
    await store.close();
    const db = inspect(join(dir, "patchbay.sqlite"));
    expect(db.version).toBe(SQLITE_SCHEMA_VERSION);
    expect(db.sessionColumns).toContain("page_tools");
    expect(db.tables).not.toContain("meta");
    expect(db.tables).toEqual(expect.arrayContaining(["sessions", "items", "event_rows", "tool_results"]));
    // The events of a change are one row of event_rows since schema step 4.
    expect(db.tables).not.toContain("events");
    // Items are numbered from memory since schema step 6, without an index by position.
    expect(db.indexes).not.toContain("items_in_order");
    expect(db.indexes).toContain("event_rows_by_session");
    // Only queued and running turns are indexed by status since schema step 7.
    expect(db.indexes).not.toContain("turns_by_status");
    expect(db.indexes).toContain("turns_open");
  });

  it.each([
    ["the first build (unversioned, no page_tools)", FIRST_BUILD_SCHEMA, 0],
    ["a build with page_tools (unversioned)", PAGE_TOOLS_BUILD_SCHEMA, 0],
    ["a database at version 1", FIRST_BUILD_SCHEMA, 1],
  ])(
    "upgrades a database of %s and keeps its sessions and conversation working",
    async (_, schema, version) => {
      const dir = tempDir();
      const path = writeOldDatabase(dir, schema, version);

      const store = open(dir);
      expect(await store.getSession("s_old")).toEqual({
        id: "s_old",
        agent: "support",
        userId: "u_1",
        metadata: { plan: "pro" },
        createdAt: 1,
        lastSeq: 1,
      });
      expect(await store.conversation("s_old")).toEqual([message("m_1", "hi")]);
      expect((await store.readEvents("s_old", 0)).map((e) => [e.seq, e.type])).toEqual([
        [1, "message.created"],
      ]);
      expect(await store.hasCommand("s_old", "cmd_1")).toBe(true);
      expect((await store.getToolResult("call_1"))?.content.text).toBe("shipped");
      expect((await store.listSessions({ agent: "support", userId: "u_1" })).map((s) => s.id)).toEqual([
        "s_old",
      ]);
      expect(await store.pageTools("s_old")).toEqual([]);
      // Recovery finds the old file's unfinished turn by the index schema step 7 built.
      expect((await store.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_open"]);
      expect((await store.turnsWithStatus("completed")).map((t) => t.responseId)).toEqual(["r_done"]);

      // The old session goes on: the next event follows the old ones, page tools can be kept.
      const tools = [{ name: "locate", description: "Where", parameters: { type: "object" as const } }];
      const next = await store.commit("s_old", {
        command: { commandId: "cmd_2", kind: "message" },
        items: [message("m_2", "again")],
        events: [{ type: "message.created", item: message("m_2", "again") }],
        pageTools: tools,
      });
      expect(next.events.map((e) => e.seq)).toEqual([2]);
      expect(
        (await store.commit("s_old", { command: { commandId: "cmd_1", kind: "message" } })).duplicate,
      ).toBe(true);
      await store.close();

      const db = inspect(path);
      expect(db.version).toBe(SQLITE_SCHEMA_VERSION);
      expect(db.tables).not.toContain("meta");
      expect(db.indexes).not.toContain("items_in_order");
      expect(db.indexes).not.toContain("turns_by_status");
      expect(db.indexes).toContain("turns_open");
      const reopened = open(dir);
      expect((await reopened.conversation("s_old")).map((item) => item.id)).toEqual(["m_1", "m_2"]);
      expect(await reopened.pageTools("s_old")).toEqual(tools);
    },
  );

  it.each(Array.from({ length: SQLITE_SCHEMA_VERSION - 1 }, (_, i) => i + 1))(
    "upgrades a database at version %i with its turns still found by status",
    async (version) => {
      const dir = tempDir();
      const path = writeOldDatabase(dir, FIRST_BUILD_SCHEMA, 1);
      const old = new Database(path);
      expect(migrateSqlite(old, SQLITE_MIGRATIONS.slice(0, version))).toEqual({ from: 1, to: version });
      old.close();

      const store = open(dir);
      expect((await store.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_open"]);
      expect((await store.turnsWithStatus("completed")).map((t) => t.responseId)).toEqual(["r_done"]);
      expect(await store.conversation("s_old")).toEqual([message("m_1", "hi")]);
      await store.commit("s_old", {
        turn: { responseId: "r_open", sessionId: "s_old", status: "completed", startedAt: 2, endedAt: 3 },
      });
      expect(await store.turnsWithStatus("running")).toEqual([]);
      await store.close();
      expect(inspect(path)).toMatchObject({ version: SQLITE_SCHEMA_VERSION });
    },
  );

  it("refuses a database a newer server wrote, names both versions, and leaves the file as it was", () => {
    const dir = tempDir();
    const path = join(dir, "patchbay.sqlite");
    const newer = new Database(path);
    newer.exec("CREATE TABLE sessions (id TEXT PRIMARY KEY, from_the_future TEXT)");
    newer.pragma(`user_version = ${SQLITE_SCHEMA_VERSION + 1}`);
    newer.close();

    let refused: unknown;
    try {
      open(dir);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(StoreVersionError);
    const error = refused as StoreVersionError;
    expect(error.code).toBe("store_version");
    expect(error.found).toBe(SQLITE_SCHEMA_VERSION + 1);
    expect(error.supported).toBe(SQLITE_SCHEMA_VERSION);
    expect(error.message).toContain(path);
    expect(error.message).toContain(`schema version ${SQLITE_SCHEMA_VERSION + 1}`);
    expect(error.message).toContain(`supports versions up to ${SQLITE_SCHEMA_VERSION}`);

    const db = inspect(path);
    expect(db.version).toBe(SQLITE_SCHEMA_VERSION + 1);
    expect(db.sessionColumns).toEqual(["id", "from_the_future"]);
    // Not switched to WAL either: the refused file was only read.
    expect(existsSync(`${path}-wal`)).toBe(false);
  });
});

describe("migrateSqlite", () => {
  it("runs beforeSteps once the version is accepted and before any step (the store switches to WAL there)", () => {
    const path = join(tempDir(), "modes.sqlite");
    const db = new Database(path);
    const modes: string[] = [];
    const steps = [1, 2].map((version) => ({
      version,
      why: `step ${version}`,
      up: (d: Database.Database) => {
        modes.push(d.pragma("journal_mode", { simple: true }) as string);
      },
    }));
    migrateSqlite(db, steps, (d) => d.pragma("journal_mode = WAL"));
    expect(modes).toEqual(["wal", "wal"]);
    db.close();

    // A file newer than the steps: refused before beforeSteps could change it.
    const newer = new Database(path);
    newer.pragma("journal_mode = DELETE");
    newer.pragma("user_version = 9");
    let called = false;
    expect(() =>
      migrateSqlite(newer, steps, () => {
        called = true;
      }),
    ).toThrow(StoreVersionError);
    expect(called).toBe(false);
    expect(newer.pragma("journal_mode", { simple: true })).toBe("delete");
    newer.close();
  });

  it("leaves a database at the last step that succeeded when a later one fails", () => {
    const db = new Database(join(tempDir(), "steps.sqlite"));
    try {
      const steps = [
        { version: 1, why: "a table", up: (d: Database.Database) => d.exec("CREATE TABLE a (x)") },
        {
          version: 2,
          why: "fails halfway",
          up: (d: Database.Database) => {
            d.exec("CREATE TABLE b (x)");
            throw new Error("disk full");
          },
        },
      ];
      expect(() => migrateSqlite(db, steps)).toThrow("disk full");
      expect(db.pragma("user_version", { simple: true })).toBe(1);
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
      expect(tables).toEqual([{ name: "a" }]);

      // Once the step is fixed, opening again runs only what is missing.
      steps[1]!.up = (d) => d.exec("CREATE TABLE b (x)");
      expect(migrateSqlite(db, steps)).toEqual({ from: 1, to: 2 });
      expect(migrateSqlite(db, steps)).toEqual({ from: 2, to: 2 });
    } finally {
      db.close();
    }
  });
});
