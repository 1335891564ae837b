import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConversationItem, MessageItem, SessionEvent } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "../config/agent-config";
import { silentLogger } from "../observability/logger";
import { SqliteStore } from "../store/sqlite-store";
import { fitHostedCall, type HostedCallFrame } from "../workers/fit-hosted-call";
import { KeptConversations } from "../workers/kept-conversations";
import { MAX_KNOWN_COMMANDS, SessionLog } from "./session-log";

let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function message(id: string, text: string): MessageItem {
  return { type: "message", id, role: "user", text, status: "completed", createdAt: 0 };
}

async function runtimeWith(conversation: ConversationItem[], created = false): Promise<SessionLog> {
  dir = mkdtempSync(join(tmpdir(), "patchbay-runtime-"));
  store = new SqliteStore({ dataDir: dir });
  const record = { id: "s_1", agent: "a", userId: "u", metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const agent = defineAgent("a", { model: { provider: "scripted" } });
  return new SessionLog(record, agent, conversation, store, silentLogger, [], created);
}

describe("SessionLog.conversation", () => {
  it("hands out a new array each time, so a caller changing it leaves the session alone", async () => {
    const runtime = await runtimeWith([message("m_1", "one")]);
    const first = runtime.conversation();
    first.push(message("m_x", "not in the session"));
    first.length = 0;
    expect(runtime.conversation().map((item) => item.id)).toEqual(["m_1"]);
  });

  it("shares frozen items, so a reader cannot change the session's copy in place", async () => {
    const runtime = await runtimeWith([message("m_1", "one")]);
    await runtime.commit({ items: [message("m_2", "two")] });
    const [loaded, committed] = runtime.conversation() as MessageItem[];
    expect(Object.isFrozen(loaded)).toBe(true);
    expect(Object.isFrozen(committed)).toBe(true);
    expect(() => {
      committed!.text = "changed";
    }).toThrow(TypeError);
    expect(runtime.item("m_2")).toMatchObject({ text: "two" });
  });

  it("replaces an item on change, and an array handed out earlier keeps the item it had", async () => {
    const runtime = await runtimeWith([message("m_1", "one")]);
    const before = runtime.conversation();
    await runtime.commit({ items: [{ ...message("m_1", "one, edited") }] });
    expect(before[0]).toMatchObject({ text: "one" });
    expect(runtime.conversation()).toEqual([expect.objectContaining({ id: "m_1", text: "one, edited" })]);
  });

  it("gives the last items of the conversation in order, all of them when there are fewer, none for 0", async () => {
    const items = Array.from({ length: 7 }, (_, i) => message(`m_${i}`, `${i}`));
    const runtime = await runtimeWith(items);
    expect(runtime.recentConversation(3).map((item) => item.id)).toEqual(["m_4", "m_5", "m_6"]);
    expect(runtime.recentConversation(50)).toHaveLength(7);
    expect(runtime.recentConversation(0)).toEqual([]);
  });
});

describe("SessionLog committed items' JSON", () => {
  it("serializes a committed item once for the store, its event, the quota and a worker's frame", async () => {
    const runtime = await runtimeWith([]);
    let made = 0;
    // JSON.stringify calls `toJSON` each time the item is serialized.
    const toJSON = () => {
      made++;
      return { order_id: "A1" };
    };
    const args = { toJSON } as unknown as Record<string, unknown>;
    const item: ConversationItem = {
      type: "tool_call",
      id: "call_1",
      name: "lookup_order",
      arguments: args,
      status: "running",
      held: false,
      attempt: 1,
      createdAt: 0,
    };
    await runtime.commit({ items: [item], events: [{ type: "conversation.updated", item }] });
    expect(made).toBe(1);
    expect(Object.isFrozen(item)).toBe(true);
    const stored = (await store!.readEvents("s_1", 0)).at(-1) as SessionEvent & { item: unknown };
    expect(stored.item).toMatchObject({ id: "call_1", arguments: { order_id: "A1" } });
    expect(runtime.conversationSize.bytes).toBe(JSON.stringify(item).length);
    made = 0;
    const frame: HostedCallFrame = {
      type: "hosted.call",
      callId: "call_2",
      attempt: 1,
      agent: "a",
      sessionId: "s_1",
      tool: "lookup_order",
      arguments: {},
      user: { id: "u" },
      conversation: runtime.conversation(),
      timeoutMs: 1_000,
    };
    const kept = new KeptConversations({ sessions: 10, bytes: 1 << 20 }).fit(frame, 1 << 20);
    const whole = fitHostedCall(frame, 1 << 20);
    expect(made).toBe(0);
    expect(kept.ok && JSON.parse(kept.text).conversation).toEqual([JSON.parse(JSON.stringify(item))]);
    expect(whole.ok && JSON.parse(whole.text)).toEqual(JSON.parse(JSON.stringify(frame)));
  });

  it("freezes an item when it is committed, so a change to it afterwards throws", async () => {
    const runtime = await runtimeWith([]);
    const item = message("m_1", "one");
    const committed = runtime.commit({ items: [item] });
    expect(() => {
      item.text = "changed before the write";
    }).toThrow(TypeError);
    await committed;
    expect(await store!.conversation("s_1")).toEqual([message("m_1", "one")]);
  });
});

describe("SessionLog.append", () => {
  /** Per transaction, the events of each change in it (a group commit holds several changes). */
  function countingCommits(): { transactions: number[][] } {
    const seen = { transactions: [] as number[][] };
    const commit = store!.commit.bind(store!);
    store!.commit = (sessionId, change) => {
      seen.transactions.push([change.events?.length ?? 0]);
      return commit(sessionId, change);
    };
    const commitMany = store!.commitMany.bind(store!);
    store!.commitMany = (writes) => {
      seen.transactions.push(writes.map((write) => write.change.events?.length ?? 0));
      return commitMany(writes);
    };
    return seen;
  }

  it("writes the appends of one tick in one transaction, each event with its own seq, in order", async () => {
    const runtime = await runtimeWith([]);
    const seen = countingCommits();
    const broadcast: number[] = [];
    runtime.subscribe((event) => broadcast.push(event.seq));
    const writes = Array.from({ length: 50 }, (_, i) =>
      runtime.append({ type: "text.delta", responseId: "r_1", itemId: "m_1", delta: `${i} ` }),
    );
    const stored = await Promise.all(writes);
    expect(seen.transactions).toEqual([[50]]);
    expect(stored.map((events) => events.map((e) => e.seq))).toEqual(
      Array.from({ length: 50 }, (_, i) => [i + 1]),
    );
    expect(broadcast).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const logged = await runtime.readEvents(0);
    expect(logged.map((e) => (e.type === "text.delta" ? e.delta : ""))).toEqual(
      Array.from({ length: 50 }, (_, i) => `${i} `),
    );
  });

  it("joins the text deltas of one message appended in one tick, and no others", async () => {
    const runtime = await runtimeWith([]);
    const seen = countingCommits();
    const broadcast: string[] = [];
    runtime.subscribe((event) => broadcast.push(event.type === "text.delta" ? event.delta : event.type));
    const delta = (itemId: string, text: string) =>
      runtime.appendTextDelta({ type: "text.delta", responseId: "r_1", itemId, delta: text });
    const first = [delta("m_1", "Order "), delta("m_1", "A1001 "), delta("m_1", "is ")];
    // Another message's words, or another event, between two deltas keep them apart.
    const other = [
      delta("m_2", "other"),
      delta("m_1", "shipped"),
      runtime.append({ type: "tool.held", callId: "call_1" }),
      delta("m_1", "."),
    ];
    await Promise.all([...first, ...other]);
    // The next tick's words are a delta of their own.
    await delta("m_1", " Bye.");
    expect(broadcast).toEqual(["Order A1001 is ", "other", "shipped", "tool.held", ".", " Bye."]);
    expect(seen.transactions).toEqual([[5], [1]]);
    const logged = await runtime.readEvents(0);
    expect(logged.map((e) => [e.seq, e.type === "text.delta" ? e.delta : e.type])).toEqual([
      [1, "Order A1001 is "],
      [2, "other"],
      [3, "shipped"],
      [4, "tool.held"],
      [5, "."],
      [6, " Bye."],
    ]);
  });

  it("joins a tick's deltas without changing the drafts it was given", async () => {
    const runtime = await runtimeWith([]);
    const drafts = ["One ", "two ", "three ", "four."].map((text) => ({
      type: "text.delta" as const,
      responseId: "r_1",
      itemId: "m_1",
      delta: text,
    }));
    await Promise.all(drafts.map((draft) => runtime.appendTextDelta(draft)));
    expect(drafts.map((draft) => draft.delta)).toEqual(["One ", "two ", "three ", "four."]);
    const logged = await runtime.readEvents(0);
    expect(logged.map((e) => (e.type === "text.delta" ? e.delta : e.type))).toEqual(["One two three four."]);
  });

  it("logs appends made before a commit ahead of it, in its transaction, and those made after it behind it", async () => {
    const runtime = await runtimeWith([]);
    const seen = countingCommits();
    const before = runtime.append({ type: "tool.held", callId: "call_before" });
    const committed = runtime.commit({ events: [{ type: "tool.held", callId: "call_commit" }] });
    const after = runtime.append({ type: "tool.held", callId: "call_after" });
    const [b, c, a] = await Promise.all([before, committed, after]);
    // Each caller gets its own events only.
    expect([b, c, a].map((events) => events?.map((e) => e.seq))).toEqual([[1], [2], [3]]);
    const order = (await runtime.readEvents(0)).map((e) => (e.type === "tool.held" ? e.callId : ""));
    expect(order).toEqual(["call_before", "call_commit", "call_after"]);
    // The appends made after it join the same change, behind it.
    expect(seen.transactions).toEqual([[3]]);
  });

  it("writes the commits queued behind a running write together, each resolving with its own events in order", async () => {
    const runtime = await runtimeWith([]);
    await runtime.commit({ events: [{ type: "tool.held", callId: "call_0" }] });
    const seen = countingCommits();
    const broadcast: string[] = [];
    runtime.subscribe((event) => broadcast.push(event.type === "tool.held" ? event.callId : ""));
    const first = runtime.commit({ events: [{ type: "tool.held", callId: "call_1" }] });
    const rest = Array.from({ length: 5 }, (_, i) =>
      runtime.commit({ events: [{ type: "tool.held", callId: `call_${i + 2}` }] }),
    );
    const withCommand = runtime.commit({ command: { commandId: "cmd_1", kind: "x" } });
    const last = runtime.commit({ events: [{ type: "tool.held", callId: "call_7" }] });
    const stored = await Promise.all([first, ...rest, withCommand, last]);
    expect(stored.map((events) => events?.map((e) => e.seq))).toEqual([
      [2],
      [3],
      [4],
      [5],
      [6],
      [7],
      [],
      [8],
    ]);
    // Queued in one tick: one transaction, of one change up to the command, the command's own
    // (a duplicate drops its whole change), then the last.
    expect(seen.transactions).toEqual([[6, 0, 1]]);
    expect(broadcast).toEqual(["call_1", "call_2", "call_3", "call_4", "call_5", "call_6", "call_7"]);
  });

  it("keeps appends out of a commit with a command id, which a duplicate would drop", async () => {
    const runtime = await runtimeWith([]);
    await runtime.commit({ command: { commandId: "cmd_1", kind: "x" } });
    const appended = runtime.append({ type: "tool.held", callId: "call_1" });
    expect(await runtime.commit({ command: { commandId: "cmd_1", kind: "x" } })).toBeNull();
    expect(await appended).toEqual([expect.objectContaining({ seq: 1, callId: "call_1" })]);
  });

  it("removes a settled call's pending record with the tick's other writes", async () => {
    const runtime = await runtimeWith([]);
    const call = {
      callId: "call_1",
      sessionId: "s_1",
      responseId: "r_1",
      name: "lookup_order",
      arguments: {},
      location: "page" as const,
      attempt: 1,
      deadline: 1_000,
      createdAt: 0,
    };
    await runtime.commit({ pendingCalls: [call, { ...call, callId: "call_2" }] });
    const seen = countingCommits();
    const settled = runtime.settleCall("call_1");
    const next = runtime.commit({ pendingCalls: [{ ...call, callId: "call_3" }] });
    await Promise.all([settled, next]);
    expect(seen.transactions).toEqual([[0]]);
    expect((await store!.pendingCalls("s_1")).map((c) => c.callId).sort()).toEqual(["call_2", "call_3"]);
    await runtime.settleCall("call_2");
    expect((await store!.pendingCalls("s_1")).map((c) => c.callId)).toEqual(["call_3"]);
    // Settled, then pending again: the record must survive.
    const again = runtime.settleCall("call_3");
    await runtime.commit({ pendingCalls: [{ ...call, callId: "call_3", attempt: 2 }] });
    await again;
    expect((await store!.pendingCalls("s_1")).map((c) => [c.callId, c.attempt])).toEqual([["call_3", 2]]);
  });

  it("fails every append of a batch when its transaction fails, and later appends still work", async () => {
    const runtime = await runtimeWith([]);
    const commitMany = store!.commitMany.bind(store!);
    let failNext = true;
    store!.commitMany = (writes) => {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error("disk full"));
      }
      return commitMany(writes);
    };
    const failed = await Promise.allSettled([
      runtime.append({ type: "tool.held", callId: "call_1" }),
      runtime.append({ type: "tool.held", callId: "call_2" }),
    ]);
    expect(failed.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    const [event] = await runtime.append({ type: "tool.held", callId: "call_3" });
    expect(event).toMatchObject({ seq: 1, callId: "call_3" });
  });
});

