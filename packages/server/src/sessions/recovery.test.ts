import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageItem, ToolCallItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger";
import { SqliteStore } from "../store/sqlite-store";
import { recoverInterruptedTurns } from "./recovery";

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
