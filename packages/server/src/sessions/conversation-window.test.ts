import type { MessageItem } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { ConversationWindow } from "./conversation-window";

const user = (id: string): MessageItem => ({
  type: "message",
  id,
  role: "user",
  text: id,
  status: "completed",
  createdAt: 0,
});
const reply = (id: string): MessageItem => ({
  type: "message",
  id,
  role: "assistant",
  text: id,
  status: "completed",
  createdAt: 0,
});

describe("ConversationWindow", () => {
  it("keeps at most the limit in memory, starting at a user message, and counts the whole conversation", () => {
    const window = new ConversationWindow([], 4);
    for (let i = 0; i < 10; i++) {
      window.apply(user(`u${i}`));
      window.apply(reply(`a${i}`));
    }
    expect(window.all().map((item) => item.id)).toEqual(["u8", "a8", "u9", "a9"]);
    expect(window.itemCount).toBe(20);
    expect(window.partial).toBe(true);
    expect(window.get("u0")).toBeUndefined();
    const before = window.byteCount;
    window.apply({ ...reply("a9"), text: "a much longer answer" });
    expect(window.itemCount).toBe(20);
    expect(window.byteCount).toBe(before + "a much longer answer".length - 2);
    window.apply({ ...user("u0"), text: "changed after it left memory" });
    expect(window.itemCount).toBe(20);
    expect(window.all()).toHaveLength(4);
  });

  it("counts each item's bytes as last seen, however often it changed between reads", () => {
    // A model of the rule: the JSON length of every item's latest state, cut off or not (an item
    // cut off keeps the size it had when it left memory).
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor(seed / 65536) % n; // the high bits: an LCG's low bits repeat quickly
    };
    for (const limit of [3, 8, Number.POSITIVE_INFINITY]) {
      const window = new ConversationWindow([], limit);
      const latest = new Map<string, number>();
      for (let step = 0; step < 400; step++) {
        const id = `i${random(40)}`;
        const item = { ...(random(3) === 0 ? user(id) : reply(id)), text: "x".repeat(random(30)) };
        const held = window.get(id) !== undefined;
        window.apply(item);
        if (!latest.has(id) || held) latest.set(id, JSON.stringify(item).length);
        if (random(4) === 0) {
          expect(window.byteCount).toBe([...latest.values()].reduce((sum, size) => sum + size, 0));
        }
      }
      expect(window.byteCount).toBe([...latest.values()].reduce((sum, size) => sum + size, 0));
      const reloaded = new ConversationWindow(window.all(), limit);
      expect(reloaded.byteCount).toBe(
        window.all().reduce((sum, item) => sum + JSON.stringify(item).length, 0),
      );
    }
  });
});
