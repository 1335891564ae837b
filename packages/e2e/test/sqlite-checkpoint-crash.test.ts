import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SqliteStore } from "@patchbay/server";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";

const BUILT = fileURLToPath(new URL("../../server/dist/index.js", import.meta.url));
const SESSIONS = 8;

// The writer: the built SqliteStore writing grouped changes of 8 sessions without pause, a turn
// of the event loop between groups (so its checkpoint thread is asked to run), printing each
// group's number once commitMany resolved, and how often the database file grew (a checkpoint
// copied pages into it).
const WRITER = `
import { statSync } from "node:fs";
const { SqliteStore } = await import(process.env.BUILT);
const store = new SqliteStore({ dataDir: process.env.DATA_DIR });
const ids = Array.from({ length: ${SESSIONS} }, (_, i) => "s_" + i);
for (const id of ids) await store.createSession({ id, agent: "a", userId: "u", metadata: {}, createdAt: 1, lastSeq: 0 });
let size = statSync(store.path).size;
let grew = 0;
const text = "x".repeat(2000);
for (let n = 1; ; n++) {
  const outcomes = await store.commitMany(ids.map((id) => ({
    sessionId: id,
    change: {
      items: [{ type: "message", id: "m_" + n, role: "user", text, status: "completed", createdAt: 1 }],
      events: [{ type: "tool.held", callId: "c_" + n }],
    },
  })));
  if (outcomes.some((outcome) => !outcome.ok)) throw new Error("a change failed");
  const now = statSync(store.path).size;
  if (now > size) { grew++; size = now; }
  process.stdout.write("ok " + n + " " + grew + "\\n");
  await new Promise((resolve) => setImmediate(resolve));
}
`;

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the writer until its checkpoints grew the file `checkpoints` times, then SIGKILLs it. */
async function writeThenKill(dataDir: string, checkpoints: number): Promise<number> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", WRITER], {
    env: { PATH: process.env.PATH ?? "", BUILT, DATA_DIR: dataDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once("exit", (_code, signal) => resolve(signal)),
  );
  let acknowledged = 0;
  let buffered = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the writer saw too few checkpoints: ${stderr}`)),
      30_000,
    );
    void exited.then(() => reject(new Error(`the writer ended by itself: ${stderr}`)));
    child.stdout?.on("data", (chunk) => {
      buffered += String(chunk);
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      for (const line of lines) {
        const [, n, grew] = line.split(" ").map(Number);
        acknowledged = n!;
        if (grew! >= checkpoints) {
          clearTimeout(timer);
          // Mid-write, and as likely as not mid-checkpoint: the thread runs every 100 ms.
          child.kill("SIGKILL");
          resolve();
        }
      }
    });
  });
  expect(await exited).toBe("SIGKILL");
  return acknowledged;
}

describe("SQLite store killed while its thread checkpoints", () => {
  it("keeps every group it confirmed, an intact file, and each session's seqs going on without a gap", async () => {
    expect(existsSync(BUILT), `${BUILT} is missing: run pnpm build first`).toBe(true);
    for (const checkpoints of [2, 5]) {
      const dataDir = mkdtempSync(join(tmpdir(), "patchbay-ckpt-crash-"));
      dirs.push(dataDir);
      const acknowledged = await writeThenKill(dataDir, checkpoints);
      expect(acknowledged).toBeGreaterThan(0);

      const check = new Database(join(dataDir, "patchbay.sqlite"));
      expect(check.pragma("integrity_check", { simple: true })).toBe("ok");
      check.close();
      const store = new SqliteStore({ dataDir });
      try {
        for (let i = 0; i < SESSIONS; i++) {
          const events = await store.readEvents(`s_${i}`, 0);
          // Every confirmed group is there; the one being written at the kill may be too.
          expect(events.length === acknowledged || events.length === acknowledged + 1).toBe(true);
          expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
          expect(await store.conversation(`s_${i}`)).toHaveLength(events.length);
          const next = await store.commit(`s_${i}`, { events: [{ type: "tool.held", callId: "after" }] });
          expect(next.events[0]?.seq).toBe(events.length + 1);
        }
      } finally {
        await store.close();
      }
    }
  });
});

describe("a SQLite store's checkpoint thread and the process", () => {
  it("keeps the process alive while the store closes: a script's top-level await of close() finishes", () => {
    const dataDir = mkdtempSync(join(tmpdir(), "patchbay-close-"));
    dirs.push(dataDir);
    // The thread is unref'd so an open store does not keep a process alive; closing waits for it
    // to exit, and nothing else kept the loop alive: the process ended with code 13 (a docs
    // sample that awaited server.close() printed nothing after it).
    const script = `
      const { SqliteStore } = await import(process.env.BUILT);
      const store = new SqliteStore({ dataDir: process.env.DATA_DIR });
      await store.createSession({ id: "s_1", agent: "a", userId: "u", metadata: {}, createdAt: 1, lastSeq: 0 });
      await store.close();
      console.log("closed");
    `;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      env: { PATH: process.env.PATH ?? "", BUILT, DATA_DIR: dataDir },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect({ status: child.status, stdout: child.stdout.trim(), stderr: child.stderr }).toEqual({
      status: 0,
      stdout: "closed",
      stderr: "",
    });
  });
});
