import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConversationItem, MessageItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "./sqlite-store";
import type { SessionRecord } from "./store";

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

function session(id: string, userId = "u_1", createdAt = 1): SessionRecord {
  return { id, agent: "support", userId, metadata: { plan: "pro" }, createdAt, lastSeq: 0 };
}

function message(id: string, text: string): MessageItem {
  return { type: "message", id, role: "user", text, status: "completed", createdAt: 5 };
}

describe("SqliteStore", () => {
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

  it("keeps the first result of a call and refuses the second", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    const first = { outcome: "completed" as const, content: { text: "first", images: [] } };
    const second = { outcome: "completed" as const, content: { text: "second", images: [] } };
    expect(await store.putToolResult("s_1", "c_1", first)).toBe(true);
    expect(await store.putToolResult("s_1", "c_1", second)).toBe(false);
    expect((await store.getToolResult("c_1"))?.content.text).toBe("first");
  });

  it("applies a change with a known command id not at all", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    const change = {
      command: { commandId: "c_1", kind: "message" },
      items: [message("m_1", "hi")],
      events: [],
    };
    expect((await store.commit("s_1", change)).duplicate).toBe(false);
    const again = await store.commit("s_1", {
      command: { commandId: "c_1", kind: "message" },
      items: [message("m_2", "again")],
      events: [{ type: "tool.held", callId: "x" }],
    });
    expect(again.duplicate).toBe(true);
    expect((await store.conversation("s_1")).map((i) => i.id)).toEqual(["m_1"]);
    expect(await store.readEvents("s_1", 0)).toEqual([]);
    expect(await store.hasCommand("s_1", "c_1")).toBe(true);
  });

  it("replaces an item in place and keeps insertion order", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    await store.commit("s_1", { items: [message("a", "1"), message("b", "2")] });
    await store.commit("s_1", { items: [message("a", "1 edited"), message("c", "3")] });
    const items: ConversationItem[] = await store.conversation("s_1");
    expect(items.map((i) => (i.type === "message" ? `${i.id}:${i.text}` : i.id))).toEqual([
      "a:1 edited",
      "b:2",
      "c:3",
    ]);
  });

  it("rolls back every row of a change that fails half way", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_1"));
    // Events for a session that does not exist fail after the items were written.
    await expect(
      store.commit("s_missing", {
        items: [message("m_1", "x")],
        events: [{ type: "tool.held", callId: "c" }],
      }),
    ).rejects.toThrow(/does not exist/);
    expect(await store.conversation("s_missing")).toEqual([]);
  });

  it("lists by agent and user, newest first, and deletes everything of a session", async () => {
    const store = open(tempDir());
    await store.createSession(session("s_old", "u_1", 1));
    await store.createSession(session("s_new", "u_1", 2));
    await store.createSession(session("s_other", "u_2", 3));
    expect((await store.listSessions({ agent: "support", userId: "u_1" })).map((s) => s.id)).toEqual([
      "s_new",
      "s_old",
    ]);
    expect((await store.listSessions({ agent: "support" })).length).toBe(3);
    expect((await store.listSessions({ agent: "other" })).length).toBe(0);
    await store.commit("s_new", { items: [message("m", "x")], events: [{ type: "tool.held", callId: "c" }] });
    expect(await store.deleteSession("s_new")).toBe(true);
    expect(await store.deleteSession("s_new")).toBe(false);
    expect(await store.getSession("s_new")).toBeUndefined();
    expect(await store.readEvents("s_new", 0)).toEqual([]);
    expect(await store.conversation("s_new")).toEqual([]);
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