describe("SessionLog group commit", () => {
  it("writes the changes several sessions queue in one tick in one transaction, each in its own order", async () => {
    const first = await runtimeWith([]);
    const record = { id: "s_2", agent: "a", userId: "u", metadata: {}, createdAt: 0, lastSeq: 0 };
    await store!.createSession(record);
    const second = new SessionLog(record, first.agent, [], store!, silentLogger);
    let transactions = 0;
    const commit = store!.commit.bind(store!);
    store!.commit = (sessionId, change) => {
      transactions++;
      return commit(sessionId, change);
    };
    const commitMany = store!.commitMany.bind(store!);
    store!.commitMany = (writes) => {
      transactions++;
      return commitMany(writes);
    };
    const writes = [];
    for (let i = 0; i < 5; i++) {
      writes.push(first.commit({ events: [{ type: "tool.held", callId: `a_${i}` }] }));
      writes.push(second.append({ type: "tool.held", callId: `b_${i}` }));
    }
    const stored = await Promise.all(writes);
    expect(transactions).toBe(1);
    expect(stored.map((events) => events?.map((e) => `${e.sessionId}:${e.seq}`))).toEqual(
      Array.from({ length: 5 }, (_, i) => [[`s_1:${i + 1}`], [`s_2:${i + 1}`]]).flat(),
    );
    expect(first.lastSeq).toBe(5);
    expect(second.lastSeq).toBe(5);
  });

  it("fails a change that cannot be written alone: the other sessions' changes in its transaction stand", async () => {
    const live = await runtimeWith([]);
    // A session the store does not have: its events cannot be written.
    const ghostRecord = { id: "s_ghost", agent: "a", userId: "u", metadata: {}, createdAt: 0, lastSeq: 0 };
    const ghost = new SessionLog(ghostRecord, live.agent, [], store!, silentLogger);
    const [ok, failed, after] = await Promise.allSettled([
      live.commit({ items: [message("m_1", "kept")], events: [{ type: "tool.held", callId: "call_1" }] }),
      ghost.commit({
        items: [message("m_2", "rolled back")],
        events: [{ type: "tool.held", callId: "call_2" }],
      }),
      live.commit({ events: [{ type: "tool.held", callId: "call_3" }] }),
    ]);
    expect(ok).toMatchObject({ status: "fulfilled", value: [expect.objectContaining({ seq: 1 })] });
    expect(failed).toMatchObject({
      status: "rejected",
      reason: expect.objectContaining({ message: expect.stringContaining("s_ghost") }),
    });
    expect(after).toMatchObject({ status: "fulfilled", value: [expect.objectContaining({ seq: 2 })] });
    expect((await store!.conversation("s_1")).map((item) => item.id)).toEqual(["m_1"]);
    // The failed change's item was rolled back with it.
    expect(await store!.conversation("s_ghost")).toEqual([]);
    expect(ghost.item("m_2")).toBeUndefined();
  });
});

