import type { ApprovalRequest, SessionEvent, ToolCallItem } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { type ConversationState, EMPTY_CONVERSATION, itemOf, reduceConversation } from "./conversation-state";

const ev = (event: Record<string, unknown>, seq = 1) => ({ sessionId: "s_1", seq, ...event }) as SessionEvent;
const reduce = (events: Record<string, unknown>[], from: ConversationState = EMPTY_CONVERSATION) =>
  events.reduce((state, event, i) => reduceConversation(state, ev(event, i + 1), 1_000), from);

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

describe("reduceConversation", () => {
  it("builds an assistant message from its deltas, then replaces it with the completed one", () => {
    const streaming = reduce([
      { type: "text.delta", responseId: "r_1", itemId: "m_1", delta: "Hel" },
      { type: "text.delta", responseId: "r_1", itemId: "m_1", delta: "lo" },
    ]);
    expect(streaming.items).toEqual([
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
    const done = reduceConversation(streaming, ev({ type: "message.completed", item: completed }), 5);
    expect(done.items).toEqual([completed]);
  });

  it("never changes a state it was given: each change is a new snapshot", () => {
    const first = reduce([
      {
        type: "message.created",
        item: { type: "message", id: "m_u", role: "user", text: "hi", status: "completed", createdAt: 1 },
      },
    ]);
    const items = first.items;
    const next = reduceConversation(
      first,
      ev({ type: "text.delta", responseId: "r", itemId: "m_a", delta: "x" }),
      1,
    );
    expect(first.items).toBe(items);
    expect(first.items).toHaveLength(1);
    expect(next.items).toHaveLength(2);
    expect(itemOf(next, "m_a")).toMatchObject({ text: "x" });
  });

  it("keeps every state right when two events are applied to the same state (states share an index)", () => {
    const message = (id: string) => ({
      type: "message.created",
      item: { type: "message", id, role: "user", text: id, status: "completed", createdAt: 1 },
    });
    const base = reduce([message("m_1")]);
    const left = reduce([message("m_left"), message("m_2")], base);
    const right = reduce([message("m_right")], base);
    expect(left.items.map((item) => item.id)).toEqual(["m_1", "m_left", "m_2"]);
    expect(right.items.map((item) => item.id)).toEqual(["m_1", "m_right"]);
    expect(itemOf(right, "m_right")?.id).toBe("m_right");
    expect(itemOf(right, "m_left")).toBeUndefined();
    expect(itemOf(left, "m_right")).toBeUndefined();
    expect(itemOf(base, "m_left")).toBeUndefined();
    // A later change of an item the older state does not have adds it there, at its own end.
    const again = reduce([message("m_2")], right);
    expect(again.items.map((item) => item.id)).toEqual(["m_1", "m_right", "m_2"]);
    expect(left.items.map((item) => item.id)).toEqual(["m_1", "m_left", "m_2"]);
    // A delta for a message the state does not have starts it, whatever a later state holds.
    const streamed = reduceConversation(
      base,
      ev({ type: "text.delta", responseId: "r", itemId: "m_2", delta: "x" }),
      1,
    );
    expect(streamed.items.map((item) => item.id)).toEqual(["m_1", "m_2"]);
    expect(itemOf(streamed, "m_2")).toMatchObject({ text: "x", role: "assistant" });
    // Every session starts from the same empty state, which never changes.
    expect(EMPTY_CONVERSATION.items).toHaveLength(0);
    expect(EMPTY_CONVERSATION.index.size).toBe(0);
  });

  it("patches a tool call's progress and hold, and ignores them for an unknown call", () => {
    const state = reduce([
      { type: "conversation.updated", item: toolCall },
      { type: "tool.progress", callId: "call_1", text: "3 of 9" },
      { type: "tool.held", callId: "call_1" },
    ]);
    expect(itemOf(state, "call_1")).toMatchObject({ progress: "3 of 9", held: true });
    expect(reduceConversation(state, ev({ type: "tool.progress", callId: "nope", text: "x" }), 1)).toBe(
      state,
    );
  });

  it("keeps approvals waiting until they are resolved", () => {
    const asked = reduce([{ type: "approval.requested", approval }]);
    expect([...asked.approvals.values()]).toEqual([approval]);
    const resolved = reduceConversation(
      asked,
      ev({ type: "approval.resolved", approvalId: approval.id, callId: "call_1", outcome: "allowed" }),
      1,
    );
    expect(resolved.approvals.size).toBe(0);
    expect(asked.approvals.size).toBe(1);
  });

  it("gives the same state for events that do not touch the conversation", () => {
    const state = reduce([{ type: "conversation.updated", item: toolCall }]);
    for (const event of [
      { type: "response.started", responseId: "r_1" },
      { type: "tool.say", callId: "call_1", text: "one moment" },
      { type: "approval.resolved", approvalId: "unknown", callId: "c", outcome: "expired" },
    ]) {
      expect(reduceConversation(state, ev(event), 1)).toBe(state);
    }
  });
});
