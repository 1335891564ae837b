import type { ConversationItem, MessageItem, ToolCallItem, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { type AgentFileInput, defineAgent } from "../config/agent-config";
import type { HostedToolRequest, HostedToolRouter, ToolCallHandlers } from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { SessionLog } from "../sessions/session-log";
import { MemoryStore } from "../store/memory-store";
import { attachReasoning } from "../turns/reasoning-state";
import { WorkerToolBackend } from "./worker-tool-backend";

const spec: ToolSpec = {
  name: "lookup_order",
  description: "Finds an order",
  parameters: { type: "object", properties: { order_id: { type: "string" } } },
};
const handlers: ToolCallHandlers = {
  progress() {},
  say() {},
  hold: () => ({ accepted: true }),
  attempt() {},
  approval: async () => ({ outcome: "allowed" as const }),
};

/** A session of `count` messages whose hosted calls go to a router that records each request. */
async function backendWith(
  count: number,
  agent: Partial<AgentFileInput> = {},
  extra: ConversationItem[] = [],
) {
  const store = new MemoryStore();
  const record = { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const conversation: ConversationItem[] = Array.from(
    { length: count },
    (_, i): MessageItem => ({
      type: "message",
      id: `m_${i}`,
      role: i % 2 ? "assistant" : "user",
      text: `${i}`,
      status: "completed",
      createdAt: i,
    }),
  );
  conversation.push(...extra);
  const config = defineAgent("support", { model: { provider: "scripted" }, ...agent });
  const runtime = new SessionLog(record, config, conversation, store, silentLogger);
  const requests: HostedToolRequest[] = [];
  const router: HostedToolRouter = {
    hasTool: () => true,
    specs: () => [spec],
    call: async (request) => {
      requests.push(request);
      return { outcome: "completed", content: { text: "shipped", images: [] } };
    },
    cancel() {},
  };
  return { backend: new WorkerToolBackend(runtime, router), requests };
}

function call(callId: string) {
  return {
    callId,
    responseId: "r_1",
    spec,
    arguments: { order_id: "A1" },
    user: { id: "u_1" },
    timeoutMs: 30_000,
  };
}

describe("WorkerToolBackend", () => {
  it("sends the 50 most recent conversation items with a call by default, oldest first", async () => {
    const { backend, requests } = await backendWith(120);
    await backend.run(call("call_1"), handlers);
    const ids = requests[0]!.conversation.map((item) => item.id);
    expect(ids).toHaveLength(50);
    expect(ids[0]).toBe("m_70");
    expect(ids.at(-1)).toBe("m_119");
  });

  it("sends the whole conversation when it is shorter than the bound", async () => {
    const { backend, requests } = await backendWith(3);
    await backend.run(call("call_1"), handlers);
    expect(requests[0]!.conversation.map((item) => item.id)).toEqual(["m_0", "m_1", "m_2"]);
  });

  it("follows the agent's hosted_call_conversation_items, and 0 sends none", async () => {
    const few = await backendWith(10, { hosted_call_conversation_items: 2 });
    await few.backend.run(call("call_1"), handlers);
    expect(few.requests[0]!.conversation.map((item) => item.id)).toEqual(["m_8", "m_9"]);
    const none = await backendWith(10, { hosted_call_conversation_items: 0 });
    await none.backend.run(call("call_2"), handlers);
    expect(none.requests[0]!.conversation).toEqual([]);
  });

  it("never hands a worker the model's reasoning state kept on a call", async () => {
    const earlier: ToolCallItem = {
      type: "tool_call",
      id: "call_0",
      providerCallId: "toolu_1",
      name: "lookup_order",
      arguments: { order_id: "A0" },
      status: "completed",
      held: false,
      attempt: 1,
      responseId: "r_0",
      createdAt: 10,
    };
    attachReasoning(
      [earlier],
      [{ type: "anthropic.thinking", thinking: "Private plan.", signature: "SIG_secret" }],
    );
    const { backend, requests } = await backendWith(2, {}, [earlier]);
    await backend.run(call("call_1"), handlers);
    const sent = requests[0]!.conversation;
    expect(sent.map((item) => item.id)).toEqual(["m_0", "m_1", "call_0"]);
    expect(sent[2]).toEqual({ ...earlier, reasoning: undefined });
    expect("reasoning" in sent[2]!).toBe(false);
    expect(JSON.stringify(sent)).not.toMatch(/Private plan|SIG_secret/);
  });
});