describe("SessionLog admitted messages", () => {
  const turn = (responseId: string, status: "queued" | "running" | "completed") => ({
    responseId,
    sessionId: "s_1",
    commandId: "cmd_1",
    status,
    startedAt: 0,
  });

  it("joins the turn's first changes to its message's transaction, the turn's later record kept", async () => {
    const runtime = await runtimeWith([]);
    const transactions: string[][][] = [];
    const commitMany = store!.commitMany.bind(store!);
    store!.commitMany = (writes) => {
      transactions.push(writes.map((w) => (w.change.events ?? []).map((e) => e.type)));
      return commitMany(writes);
    };
    expect(await runtime.isNewCommand("cmd_1")).toBe(true);
    const admitted = runtime.commit(
      {
        command: { commandId: "cmd_1", kind: "message" },
        items: [message("m_1", "hello")],
        turn: turn("r_1", "queued"),
        events: [{ type: "tool.held", callId: "message" }],
      },
      { admits: true },
    );
    const started = runtime.commit({
      turn: turn("r_1", "running"),
      events: [{ type: "tool.held", callId: "started" }],
    });
    const delta = runtime.append({ type: "text.delta", responseId: "r_1", itemId: "m_2", delta: "Hi" });
    await Promise.all([admitted, started, delta]);
    expect(transactions).toEqual([[["tool.held", "tool.held", "text.delta"]]]);
    expect((await store!.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_1"]);
    expect(await store!.turnsWithStatus("queued")).toEqual([]);
    expect(await runtime.isNewCommand("cmd_1")).toBe(false);
  });

  it("rejects what was made behind a message that was a duplicate after all, and writes what came after", async () => {
    const runtime = await runtimeWith([]);
    await runtime.commit({ command: { commandId: "cmd_1", kind: "message" } });
    // A slow disk: the next tick comes while the message's transaction is written.
    const commitMany = store!.commitMany.bind(store!);
    store!.commitMany = async (writes) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return commitMany(writes);
    };
    const admitted = runtime.commit(
      { command: { commandId: "cmd_1", kind: "message" }, items: [message("m_1", "again")] },
      { admits: true },
    );
    const joined = runtime.commit({
      turn: turn("r_1", "running"),
      events: [{ type: "tool.held", callId: "a" }],
    });
    // A turn record of another turn cannot join it, and the appends of the next tick come later.
    const apart = runtime.commit({ turn: turn("r_2", "running") });
    const nextTick = new Promise<SessionEvent[]>((resolve, reject) =>
      setImmediate(() => runtime.append({ type: "tool.held", callId: "b" }).then(resolve, reject)),
    );
    const outcomes = await Promise.allSettled([admitted, joined, apart, nextTick]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "rejected"]);
    expect(outcomes[0]).toMatchObject({ value: null });
    expect(await store!.readEvents("s_1", 0)).toEqual([]);
    expect(await store!.conversation("s_1")).toEqual([]);
    expect(await store!.turnsWithStatus("running")).toEqual([]);
    // Decided: what is made from now on is written as always.
    expect(await runtime.append({ type: "tool.held", callId: "c" })).toEqual([
      expect.objectContaining({ seq: 1 }),
    ]);
  });

  it("waits for a change queued with a command id before it says whether the id is new", async () => {
    const runtime = await runtimeWith([]);
    const queued = runtime.commit({ command: { commandId: "cmd_1", kind: "interrupt" } });
    expect(await runtime.isNewCommand("cmd_1")).toBe(false);
    await queued;
    expect(await runtime.isNewCommand("cmd_2")).toBe(true);
  });
});

