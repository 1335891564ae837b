import type { ConversationItem, ServerToWorkerFrame } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { ConversationCache } from "./conversation-cache";

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };

const message = (id: string, text = `text of ${id}`): ConversationItem => ({
  type: "message",
  id,
  role: "user",
  text,
  status: "completed",
  createdAt: 1,
});

function call(
  sessionId: string,
  conversation: ConversationItem[],
  extra: Partial<HostedCall> = {},
): HostedCall {
  return {
    type: "hosted.call",
    callId: "call_1",
    attempt: 1,
    agent: "support",
    sessionId,
    tool: "lookup",
    arguments: {},
    user: { id: "u_1" },
    conversation,
    timeoutMs: 1_000,
    ...extra,
  };
}

describe("ConversationCache", () => {
  it("rebuilds the whole conversation from the items sent and those kept, in the frame's order", () => {
    const cache = new ConversationCache();
    const [m1, m2, m3] = [message("m_1"), message("m_2"), message("m_3")];
    expect(cache.read(call("s_1", [m1, m2], { conversationIds: ["m_1", "m_2"] }))).toEqual([m1, m2]);
    const m2b = message("m_2", "changed");
    // m_2 changed and m_3 is new; m_1 comes from what was kept.
    expect(cache.read(call("s_1", [m3, m2b], { conversationIds: ["m_1", "m_2", "m_3"] }))).toEqual([
      m1,
      m2b,
      m3,
    ]);
    // Nothing sent: all three kept, the changed m_2 included.
    expect(cache.read(call("s_1", [], { conversationIds: ["m_2", "m_3"] }))).toEqual([m2b, m3]);
    // m_1 left with the window: naming it now is out of step.
    expect(cache.read(call("s_1", [], { conversationIds: ["m_1"] }))).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it("keeps sessions apart, drops those the frame says to forget, and a whole frame drops its own", () => {
    const cache = new ConversationCache();
    cache.read(call("s_1", [message("a")], { conversationIds: ["a"] }));
    cache.read(call("s_2", [message("b")], { conversationIds: ["b"] }));
    expect(cache.read(call("s_2", [], { conversationIds: ["a"] }))).toBeUndefined();
    cache.read(call("s_2", [message("b")], { conversationIds: ["b"] }));
    expect(
      cache.read(call("s_3", [message("c")], { conversationIds: ["c"], forgetSessions: ["s_1"] })),
    ).toEqual([message("c")]);
    expect(cache.read(call("s_1", [], { conversationIds: ["a"] }))).toBeUndefined();
    // Without ids the conversation is the frame's, whole, and nothing of s_2 stays kept.
    expect(cache.read(call("s_2", [message("d")]))).toEqual([message("d")]);
    expect(cache.read(call("s_2", [], { conversationIds: ["b"] }))).toBeUndefined();
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
