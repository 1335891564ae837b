import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConversationItem, MessageItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "./agent-config";
import { silentLogger } from "./logger";
import { SessionRuntime } from "./session-runtime";
import { SqliteStore } from "./sqlite-store";

let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function message(id: string, text: string): MessageItem {
  return { type: "message", id, role: "user", text, status: "completed", createdAt: 0 };
}

async function runtimeWith(conversation: ConversationItem[]): Promise<SessionRuntime> {
  dir = mkdtempSync(join(tmpdir(), "patchbay-runtime-"));
  store = new SqliteStore({ dataDir: dir });
  const record = { id: "s_1", agent: "a", userId: "u", metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const agent = defineAgent("a", { model: { provider: "scripted" } });
  return new SessionRuntime(record, agent, conversation, store, silentLogger);
}

describe("SessionRuntime.conversation", () => {
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