describe("SessionLog command ids known in memory", () => {
  /** Counts the store's `hasCommand` reads. */
  function countingChecks(): { reads: number } {
    const seen = { reads: 0 };
    const hasCommand = store!.hasCommand.bind(store!);
    store!.hasCommand = (sessionId, commandId) => {
      seen.reads++;
      return hasCommand(sessionId, commandId);
    };
    return seen;
  }
  const command = (commandId: string) => ({ command: { commandId, kind: "message" } });

  it("answers for a session it was made for at its creation without reading the store", async () => {
    const runtime = await runtimeWith([], true);
    const checks = countingChecks();
    expect(await runtime.isNewCommand("cmd_1")).toBe(true);
    await runtime.commit({ ...command("cmd_1"), items: [message("m_1", "hello")] }, { admits: true });
    // A duplicate found by the transaction is known as well.
    expect(await runtime.commit(command("cmd_1"))).toBeNull();
    expect(await runtime.isNewCommand("cmd_1")).toBe(false);
    expect(await runtime.isNewCommand("cmd_2")).toBe(true);
    expect(checks.reads).toBe(0);
  });

  it("reads the store for a session it loaded, whose earlier commands it never saw", async () => {
    const runtime = await runtimeWith([]);
    await store!.commit("s_1", command("cmd_before"));
    const checks = countingChecks();
    expect(await runtime.isNewCommand("cmd_before")).toBe(false);
    expect(await runtime.isNewCommand("cmd_new")).toBe(true);
    expect(checks.reads).toBe(2);
  });

  it("reads the store once a session has more commands than it keeps", async () => {
    const runtime = await runtimeWith([], true);
    for (let i = 0; i <= MAX_KNOWN_COMMANDS; i++) await runtime.commit(command(`cmd_${i}`));
    const checks = countingChecks();
    expect(await runtime.isNewCommand("cmd_0")).toBe(false);
    expect(await runtime.isNewCommand(`cmd_${MAX_KNOWN_COMMANDS}`)).toBe(false);
    expect(await runtime.isNewCommand("cmd_next")).toBe(true);
    expect(checks.reads).toBe(3);
  });

  it("reads the store after a write of a command failed, which the store may hold all the same", async () => {
    const runtime = await runtimeWith([], true);
    const commitMany = store!.commitMany.bind(store!);
    // The transaction is written, and its answer is lost (a connection dropped after COMMIT).
    store!.commitMany = async (writes) => {
      await commitMany(writes);
      throw new Error("connection lost after COMMIT");
    };
    await expect(runtime.commit(command("cmd_1"))).rejects.toThrow("connection lost");
    store!.commitMany = commitMany;
    const checks = countingChecks();
    expect(await runtime.isNewCommand("cmd_1")).toBe(false);
    expect(checks.reads).toBe(1);
  });
});

