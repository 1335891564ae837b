import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { describeStoreContract, message, session } from "../testing/store-contract";
import { SqliteStore } from "./sqlite-store";
import type { Store } from "./store";

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-store-"));
  dirs.push(dir);
  return dir;
}

function open(dataDir: string): SqliteStore {
  const store = new SqliteStore({ dataDir });
  stores.push(store);
  return store;
}

describeStoreContract("SqliteStore", async () => open(tempDir()));

describe("SqliteStore", () => {
  it("folds its WAL back into the database file while it is open, after commits and grouped commits", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    const grown = async (size: number) => {
      // Far below the connection's own bound of 10,000 pages: only the checkpoint thread copies them.
      const deadline = Date.now() + 10_000;
      while (statSync(store.path).size < size && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(statSync(store.path).size).toBeGreaterThanOrEqual(size);
      return statSync(store.path).size;
    };
    let size = statSync(store.path).size;
    let n = 0;
    const item = () => message(`m_${n++}`, "x".repeat(4000));
    for (let i = 0; i < 20; i++) await store.commit("s_1", { items: [item()] });
    size = await grown(size + 20 * 4000);
    // Each batch starts after the last one's checkpoint ran: only its own writes ask for the next.
    for (let i = 0; i < 20; i++) await store.commit("s_1", { items: [item()] });
    size = await grown(size + 20 * 4000);
    await store.commitMany(
      Array.from({ length: 20 }, () => ({ sessionId: "s_1", change: { items: [item()] } })),
    );
    await grown(size + 20 * 4000);
    expect(await store.conversation("s_1")).toHaveLength(60);
  });

  it("hands out each session's seqs in order without a gap, across grouped writes, a failed change and a reopen", async () => {
    const dir = tempDir();
    const first = open(dir);
    await first.createSession(session("s_1"));
    await first.createSession({ ...session("s_2"), lastSeq: 7 });
    const held = (callId: string) => ({ events: [{ type: "tool.held" as const, callId }] });
    const outcomes = await first.commitMany([
      { sessionId: "s_1", change: held("a") },
      { sessionId: "s_missing", change: held("b") },
      { sessionId: "s_2", change: held("c") },
      { sessionId: "s_1", change: held("d") },
    ]);
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, false, true, true]);
    expect((await first.readEvents("s_1", 0)).map((e) => e.seq)).toEqual([1, 2]);
    // A session created with a last seq goes on from it.
    expect((await first.readEvents("s_2", 0)).map((e) => e.seq)).toEqual([8]);
    await first.close();

    const second = open(dir);
    expect((await second.getSession("s_1"))?.lastSeq).toBe(2);
    expect((await second.listSessions({ agent: "support" })).map((s) => [s.id, s.lastSeq])).toEqual(
      expect.arrayContaining([
        ["s_1", 2],
        ["s_2", 8],
      ]),
    );
    const { events } = await second.commit("s_1", held("e"));
    expect(events.map((e) => e.seq)).toEqual([3]);
    expect((await second.getSession("s_1"))?.lastSeq).toBe(3);
    // A deleted session's seqs are forgotten with it: one created again with its id starts over.
    expect(await second.deleteSession("s_1")).toBe(true);
    await second.createSession(session("s_1"));
    expect((await second.commit("s_1", held("f"))).events.map((e) => e.seq)).toEqual([1]);
  });

  it("keeps no session leases and refuses a fenced write, which only a cluster on Postgres makes", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    expect((store as Store).leases).toBeUndefined();
    await expect(
      store.commit("s_1", { fence: 1, events: [{ type: "tool.held", callId: "c" }] }),
    ).rejects.toThrow(/no session leases: a cluster needs Postgres/);
    expect(await store.readEvents("s_1", 0)).toEqual([]);
  });

  it("keeps sessions, items, events, approvals, pending calls and results across a reopen", async () => {
    const dir = tempDir();
    const store = open(dir);
    await store.createSession(session("s_1"));
    const committed = await store.commit("s_1", {
      items: [message("m_1", "hi")],
      events: [
        { type: "message.created", item: message("m_1", "hi") },
        { type: "tool.held", callId: "c_1" },
      ],
      turn: { responseId: "r_1", sessionId: "s_1", status: "running", startedAt: 10 },
      pendingCalls: [
        {
          callId: "c_1",
          sessionId: "s_1",
          responseId: "r_1",
          name: "get_location",
          arguments: {},
          location: "page",
          attempt: 2,
          deadline: 99,
          createdAt: 9,
        },
      ],
      approvals: [
        {
          sessionId: "s_1",
          request: {
            id: "ap_1",
            callId: "c_1",
            tool: "get_location",
            title: "Share?",
            allowTitle: "Share",
            declineTitle: "No",
            argumentsHash: "h",
            expiresAt: 100,
          },
        },
      ],
    });
    expect(committed.events.map((e) => [e.seq, e.sessionId])).toEqual([
      [1, "s_1"],
      [2, "s_1"],
    ]);
    expect(
      await store.putToolResult("s_1", "c_1", { outcome: "completed", content: { text: "a", images: [] } }),
    ).toBe(true);
    await store.close();

    const reopened = open(dir);
    expect(await reopened.getSession("s_1")).toEqual({ ...session("s_1"), lastSeq: 2 });
    expect(await reopened.conversation("s_1")).toEqual([message("m_1", "hi")]);
    expect((await reopened.readEvents("s_1", 1)).map((e) => e.type)).toEqual(["tool.held"]);
    expect((await reopened.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_1"]);
    expect((await reopened.pendingCalls("s_1"))[0]?.attempt).toBe(2);
    expect((await reopened.approvals("s_1", { open: true })).map((a) => a.request.id)).toEqual(["ap_1"]);
    expect((await reopened.getToolResult("c_1"))?.content.text).toBe("a");
  });

  it("keeps a session's page tools across a reopen", async () => {
    const dir = tempDir();
    const store = open(dir);
    await store.createSession(session("s_1"));
    expect(await store.pageTools("s_1")).toEqual([]);
    const tools = [{ name: "locate", description: "Where", parameters: { type: "object" as const } }];
    await store.commit("s_1", { pageTools: tools });
    await store.close();
    expect(await open(dir).pageTools("s_1")).toEqual(tools);
  });

  it("uses WAL mode and pages the event log", async () => {
    const dir = tempDir();
    const store = open(dir);
    await store.createSession(session("s_1"));
    for (let i = 0; i < 5; i++)
      await store.commit("s_1", { events: [{ type: "tool.held", callId: `c${i}` }] });
    expect((await store.readEvents("s_1", 1, 2)).map((e) => e.seq)).toEqual([2, 3]);
    expect(store.path.endsWith("patchbay.sqlite")).toBe(true);
    const { default: Database } = await import("better-sqlite3");
    const peek = new Database(store.path, { readonly: true });
    expect(peek.pragma("journal_mode", { simple: true })).toBe("wal");
    peek.close();
  });
});

