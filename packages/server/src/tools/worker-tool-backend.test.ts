// The worker tool backend as the tool-call runner uses it, on a MemoryStore and without sockets:
// what it hands the HostedToolRouter seam (the call, the recent conversation, cancels, the timeout
// ceiling), and a call carried through the real WorkerToolRouter.
import type { ConversationItem, MessageItem, ToolCallItem, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { type AgentFileInput, defineAgent } from "../config/agent-config";
import type { HostedToolRequest, HostedToolRouter, ToolCallHandlers } from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { SessionLog } from "../sessions/session-log";
import { MemoryStore } from "../store/memory-store";
import { attachReasoning } from "../turns/reasoning-state";
import { recordingWorker, sentOf } from "../workers/test-workers";
import { WorkerRegistry } from "../workers/worker-registry";
import { WorkerToolRouter } from "../workers/worker-tool-router";
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

/** `count` alternating user and assistant messages, oldest first. */
function messages(count: number): ConversationItem[] {
  return Array.from(
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
}

async function sessionLog(
  agent: Partial<AgentFileInput> = {},
  conversation: ConversationItem[] = [],
  id = "s_1",
  userId = "u_1",
) {
  const store = new MemoryStore();
  const record = { id, agent: "support", userId, metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const config = defineAgent("support", { model: { provider: "scripted" }, ...agent });
  return new SessionLog(record, config, conversation, store, silentLogger);
}

/** A backend on a session holding `conversation`, over a router that records what it is asked. */
async function backendWith(agent: Partial<AgentFileInput> = {}, conversation: ConversationItem[] = []) {
  const requests: HostedToolRequest[] = [];
  const cancels: [string, string][] = [];
  const asked: string[] = [];
  const router: HostedToolRouter = {
    hasTool: (agentId, name) => {
      asked.push(`${agentId}:${name}`);
      return name === spec.name;
    },
    specs: (agentId) => (agentId === "support" ? [spec] : []),
    call: async (request) => {
      requests.push(request);
      return { outcome: "completed", content: { text: "shipped", images: [] } };
    },
    cancel(callId, reason) {
      cancels.push([callId, reason]);
    },
    timeoutCeilingMs: (_agent, tool) => (tool === "slow_tool" ? 5_000 : undefined),
  };
  const backend = new WorkerToolBackend(await sessionLog(agent, conversation), router);
  return { backend, requests, cancels, asked };
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

describe("WorkerToolBackend as the runner's backend", () => {
  it("hands the router the call as routed, under the session's agent and id", async () => {
    const { backend, requests } = await backendWith();
    const result = await backend.run(call("call_9"), handlers);
    expect(result).toMatchObject({ outcome: "completed" });
    expect(requests).toEqual([
      expect.objectContaining({
        callId: "call_9",
        agent: "support",
        sessionId: "s_1",
        tool: "lookup_order",
        arguments: { order_id: "A1" },
        user: { id: "u_1" },
        timeoutMs: 30_000,
      }),
    ]);
  });

  it("asks the router about the session's agent, and carries cancels with their reason", async () => {
    const { backend, cancels, asked } = await backendWith();
    expect(backend.has("lookup_order")).toBe(true);
    expect(backend.has("other")).toBe(false);
    expect(asked).toEqual(["support:lookup_order", "support:other"]);
    expect(backend.specs()).toEqual([spec]);
    backend.cancel("call_1", "timed_out");
    expect(cancels).toEqual([["call_1", "timed_out"]]);
  });

  it("takes the workers' timeout ceiling for a tool, else the agent's hosted_tool_timeout_ms", async () => {
    const { backend } = await backendWith({ hosted_tool_timeout_ms: 42_000 });
    expect(backend.timeoutCeilingMs({ ...spec, name: "slow_tool" })).toBe(5_000);
    expect(backend.timeoutCeilingMs(spec)).toBe(42_000);
  });

  it("runs a call on a worker through the real WorkerToolRouter, settled by the worker's result", async () => {
    const runtime = await sessionLog({}, [], "s_2", "u_2");
    const registry = new WorkerRegistry();
    const router = new WorkerToolRouter({ registry });
    const worker = recordingWorker("w_1", { hosts: { support: { tools: ["lookup_order"] } } });
    registry.add(worker);
    const backend = new WorkerToolBackend(runtime, router);
    expect(backend.has("lookup_order")).toBe(true);
    const running = backend.run({ ...call("call_w"), user: { id: "u_2" } }, handlers);
    const [sent] = sentOf(worker, "hosted.call");
    expect(sent).toMatchObject({ callId: "call_w", attempt: 1, sessionId: "s_2", user: { id: "u_2" } });
    router.onFrame(worker, {
      type: "hosted.result",
      callId: "call_w",
      attempt: 1,
      result: { outcome: "completed", content: { text: "on its way", images: [] } },
    });
    expect(await running).toMatchObject({ content: { text: "on its way" } });
    router.close();
  });
});

describe("WorkerToolBackend: the conversation sent with a call", () => {
  it("sends the 50 most recent conversation items with a call by default, oldest first", async () => {
    const { backend, requests } = await backendWith({}, messages(120));
    await backend.run(call("call_1"), handlers);
    const ids = requests[0]!.conversation.map((item) => item.id);
    expect(ids).toHaveLength(50);
    expect(ids[0]).toBe("m_70");
    expect(ids.at(-1)).toBe("m_119");
  });

  it("sends the whole conversation when it is shorter than the bound", async () => {
    const { backend, requests } = await backendWith({}, messages(3));
    await backend.run(call("call_1"), handlers);
    expect(requests[0]!.conversation.map((item) => item.id)).toEqual(["m_0", "m_1", "m_2"]);
  });

  it("follows the agent's hosted_call_conversation_items, and 0 sends none", async () => {
    const few = await backendWith({ hosted_call_conversation_items: 2 }, messages(10));
    await few.backend.run(call("call_1"), handlers);
    expect(few.requests[0]!.conversation.map((item) => item.id)).toEqual(["m_8", "m_9"]);
    const none = await backendWith({ hosted_call_conversation_items: 0 }, messages(10));
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
    const { backend, requests } = await backendWith({}, [...messages(2), earlier]);
    await backend.run(call("call_1"), handlers);
    const sent = requests[0]!.conversation;
    expect(sent.map((item) => item.id)).toEqual(["m_0", "m_1", "call_0"]);
    expect(sent[2]).toEqual({ ...earlier, reasoning: undefined });
    expect("reasoning" in sent[2]!).toBe(false);
    expect(JSON.stringify(sent)).not.toMatch(/Private plan|SIG_secret/);
  });
});