describe("SessionLog subscribers", () => {
  it("delivers each event once to each subscriber, in order, and none after it unsubscribed", async () => {
    const runtime = await runtimeWith([]);
    const seen: string[] = [];
    const first = (event: { seq: number }) => seen.push(`first ${event.seq}`);
    const stop = runtime.subscribe(first);
    runtime.addSubscriber(first); // already subscribed: still one delivery
    runtime.subscribe((event) => seen.push(`second ${event.seq}`));
    expect(runtime.subscriberCount).toBe(2);
    await runtime.append({ type: "response.started", responseId: "r_1" });
    stop();
    stop();
    await runtime.append({ type: "response.started", responseId: "r_2" });
    expect(seen).toEqual(["first 1", "second 1", "second 2"]);
    expect(runtime.subscriberCount).toBe(1);
  });

  it("skips a subscriber another one removed earlier in the same broadcast, as a Set would", async () => {
    const runtime = await runtimeWith([]);
    const seen: string[] = [];
    const second = (event: { seq: number }) => seen.push(`second ${event.seq}`);
    runtime.subscribe((event) => {
      seen.push(`first ${event.seq}`);
      runtime.removeSubscriber(second);
    });
    runtime.addSubscriber(second);
    await runtime.append({ type: "response.started", responseId: "r_1" });
    await runtime.append({ type: "response.started", responseId: "r_2" });
    expect(seen).toEqual(["first 1", "first 2"]);
  });
});

