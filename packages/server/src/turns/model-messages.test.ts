import type { ConversationItem } from "@patchbay/protocol";
import { describe, expect, it, vi } from "vitest";
import { toModelMessages } from "./model-messages";

const base = { createdAt: 0, held: false, attempt: 1 };

describe("toModelMessages", () => {
  it("writes a committed call's arguments once however often its batch is built, and a call being built each time", () => {
    const args = { order_id: "A1001", note: "x".repeat(1000) };
    const running = Object.freeze({
      type: "tool_call" as const,
      id: "call_1",
      providerCallId: "call_0",
      name: "lookup_order",
      arguments: args,
      status: "running" as const,
      responseId: "r1",
      ...base,
    });
    const user = {
      type: "message" as const,
      id: "m1",
      role: "user" as const,
      text: "where?",
      status: "completed" as const,
      createdAt: 0,
    };
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      const argumentTexts = () => stringify.mock.calls.filter(([value]) => value === args).length;
      toModelMessages("", [user, running]);
      // The call's next state, committed: a new item object with the same arguments.
      const completed = Object.freeze({
        ...running,
        status: "completed" as const,
        result: { outcome: "completed" as const, content: { text: "shipped", images: [] } },
      });
      const [, assistant] = toModelMessages("", [user, completed]);
      expect(argumentTexts()).toBe(1);
      expect(assistant).toMatchObject({ toolCalls: [{ rawArguments: JSON.stringify(args) }] });
      // An item not committed yet (not frozen) may still change: its text is made each time.
      const building = { ...completed, arguments: { ...args } };
      toModelMessages("", [user, building]);
      toModelMessages("", [user, building]);
      expect(stringify.mock.calls.filter(([value]) => value === building.arguments)).toHaveLength(2);
    } finally {
      stringify.mockRestore();
    }
  });

  it("gives the model the ids it gave its calls, not the server's", () => {
    const items: ConversationItem[] = [
      { type: "message", id: "m1", role: "user", text: "pay", status: "completed", createdAt: 0 },
      {
        type: "tool_call",
        id: "call_server_minted",
        providerCallId: "call_0",
        name: "pay",
        arguments: {},
        status: "completed",
        responseId: "r1",
        result: { outcome: "completed", content: { text: "paid", images: [] } },
        ...base,
      },
    ];
    const [, assistant, tool] = toModelMessages("", items);
    expect(assistant).toMatchObject({ role: "assistant", toolCalls: [{ id: "call_0" }] });
    expect(tool).toMatchObject({ role: "tool", toolCallId: "call_0" });
  });

  it("gives each batch of tool calls an assistant message and one tool message per call", () => {
    const items: ConversationItem[] = [
      { type: "message", id: "m1", role: "user", text: "where?", status: "completed", createdAt: 0 },
      {
        type: "message",
        id: "m2",
        role: "assistant",
        text: "Checking",
        status: "completed",
        responseId: "r1",
        createdAt: 0,
      },
      {
        type: "tool_call",
        id: "c1",
        name: "loc",
        arguments: { a: 1 },
        status: "completed",
        responseId: "r1",
        result: { outcome: "completed", content: { text: "Lisbon", images: [] } },
        ...base,
      },
      {
        type: "tool_call",
        id: "c2",
        name: "loc",
        arguments: {},
        status: "withdrawn",
        responseId: "r1",
        ...base,
      },
      {
        type: "message",
        id: "m3",
        role: "assistant",
        text: "Lisbon.",
        status: "completed",
        responseId: "r1",
        createdAt: 0,
      },
    ];
    const messages = toModelMessages("Be brief.", items);
    expect(messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool", "assistant"]);
    const assistant = messages[2];
    expect(
      assistant?.role === "assistant" && assistant.toolCalls?.map((c) => [c.id, c.rawArguments]),
    ).toEqual([
      ["c1", '{"a":1}'],
      ["c2", "{}"],
    ]);
    expect(messages[3]).toMatchObject({ role: "tool", toolCallId: "c1", isError: false });
    expect(messages[4]).toMatchObject({ role: "tool", toolCallId: "c2", isError: true });
    expect(messages[4]?.role === "tool" && messages[4].content.text).toMatch(/withdrawn/);
  });

  it("makes an empty assistant message for calls without text, and skips empty assistant text", () => {
    const items: ConversationItem[] = [
      { type: "message", id: "m1", role: "user", text: "hi", status: "completed", createdAt: 0 },
      { type: "tool_call", id: "c1", name: "t", arguments: {}, status: "running", responseId: "r1", ...base },
      {
        type: "message",
        id: "m2",
        role: "assistant",
        text: "",
        status: "interrupted",
        responseId: "r1",
        createdAt: 0,
      },
    ];
    const messages = toModelMessages("", items);
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(messages[1]).toMatchObject({ content: "" });
  });
});