describe("SqliteStore item positions (schema step 6: no index by position)", () => {
  it("keeps items in the order first written, an update in its place, across groups, a failed change and a reopen", async () => {
    const dir = tempDir();
    const first = open(dir);
    await first.createSession(session("s_1"));
    await first.createSession(session("s_2"));
    await first.commit("s_1", { items: [message("m_1", "one"), message("m_2", "two")] });
    await first.commitMany([
      { sessionId: "s_2", change: { items: [message("n_1", "other")] } },
      { sessionId: "s_1", change: { items: [message("m_1", "one, edited"), message("m_3", "three")] } },
      // Rolled back (no such session's events): its item takes no place in s_1's order either.
      {
        sessionId: "s_missing",
        change: { items: [message("x_1", "gone")], events: [{ type: "tool.held", callId: "a" }] },
      },
      { sessionId: "s_1", change: { items: [message("m_4", "four")] } },
    ]);
    expect(
      (await first.conversation("s_1")).map((item) => [item.id, (item as { text: string }).text]),
    ).toEqual([
      ["m_1", "one, edited"],
      ["m_2", "two"],
      ["m_3", "three"],
      ["m_4", "four"],
    ]);
    await first.close();
    // A reopened store reads each session's last position again before numbering the next item.
    const second = open(dir);
    await second.commit("s_1", { items: [message("m_2", "two, edited"), message("m_5", "five")] });
    await second.commit("s_2", { items: [message("n_2", "more")] });
    expect((await second.conversation("s_1")).map((item) => item.id)).toEqual([
      "m_1",
      "m_2",
      "m_3",
      "m_4",
      "m_5",
    ]);
    expect((await second.conversation("s_2")).map((item) => item.id)).toEqual(["n_1", "n_2"]);
    expect((await second.conversation("s_missing")).map((item) => item.id)).toEqual([]);
  });

  it("updates an item it inserted lately with one statement, and one it does not remember with two", async () => {
    const dir = tempDir();
    const first = open(dir);
    await first.createSession(session("s_1"));
    await first.commit("s_1", { items: [message("m_1", "asked"), message("m_2", "opened")] });
    const run = itemStatements(first);
    try {
      await first.commit("s_1", { items: [message("m_2", "closed"), message("m_3", "new")] });
      expect(run.sources).toEqual(["UPDATE items", "INSERT INTO items"]);
      await first.close();
      // A reopened store remembers no items: an update finds the row by trying to insert first.
      const second = open(dir);
      run.sources.length = 0;
      await second.commit("s_1", { items: [message("m_1", "asked again")] });
      expect(run.sources).toEqual(["INSERT INTO items", "UPDATE items"]);
      expect(
        (await second.conversation("s_1")).map((item) => [item.id, (item as { text: string }).text]),
      ).toEqual([
        ["m_1", "asked again"],
        ["m_2", "closed"],
        ["m_3", "new"],
      ]);
    } finally {
      run.restore();
    }
  });
});

