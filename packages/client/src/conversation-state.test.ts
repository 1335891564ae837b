import type { ApprovalRequest, SessionEvent, ToolCallItem } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { ConversationState } from "./conversation-state";

const ev = (event: Record<string, unknown>, seq = 1) => ({ sessionId: "s_1", seq, ...event }) as SessionEvent;
/** The state after these events, applied in order. */
const applied = (events: Record<string, unknown>[], state = new ConversationState()) => {
  for (const [i, event] of events.entries()) state.apply(ev(event, i + 1), 1_000);
  return state;
};
const userMessage = (id: string) => ({
  type: "message.created",
  item: { type: "message", id, role: "user", text: id, status: "completed", createdAt: 1 },
});

const toolCall: ToolCallItem = {
  type: "tool_call",
  id: "call_1",
  name: "search",
  arguments: {},
  status: "running",
  location: "page",
  createdAt: 1,
} as ToolCallItem;

const approval: ApprovalRequest = {
  id: "approval_call_1",
  callId: "call_1",
  tool: "pay",
  title: "Pay 5",
  allowTitle: "Allow",
  declineTitle: "Decline",
  argumentsHash: "h",
  expiresAt: 2,
};

describe("ConversationState", () => {
  it("builds an assistant message from its deltas, then replaces it with the completed one", () => {
    const state = applied([
      { type: "text.delta", responseId: "r_1", itemId: "m_1", delta: "Hel" },
      { type: "text.delta", responseId: "r_1", itemId: "m_1", delta: "lo" },
    ]);
    expect(state.items).toEqual([
      {
        type: "message",
        id: "m_1",
        role: "assistant",
        text: "Hello",
        status: "in_progress",
        responseId: "r_1",
        createdAt: 1_000,
      },
    ]);
    const completed = {
      type: "message",
      id: "m_1",
      role: "assistant",
      text: "Hello!",
      status: "completed",
      createdAt: 2,
    };
    expect(state.apply(ev({ type: "message.completed", item: completed }), 5)).toBe(true);
    expect(state.items).toEqual([completed]);
  });

  it("never changes a snapshot it handed out: the next change makes the next one", () => {
    const state = applied([userMessage("m_u")]);
    const first = state.items;
    expect(state.items).toBe(first); // the same array while nothing changed
    applied([{ type: "text.delta", responseId: "r", itemId: "m_a", delta: "x" }], state);
    const second = state.items;
    expect(first.map((item) => item.id)).toEqual(["m_u"]);
    expect(second.map((item) => item.id)).toEqual(["m_u", "m_a"]);
    applied([{ type: "text.delta", responseId: "r", itemId: "m_a", delta: "y" }], state);
    // An item replaced in place inside the state is not replaced in a snapshot handed out.
    expect(second[1]).toMatchObject({ text: "x" });
    expect(state.items[1]).toMatchObject({ text: "xy" });
    expect(state.item("m_a")).toMatchObject({ text: "xy" });
    expect(state.item("m_b")).toBeUndefined();
  });

  it("keeps items in the order they first appeared, however often they change", () => {
    const state = applied([
      userMessage("m_1"),
      { type: "conversation.updated", item: toolCall },
      userMessage("m_2"),
      { type: "conversation.updated", item: { ...toolCall, status: "completed" } },
    ]);
    expect(state.items.map((item) => item.id)).toEqual(["m_1", "call_1", "m_2"]);
    expect(state.item("call_1")).toMatchObject({ status: "completed" });
    expect(new ConversationState().items).toHaveLength(0);
  });

  it("patches a tool call's progress and hold, and ignores them for an unknown call", () => {
    const state = applied([
      { type: "conversation.updated", item: toolCall },
      { type: "tool.progress", callId: "call_1", text: "3 of 9" },
      { type: "tool.held", callId: "call_1" },
    ]);
    expect(state.item("call_1")).toMatchObject({ progress: "3 of 9", held: true });
    const items = state.items;
    expect(state.apply(ev({ type: "tool.progress", callId: "nope", text: "x" }), 1)).toBe(false);
    expect(state.items).toBe(items);
  });

  it("keeps approvals waiting until they are resolved", () => {
    const state = applied([{ type: "approval.requested", approval }]);
    expect([...state.approvals.values()]).toEqual([approval]);
    expect(
      state.apply(
        ev({ type: "approval.resolved", approvalId: approval.id, callId: "call_1", outcome: "allowed" }),
        1,
      ),
    ).toBe(false);
    expect(state.approvals.size).toBe(0);
  });

  it("changes nothing for events that do not touch the conversation", () => {
    const state = applied([{ type: "conversation.updated", item: toolCall }]);
    const items = state.items;
    for (const event of [
      { type: "response.started", responseId: "r_1" },
      { type: "tool.say", callId: "call_1", text: "one moment" },
      { type: "approval.resolved", approvalId: "unknown", callId: "c", outcome: "expired" },
    ]) {
      expect(state.apply(ev(event), 1)).toBe(false);
    }
    expect(state.items).toBe(items);
  });
});
