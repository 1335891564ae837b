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
});
