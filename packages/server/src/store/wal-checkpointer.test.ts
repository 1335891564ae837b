import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { WalCheckpointer } from "./wal-checkpointer";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A database in WAL mode that never checkpoints by itself, as the store's connection under load. */
function walDatabase(): { db: Database.Database; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-wal-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "test.sqlite");
  const db = new Database(path);
  cleanups.push(() => {
    if (db.open) db.close();
  });
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  return { db, path };
}

function insertRows(db: Database.Database, count: number): void {
  const insert = db.prepare("INSERT INTO rows (body) VALUES (?)");
  db.transaction(() => {
    for (let i = 0; i < count; i++) insert.run("x".repeat(1000));
  })();
}

function checkpointer(path: string, onFailure: (error: unknown) => void = () => {}, driver?: string) {
  const checkpoints = driver
    ? new WalCheckpointer(path, onFailure, driver)
    : new WalCheckpointer(path, onFailure);
  cleanups.push(() => checkpoints.close());
  return checkpoints;
}

describe("WalCheckpointer", () => {
  it("folds every page of the WAL into the database file from its thread, and the next write starts the WAL over", async () => {
    const { db, path } = walDatabase();
    insertRows(db, 400);
    const sizeBefore = statSync(path).size;
    const checkpoints = checkpointer(path);

    const first = await checkpoints.checkpointNow();
    expect(first.busy).toBe(0);
    expect(first.log).toBeGreaterThan(100);
    expect(first.checkpointed).toBe(first.log);
    expect(statSync(path).size).toBeGreaterThan(sizeBefore + 300 * 1000);

    // Everything was copied and no reader holds the old WAL: this write goes to its beginning.
    insertRows(db, 10);
    const second = await checkpoints.checkpointNow();
    expect(second.log).toBeLessThan(first.log);
    expect(second.checkpointed).toBe(second.log);
    expect((db.prepare("SELECT COUNT(*) AS n FROM rows").get() as { n: number }).n).toBe(410);
  });

  it("runs a checkpoint on its own a little after a write", async () => {
    const { db, path } = walDatabase();
    const checkpoints = checkpointer(path);
    insertRows(db, 50);
    checkpoints.wrote();
    checkpoints.wrote();
    const deadline = Date.now() + 10_000;
    while (checkpoints.last === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(checkpoints.last?.log).toBeGreaterThan(0);
    expect(checkpoints.last?.checkpointed).toBe(checkpoints.last?.log);
  });

  it("runs another checkpoint after the running one when a write came meanwhile", async () => {
    const { db, path } = walDatabase();
    const checkpoints = checkpointer(path);
    insertRows(db, 50);
    const running = checkpoints.checkpointNow();
    insertRows(db, 50);
    checkpoints.wrote();
    const first = await running;
    expect(checkpoints.last).toBe(first);
    const deadline = Date.now() + 10_000;
    while (checkpoints.last === first && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(checkpoints.last).not.toBe(first);
    expect(checkpoints.last?.checkpointed).toBe(checkpoints.last?.log);
  });

  it("reports a thread that cannot start once, and refuses further checkpoints with the reason", async () => {
    const { path } = walDatabase();
    const failures: unknown[] = [];
    const checkpoints = checkpointer(path, (error) => failures.push(error), "/nonexistent/better-sqlite3.js");

    await expect(checkpoints.checkpointNow()).rejects.toThrow(/nonexistent/);
    expect(failures).toHaveLength(1);
    expect(checkpoints.failed).toBe(failures[0]);
    checkpoints.wrote();
    await expect(checkpoints.checkpointNow()).rejects.toThrow(/nonexistent/);
    expect(failures).toHaveLength(1);
  });

  it("stops its thread on close, after the checkpoint it was asked for", async () => {
    const { db, path } = walDatabase();
    insertRows(db, 20);
    const checkpoints = checkpointer(path);
    const pending = checkpoints.checkpointNow();
    await checkpoints.close();
    expect((await pending).checkpointed).toBeGreaterThan(0);
    await expect(checkpoints.checkpointNow()).rejects.toThrow(/closed/);
    // The thread's connection is closed: the store's own can fold the WAL back and truncate it.
    expect(db.pragma("wal_checkpoint(TRUNCATE)")).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
  });
});
