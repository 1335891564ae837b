import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ReasoningPart } from "@patchbay/models";
import type { SessionEvent, ToolCallItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "../config/agent-config";
import { silentLogger } from "../observability/logger";
import { SessionLog } from "../sessions/session-log";
import { SqliteStore } from "../store/sqlite-store";
import { toModelMessages } from "./model-messages";
import { attachReasoning, eventForEndUsers, forEndUsers, reasoningOfCalls } from "./reasoning-state";

const thinking: ReasoningPart = { type: "anthropic.thinking", thinking: "Private plan.", signature: "SIG_1" };
const redacted: ReasoningPart = { type: "anthropic.redacted_thinking", data: "REDACTED_1" };

function callItem(id: string, providerCallId: string): ToolCallItem {
  return {
    type: "tool_call",
    id,
    providerCallId,
    name: "lookup_order",
    arguments: { order_id: "A1" },
    status: "completed",
    held: false,
    attempt: 1,
    responseId: "r_1",
    createdAt: 1,
    result: { outcome: "completed", content: { text: "shipped", images: [] } },
  };
}

const dirs: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("reasoning state on tool calls", () => {
  it("rides on the first call of a reply once, and goes back to the model with the batch", () => {
    const calls = [callItem("call_1", "toolu_1"), callItem("call_2", "toolu_2")];
    attachReasoning(calls, [thinking, redacted]);
    expect(reasoningOfCalls(calls)).toEqual([thinking, redacted]);
    expect("reasoning" in calls[1]!).toBe(false);
    const [assistant] = toModelMessages("", calls);
    expect(assistant).toMatchObject({ role: "assistant", reasoning: [thinking, redacted] });
    expect(assistant).toMatchObject({ toolCalls: [{ id: "toolu_1" }, { id: "toolu_2" }] });
  });

  it("adds nothing when the reply had no reasoning", () => {
    const calls = [callItem("call_1", "toolu_1")];
    attachReasoning(calls, []);
    expect("reasoning" in calls[0]!).toBe(false);
    expect(toModelMessages("", calls)[0]).not.toHaveProperty("reasoning");
  });

  it("is removed from items and events for end users, leaving the rest as it was", () => {
    const [call] = [callItem("call_1", "toolu_1")];
    attachReasoning([call!], [thinking]);
    const shown = forEndUsers(call!);
    expect(shown).toEqual({ ...callItem("call_1", "toolu_1") });
    expect("reasoning" in shown).toBe(false);
    expect(call).toHaveProperty("reasoning");
    const event = eventForEndUsers({ type: "conversation.updated", item: call! });
    expect(JSON.stringify(event)).not.toMatch(/Private plan|SIG_1/);
    const held = { type: "tool.held", callId: "call_1" } as const;
    expect(eventForEndUsers(held)).toBe(held);
  });

  it("gives end users the same object each time for a session's (frozen) item, so a worker's kept copy compares by identity", () => {
    const [call] = [callItem("call_1", "toolu_1")];
    attachReasoning([call!], [thinking]);
    const unfrozen = forEndUsers(call!);
    expect(forEndUsers(call!)).not.toBe(unfrozen);
    Object.freeze(call);
    const shown = forEndUsers(call!);
    expect(forEndUsers(call!)).toBe(shown);
    expect(Object.isFrozen(shown)).toBe(true);
    expect(shown).not.toHaveProperty("reasoning");
  });

  it("is stored with the item while the event clients get and replay carries none", async () => {
    const dir = mkdtempSync(join(tmpdir(), "patchbay-reasoning-"));
    dirs.push(dir);
    const store = new SqliteStore({ dataDir: dir });
    stores.push(store);
    const record = { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
    await store.createSession(record);
    const runtime = new SessionLog(
      record,
      defineAgent("support", { model: { provider: "scripted" } }),
      [],
      store,
      silentLogger,
    );
    const live: SessionEvent[] = [];
    runtime.subscribe((event) => live.push(event));
    const call = callItem("call_1", "toolu_1");
    attachReasoning([call], [thinking]);
    await runtime.commit({ items: [call], events: [{ type: "conversation.updated", item: call }] });
    const replayed = await store.readEvents("s_1", 0, 10);
    for (const events of [live, replayed]) {
      expect(events).toHaveLength(1);
      expect(JSON.stringify(events)).not.toMatch(/Private plan|SIG_1/);
    }
    expect(reasoningOfCalls(runtime.conversation() as ToolCallItem[])).toEqual([thinking]);
    expect(reasoningOfCalls((await store.conversation("s_1")) as ToolCallItem[])).toEqual([thinking]);
  });
});