describe("SessionLog listener subscribers", () => {
  it("delivers to an object's deliver with it as this, and tells it when the log closes", async () => {
    const runtime = await runtimeWith([]);
    const seen: string[] = [];
    const listener = {
      name: "page",
      deliver(this: { name: string }, event: { seq: number }) {
        seen.push(`${this.name} ${event.seq}`);
      },
      closed(reason: string) {
        seen.push(`closed ${reason}`);
      },
    };
    runtime.addSubscriber(listener);
    runtime.on("closed", (reason) => seen.push(`listener ${reason}`));
    expect(runtime.subscriberCount).toBe(1);
    await runtime.append({ type: "response.started", responseId: "r_1" });
    runtime.close("deleted");
    expect(seen).toEqual(["page 1", "closed deleted", "listener deleted"]);
    expect(runtime.subscriberCount).toBe(0);
  });

  it("goes from one subscriber to several and back without losing or doubling one", async () => {
    const runtime = await runtimeWith([]);
    const seen: string[] = [];
    const a = (event: { seq: number }) => seen.push(`a ${event.seq}`);
    const b = { deliver: (event: { seq: number }) => seen.push(`b ${event.seq}`) };
    runtime.addSubscriber(a);
    runtime.addSubscriber(b);
    runtime.addSubscriber(b);
    expect(runtime.subscriberCount).toBe(2);
    await runtime.append({ type: "response.started", responseId: "r_1" });
    runtime.removeSubscriber(a);
    expect(runtime.subscriberCount).toBe(1);
    await runtime.append({ type: "response.started", responseId: "r_2" });
    runtime.removeSubscriber(a);
    runtime.removeSubscriber(b);
    expect(runtime.subscriberCount).toBe(0);
    await runtime.append({ type: "response.started", responseId: "r_3" });
    runtime.addSubscriber(a);
    await runtime.append({ type: "response.started", responseId: "r_4" });
    expect(seen).toEqual(["a 1", "b 1", "b 2", "a 4"]);
  });
});

describe("SessionLog.readEvents", () => {
  it("asks the store only for a reader behind the last applied seq", async () => {
    const runtime = await runtimeWith([]);
    let asked = 0;
    const read = store!.readEvents.bind(store!);
    store!.readEvents = (...args) => {
      asked++;
      return read(...args);
    };
    // A new session: nothing to read, and the store is not asked.
    expect(await runtime.readEvents(0)).toEqual([]);
    expect(asked).toBe(0);
    await runtime.append({ type: "tool.held", callId: "call_1" });
    await runtime.append({ type: "tool.held", callId: "call_2" });
    expect(runtime.lastSeq).toBe(2);
    // Behind: read from the store, everything after the reader's seq.
    expect((await runtime.readEvents(1)).map((event) => event.seq)).toEqual([2]);
    expect(asked).toBe(1);
    // At (or past) the last seq: nothing to read, and the store is not asked.
    expect(await runtime.readEvents(2)).toEqual([]);
    expect(await runtime.readEvents(5)).toEqual([]);
    expect(asked).toBe(1);
  });
});