/** Records the item statements every store runs until `restore` (their first two words). */
function itemStatements(store: SqliteStore): { sources: string[]; restore(): void } {
  const db = (store as unknown as { db: { prepare(sql: string): object } }).db;
  const proto = Object.getPrototypeOf(db.prepare("SELECT 1")) as { run: (...args: unknown[]) => unknown };
  const plain = proto.run;
  const sources: string[] = [];
  proto.run = function (this: { source: string }, ...args: unknown[]) {
    const head = /^(INSERT INTO items|UPDATE items)\b/.exec(this.source)?.[1];
    if (head) sources.push(head);
    return plain.apply(this, args);
  };
  return {
    sources,
    restore: () => {
      proto.run = plain;
    },
  };
}

describe("SqliteStore turns by status (schema step 7: only queued and running turns indexed)", () => {
  it("finds queued and running turns by the partial index, in start order, and finished ones still", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    const turn = (
      responseId: string,
      status: "queued" | "running" | "completed" | "failed",
      startedAt: number,
    ) =>
      store.commit("s_1", {
        turn: {
          responseId,
          sessionId: "s_1",
          status,
          startedAt,
          ...(status === "completed" || status === "failed" ? { endedAt: startedAt + 1 } : {}),
        },
      });
    await turn("r_late", "running", 30);
    await turn("r_early", "running", 10);
    await turn("r_queued", "queued", 20);
    await turn("r_done", "running", 5);
    // A turn that ends leaves the index; one that starts running from queued moves within it.
    await turn("r_done", "completed", 5);
    await turn("r_failed", "failed", 1);
    const ids = async (status: "queued" | "running" | "completed" | "failed") =>
      (await store.turnsWithStatus(status)).map((t) => t.responseId);
    expect(await ids("running")).toEqual(["r_early", "r_late"]);
    expect(await ids("queued")).toEqual(["r_queued"]);
    expect(await ids("completed")).toEqual(["r_done"]);
    expect(await ids("failed")).toEqual(["r_failed"]);
    await turn("r_queued", "running", 20);
    expect(await ids("running")).toEqual(["r_early", "r_queued", "r_late"]);
    expect(await ids("queued")).toEqual([]);

    // Recovery's query is answered from turns_open, which holds the open turns alone.
    const db = (store as unknown as { db: import("better-sqlite3").Database }).db;
    const plan = db
      .prepare(
        "EXPLAIN QUERY PLAN SELECT * FROM turns WHERE status = ? AND status IN ('queued', 'running') ORDER BY started_at",
      )
      .all("running") as { detail: string }[];
    expect(plan.map((row) => row.detail).join(" ")).toContain("turns_open");
    expect(
      db
        .prepare(
          "SELECT COUNT(*) AS n FROM turns INDEXED BY turns_open WHERE status IN ('queued', 'running')",
        )
        .get(),
    ).toEqual({ n: 3 });
  });
});

