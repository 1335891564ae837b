import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageItem, ToolCallItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger";
import { MemoryStore } from "../store/memory-store";
import { SqliteStore } from "../store/sqlite-store";
import { recoverInterruptedTurns, recoverSession } from "./recovery";

let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("recoverInterruptedTurns", () => {
  it("ends a running turn as failed, keeps the streamed text, fails open calls and cancels open approvals", async () => {
    dir = mkdtempSync(join(tmpdir(), "patchbay-recovery-"));
    store = new SqliteStore({ dataDir: dir });
    await store.createSession({ id: "s_1", agent: "a", userId: "u", metadata: {}, createdAt: 0, lastSeq: 0 });
    const user: MessageItem = {
      type: "message",
      id: "m_u",
      role: "user",
      text: "hi",
      status: "completed",
      createdAt: 0,
    };
    const reply: MessageItem = {
      type: "message",
      id: "m_a",
      role: "assistant",
      text: "",
      status: "in_progress",
      responseId: "r_1",
      createdAt: 0,
    };
    const call: ToolCallItem = {
      type: "tool_call",
      id: "call_1",
      name: "t",
      arguments: {},
      status: "awaiting_approval",
      held: false,
      attempt: 1,
      responseId: "r_1",
      createdAt: 0,
    };
    await store.commit("s_1", {
      items: [user, reply, call],
      turn: { responseId: "r_1", sessionId: "s_1", commandId: "c_1", status: "running", startedAt: 0 },
      events: [
        { type: "text.delta", responseId: "r_1", itemId: "m_a", delta: "Hel" },
        { type: "text.delta", responseId: "r_1", itemId: "m_a", delta: "lo" },
      ],
      approvals: [
        {
          sessionId: "s_1",
          request: {
            id: "ap_1",
            callId: "call_1",
            tool: "t",
            title: "?",
            allowTitle: "Allow",
            declineTitle: "Decline",
            argumentsHash: "h",
            expiresAt: 1,
          },
        },
      ],
      pendingCalls: [
        {
          callId: "call_1",
          sessionId: "s_1",
          responseId: "r_1",
          name: "t",
          arguments: {},
          location: "page",
          attempt: 1,
          deadline: 1,
          createdAt: 0,
        },
      ],
    });

    expect(await recoverInterruptedTurns(store, silentLogger)).toBe(1);

    const conversation = await store.conversation("s_1");
    expect(conversation[1]).toMatchObject({ id: "m_a", status: "failed", text: "Hello" });
    expect(conversation[2]).toMatchObject({
      id: "call_1",
      status: "failed",
      result: { error: { code: "server_restart" } },
    });
    expect(await store.turnsWithStatus("running")).toEqual([]);
    expect(await store.pendingCalls("s_1")).toEqual([]);
    expect(await store.approvals("s_1", { open: true })).toEqual([]);
    const events = await store.readEvents("s_1", 2);
    expect(events.map((e) => e.type)).toEqual([
      "approval.resolved",
      "conversation.updated",
      "conversation.updated",
      "response.failed",
    ]);
    expect(events.at(-1)).toMatchObject({ commandId: "c_1", error: { code: "server_restart" } });
    // Nothing left to recover the second time.
    expect(await recoverInterruptedTurns(store, silentLogger)).toBe(0);
  });
});

describe("recoverSession (a cluster node taking a dead owner's session over)", () => {
  it("keeps a turn cut off mid hosted calls to go on: the calls a live worker hosts stay running, the others end server_restart, the turn is not ended", async () => {
    const memory = new MemoryStore();
    await memory.createSession({
      id: "s_1",
      agent: "a",
      userId: "u",
      metadata: {},
      createdAt: 0,
      lastSeq: 0,
    });
    const user: MessageItem = {
      type: "message",
      id: "m_u",
      role: "user",
      text: "pay",
      status: "completed",
      createdAt: 1,
    };
    const call = (
      id: string,
      name: string,
      createdAt: number,
      status: ToolCallItem["status"],
    ): ToolCallItem => ({
      type: "tool_call",
      id,
      name,
      arguments: { amount: 5 },
      status,
      held: false,
      attempt: 1,
      location: "worker",
      responseId: "r_1",
      createdAt,
    });
    const items = [
      user,
      call("call_0", "lookup", 2, "completed"),
      call("call_1", "record_payment", 3, "running"),
      call("call_2", "gone_tool", 3, "running"),
    ];
    await memory.commit("s_1", {
      items,
      turn: { responseId: "r_1", sessionId: "s_1", commandId: "c_1", status: "running", startedAt: 1 },
      events: [{ type: "response.started", responseId: "r_1", commandId: "c_1" }],
    });
    const { ended, resumed } = await recoverSession(
      memory,
      "s_1",
      silentLogger,
      (item) => item.name === "record_payment",
    );
    expect(ended).toBe(0);
    expect(resumed).toMatchObject({
      turn: { responseId: "r_1", status: "running" },
      calls: [{ id: "call_1", status: "running" }],
      userItem: { id: "m_u" },
      // Two model replies made calls so far: the turn goes on with the third.
      rounds: 2,
    });
    const after = await memory.conversation("s_1");
    expect(after.map((item) => `${item.id}:${item.status}`)).toEqual([
      "m_u:completed",
      "call_0:completed",
      "call_1:running",
      "call_2:failed",
    ]);
    const events = await memory.readEvents("s_1", 0);
    expect(events.some((event) => event.type === "response.failed")).toBe(false);
    expect((await memory.turnsWithStatus("running")).map((turn) => turn.responseId)).toEqual(["r_1"]);
    // Nothing a live worker hosts: the turn ends as after a restart.
    const again = await recoverSession(memory, "s_1", silentLogger);
    expect(again).toEqual({ ended: 1, resumed: undefined });
    expect((await memory.readEvents("s_1", 0)).at(-1)).toMatchObject({
      type: "response.failed",
      error: { code: "server_restart" },
    });
  });
});
