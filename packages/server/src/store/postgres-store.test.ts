import { hostname } from "node:os";
import type { SessionEvent } from "@patchbay/protocol";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreLockedError, StoreLockLostError, StoreVersionError } from "../errors";
import { createLogger, silentLogger } from "../observability/logger";
import { recoverInterruptedTurns } from "../sessions/recovery";
import { startTestPostgres, type TestPostgres } from "../testing/postgres-server";
import { describeLeaseContract, describeStoreContract, message, session } from "../testing/store-contract";
import { migratePostgres, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION } from "./postgres-migrations";
import { PostgresStore, redactUrl } from "./postgres-store";

// A real PostgreSQL (Debian's postgresql, started in a temporary directory): each test gets a
// schema of its own on it.
let server: TestPostgres;
beforeAll(async () => {
  server = await startTestPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

let schemas = 0;
const freshSchema = () => `t${process.pid}_${++schemas}`;

/** A connection of the test's own, as a DBA's psql would be. */
async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The backend holding the schema's store lock (the advisory lock's 64-bit key split in two). */
async function lockHolderPid(schema: string): Promise<number | undefined> {
  const { rows } = await admin((client) =>
    client.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
       AND ((classid::bigint << 32) | objid::bigint) = hashtext($1)::bigint`,
      [`patchbay:${schema}`],
    ),
  );
  return rows[0]?.pid;
}

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A logger that keeps its lines, to read back. */
function keptLogger() {
  const lines: string[] = [];
  return { lines, logger: createLogger({ level: "info", write: (line) => lines.push(line) }) };
}

const runningTurn = { responseId: "r_1", sessionId: "s_1", status: "running" as const, startedAt: 10 };
const completed = {
  turn: { ...runningTurn, status: "completed" as const, endedAt: 20 },
  events: [{ type: "response.completed", responseId: "r_1", reason: "stop", text: "Done." } as SessionEvent],
};

describeStoreContract("PostgresStore", async () =>
  PostgresStore.open({ url: server.url, schema: freshSchema() }),
);
describeLeaseContract("PostgresStore", async () =>
  PostgresStore.open({ url: server.url, schema: freshSchema(), exclusive: false }),
);

describe("PostgresStore", () => {
  it("keeps everything across a reopen, as another server process would see it", async () => {
    const schema = freshSchema();
    const store = await PostgresStore.open({ url: server.url, schema });
    await store.createSession(session("s_1"));
    await store.commit("s_1", {
      command: { commandId: "cmd_1", kind: "message" },
      items: [message("m_1", "hi")],
      events: [{ type: "tool.held", callId: "c_1" }],
      turn: { responseId: "r_1", sessionId: "s_1", status: "running", startedAt: 10 },
    });
    await store.close();
    const reopened = await PostgresStore.open({ url: server.url, schema });
    try {
      expect(await reopened.getSession("s_1")).toEqual({ ...session("s_1"), lastSeq: 1 });
      expect(await reopened.conversation("s_1")).toEqual([message("m_1", "hi")]);
      expect(await reopened.hasCommand("s_1", "cmd_1")).toBe(true);
      expect((await reopened.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_1"]);
      // The retried send of a command is still recognised after the reopen.
      expect(
        (await reopened.commit("s_1", { command: { commandId: "cmd_1", kind: "message" } })).duplicate,
      ).toBe(true);
    } finally {
      await reopened.close();
    }
  });

  it("numbers events densely when two stores (two servers) write one session at once", async () => {
    const schema = freshSchema();
    const a = await PostgresStore.open({ url: server.url, schema, exclusive: false });
    const b = await PostgresStore.open({ url: server.url, schema, exclusive: false });
    try {
      await a.createSession(session("s_1"));
      await Promise.all(
        [a, b].map(async (store, n) => {
          for (let i = 0; i < 15; i++)
            await store.commit("s_1", { events: [{ type: "tool.held", callId: `${n}-${i}` }] });
        }),
      );
      const seqs = (await a.readEvents("s_1", 0)).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("creates the latest schema version once when servers start together", async () => {
    const schema = freshSchema();
    const stores = await Promise.all(
      [1, 2, 3].map(() => PostgresStore.open({ url: server.url, schema, exclusive: false })),
    );
    for (const store of stores) await store.close();
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT version FROM ${schema}.patchbay_schema`);
      expect(rows).toEqual([{ version: POSTGRES_SCHEMA_VERSION }]);
    } finally {
      await client.end();
    }
  });

  it("upgrades an older schema step by step and refuses a newer one untouched", async () => {
    const schema = freshSchema();
    const pool = new pg.Pool({ connectionString: server.url, options: `-c search_path=${schema}` });
    try {
      await pool.query(`CREATE SCHEMA ${schema}`);
      const v1 = POSTGRES_MIGRATIONS.slice(0, 1);
      expect(await migratePostgres(pool, "test", v1)).toEqual({ from: 0, to: 1 });
      await pool.query(
        "INSERT INTO sessions (id, agent, user_id, metadata, created_at) VALUES ('s_old', 'a', 'u', '{}', 1)",
      );
      const v2 = [
        ...v1,
        { version: 2, why: "test step", sql: "ALTER TABLE sessions ADD COLUMN note TEXT DEFAULT 'kept'" },
      ];
      expect(await migratePostgres(pool, "test", v2)).toEqual({ from: 1, to: 2 });
      const { rows } = await pool.query("SELECT id, note FROM sessions");
      expect(rows).toEqual([{ id: "s_old", note: "kept" }]);
      // A step that fails leaves the schema at the version before it.
      const broken = [
        ...v2,
        { version: 3, why: "fails", sql: "ALTER TABLE sessions ADD COLUMN x INT; SELECT 1/0" },
      ];
      await expect(migratePostgres(pool, "test", broken)).rejects.toThrow(/division by zero/);
      expect((await pool.query("SELECT version FROM patchbay_schema")).rows).toEqual([{ version: 2 }]);
      expect(
        (
          await pool.query(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'x'",
            [schema],
          )
        ).rowCount,
      ).toBe(0);
      // This server's steps end at version 1: a schema at 2 was written by a newer server.
      const error = await migratePostgres(pool, "postgres://db/x", v1).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreVersionError);
      expect((error as StoreVersionError).code).toBe("store_version");
      expect((error as Error).message).toMatch(/schema version 2.*up to 1/);
      expect((await pool.query("SELECT version FROM patchbay_schema")).rows).toEqual([{ version: 2 }]);
    } finally {
      await pool.end();
    }
  });

  it("refuses a second server on the same schema, naming the holder, until the first one closes", async () => {
    const schema = freshSchema();
    const first = await PostgresStore.open({ url: server.url, schema });
    const error = await PostgresStore.open({ url: server.url, schema }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreLockedError);
    expect((error as StoreLockedError).code).toBe("store_locked");
    expect((error as Error).message).toContain(`pid ${process.pid} on ${hostname()}`);
    // Another schema on the same database is another store.
    const other = await PostgresStore.open({ url: server.url, schema: freshSchema() });
    await other.close();
    await first.close();
    const next = await PostgresStore.open({ url: server.url, schema });
    await next.close();
  });

  it("takes its store lock again when the lock's connection drops (a database restart), and keeps writing", async () => {
    const schema = freshSchema();
    const { lines, logger } = keptLogger();
    const store = await PostgresStore.open({ url: server.url, schema, logger });
    try {
      await store.createSession(session("s_1"));
      const first = await lockHolderPid(schema);
      expect(first).toBeDefined();
      await admin((client) => client.query("SELECT pg_terminate_backend($1)", [first]));
      // Taken again within a bound, on a new backend.
      const again = await until(
        () => lockHolderPid(schema),
        (pid) => pid !== undefined && pid !== first,
      );
      expect(again).toBeDefined();
      expect(again).not.toBe(first);
      expect(store.lockStatus).toBe("held");
      // Said, with the cause.
      const warning = lines.find((line) => line.includes("store lock connection lost"));
      expect(warning).toMatch(/"level":"warn".*terminating connection due to administrator command/);
      await store.commit("s_1", { turn: runningTurn });
      expect((await store.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_1"]);
      // And a second server is still refused.
      const rival = await PostgresStore.open({ url: server.url, schema }).catch((e: unknown) => e);
      expect(rival).toBeInstanceOf(StoreLockedError);
    } finally {
      await store.close();
    }
  });

  it("stops writing for good when another server took the lock while its connection was down", async () => {
    const schema = freshSchema();
    const { lines, logger } = keptLogger();
    const a = await PostgresStore.open({ url: server.url, schema, logger });
    await a.createSession(session("s_1"));
    await a.commit("s_1", { turn: runningTurn });
    const pid = await lockHolderPid(schema);
    // Another process takes the lock the moment A's backend is gone, before A can take it again
    // (pg_advisory_lock waits for the terminated backend to let it go), then hands it to B.
    const rival = new pg.Client({ connectionString: server.url });
    await rival.connect();
    await rival.query("SELECT pg_terminate_backend($1)", [pid]);
    await rival.query("SELECT pg_advisory_lock(hashtext($1))", [`patchbay:${schema}`]);
    await until(
      async () => a.lockStatus,
      (status) => status === "lost",
    );
    await rival.end();
    const b = await PostgresStore.open({ url: server.url, schema, logger: silentLogger });
    try {
      expect(await recoverInterruptedTurns(b, silentLogger)).toBe(1);
      // A's turn goes on in A: its write is refused, typed, and stays refused.
      const refused = await a.commit("s_1", completed).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreLockLostError);
      expect((refused as StoreLockLostError).code).toBe("store_lock_lost");
      expect((refused as StoreLockLostError).taken).toBe(true);
      expect(a.lockStatus).toBe("lost");
      expect(lines.find((line) => line.includes("a second Patchbay server took the database"))).toMatch(
        /"level":"error"/,
      );
      await expect(a.createSession(session("s_2"))).rejects.toBeInstanceOf(StoreLockLostError);
      // B sees the turn ended by its recovery, and nothing of A after it.
      const events = (await b.readEvents("s_1", 0)).map((e) => e.type);
      expect(events).toContain("response.failed");
      expect(events).not.toContain("response.completed");
      expect(await b.turnsWithStatus("completed")).toEqual([]);
      expect(await b.getSession("s_2")).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("refuses a write that finds another server's holder row, even before its lock connection says so", async () => {
    const schema = freshSchema();
    const a = await PostgresStore.open({ url: server.url, schema, logger: silentLogger });
    try {
      await a.createSession(session("s_1"));
      // As a server that took the lock over writes its row (A's lock connection not noticed gone yet).
      await admin((client) => client.query(`UPDATE ${schema}.patchbay_holder SET token = 'rival', pid = 1`));
      const refused = await a.commit("s_1", { turn: runningTurn }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(StoreLockLostError);
      expect((refused as Error).message).toContain("pid 1 on");
      expect(a.lockStatus).toBe("lost");
      expect(await a.turnsWithStatus("running")).toEqual([]);
    } finally {
      await a.close();
    }
  });

  it("never puts the password in an error", async () => {
    const url = new URL(server.url);
    url.password = "s3cret-pw";
    url.port = "1"; // nothing listens there
    const error = (await PostgresStore.open({ url: url.toString() }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message).not.toContain("s3cret-pw");
    expect(error.message).toContain("127.0.0.1:1");
    expect(redactUrl("postgres://app:hunter2@db:5432/patchbay")).toBe("postgres://app:***@db:5432/patchbay");
  });

  it("refuses a schema name that is not a plain identifier", async () => {
    await expect(PostgresStore.open({ url: server.url, schema: "x; DROP TABLE y" })).rejects.toThrow(
      /schema/,
    );
  });
});