describe("SqliteStore.commitMany", () => {
  it("writes several sessions' changes in one transaction, each in order, each kept across a reopen", async () => {
    const dir = tempDir();
    const store = open(dir);
    await store.createSession(session("s_1"));
    await store.createSession(session("s_2"));
    const outcomes = await store.commitMany([
      { sessionId: "s_1", change: { events: [{ type: "tool.held", callId: "a" }] } },
      {
        sessionId: "s_2",
        change: { items: [message("m_1", "hi")], events: [{ type: "tool.held", callId: "b" }] },
      },
      { sessionId: "s_1", change: { events: [{ type: "tool.held", callId: "c" }] } },
    ]);
    expect(
      outcomes.map((o) => (o.ok ? o.result.events.map((e) => `${e.sessionId}:${e.seq}`) : "failed")),
    ).toEqual([["s_1:1"], ["s_2:1"], ["s_1:2"]]);
    await store.close();
    const reopened = open(dir);
    expect((await reopened.readEvents("s_1", 0)).map((e) => e.seq)).toEqual([1, 2]);
    expect((await reopened.conversation("s_2")).map((item) => item.id)).toEqual(["m_1"]);
    expect((await reopened.getSession("s_1"))?.lastSeq).toBe(2);
  });

  it("rolls back a change that fails alone (its items too) and a duplicate command drops only its own", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    await store.commit("s_1", { command: { commandId: "cmd_1", kind: "message" } });
    const outcomes = await store.commitMany([
      {
        sessionId: "s_1",
        change: { items: [message("m_1", "kept")], events: [{ type: "tool.held", callId: "a" }] },
      },
      // No such session: its events cannot be written, so its item must not stay either.
      {
        sessionId: "s_missing",
        change: { items: [message("m_2", "gone")], events: [{ type: "tool.held", callId: "b" }] },
      },
      {
        sessionId: "s_1",
        change: { command: { commandId: "cmd_1", kind: "message" }, items: [message("m_3", "dup")] },
      },
      { sessionId: "s_1", change: { events: [{ type: "tool.held", callId: "c" }] } },
    ]);
    expect(outcomes.map((o) => (o.ok ? (o.result.duplicate ? "duplicate" : "ok") : "failed"))).toEqual([
      "ok",
      "failed",
      "duplicate",
      "ok",
    ]);
    const failed = outcomes[1]!;
    expect(!failed.ok && String(failed.error)).toContain("s_missing");
    expect((await store.conversation("s_1")).map((item) => item.id)).toEqual(["m_1"]);
    expect(await store.conversation("s_missing")).toEqual([]);
    expect((await store.readEvents("s_1", 0)).map((e) => e.seq)).toEqual([1, 2]);
  });
});
