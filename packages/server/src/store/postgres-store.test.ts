import { hostname } from "node:os";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreLockedError, StoreVersionError } from "../errors";
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
