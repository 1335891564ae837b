// The turn loop on a MemoryStore, without sockets: the offline scripted model, a tool backend in
// this process that records what it is asked, and the session's events as the log broadcast them.
import { createModel, type LanguageModel, ModelError, type ModelStreamEvent } from "@patchbay/models";
import type { MessageItem, ToolCallItem, ToolResult, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { AgentFileInput } from "../config/agent-config";
import type { CancelReason, ToolCallHandlers } from "../extensions/dispatch-seams";
import { createLogger, type Logger, silentLogger } from "../observability/logger";
import { ServerMetrics } from "../observability/metrics";
import { type MemorySession, memorySession } from "../testing/memory-session";
import type { RoutedToolCall, ToolBackend } from "../tools/tool-backend";
import { ApprovalFlow } from "./approval-flow";
import { Turn, type TurnOutcome } from "./turn-loop";

const lookup: ToolSpec = {
  name: "lookup_order",
  description: "Finds an order",
  parameters: {
    type: "object",
    properties: { order_id: { type: "string" } },
    required: ["order_id"],
  },
};

/** A backend in this process: answers with `answer`, or when `hang` is set waits for `finish` or a cancel. */
function recordingBackend(options: { answer?: ToolResult; hang?: boolean; spec?: ToolSpec } = {}) {
  const spec = options.spec ?? lookup;
  const runs: RoutedToolCall[] = [];
  const cancels: [string, CancelReason][] = [];
  const waiting = new Map<string, (result: ToolResult) => void>();
  const backend: ToolBackend = {
    location: "server",
    remote: false,
    specs: () => [spec],
    has: (name) => name === spec.name,
    timeoutCeilingMs: () => 60_000,
    run(call: RoutedToolCall, _handlers: ToolCallHandlers) {
      runs.push(call);
      if (!options.hang) {
        return Promise.resolve(
          options.answer ?? { outcome: "completed", content: { text: "shipped", images: [] } },
        );
      }
      return new Promise<ToolResult>((resolve) => waiting.set(call.callId, resolve));
    },
    cancel(callId, reason) {
      cancels.push([callId, reason]);
      waiting.get(callId)?.({ outcome: "cancelled", content: { text: "stopped", images: [] } });
    },
  };
  const finish = (callId: string) =>
    waiting.get(callId)?.({ outcome: "completed", content: { text: "done late", images: [] } });
  return { backend, runs, cancels, finish };
}

const orderAgent = (extra: Partial<AgentFileInput> = {}, toolCalls = 1): AgentFileInput => ({
  model: {
    provider: "scripted",
    rules: [
      {
        match: "order (?<id>\\w+)",
        toolCalls: Array.from({ length: toolCalls }, () => ({
          tool: "lookup_order",
          arguments: { order_id: "{id}" },
        })),
        reply: "Order: {results.lookup_order}",
        errorReply: "Could not: {result}",
      },
    ],
    capabilities: { parallelToolCalls: false },
  },
  ...extra,
});

async function turnOf(
  session: MemorySession,
  backend: ToolBackend,
  userItem: MessageItem,
  model: LanguageModel = createModel(session.log.agent.model),
  approvals = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 }),
  logger: Logger = silentLogger,
): Promise<Turn> {
  return new Turn({
    runtime: session.log,
    model,
    approvals,
    backends: [backend],
    responseId: "r_1",
    commandId: "c_1",
    userItem,
    user: { id: "u_1" },
    progressIntervalMs: 10,
    logger,
    metrics: new ServerMetrics(),
  });
}

function toolCalls(session: MemorySession): ToolCallItem[] {
  return session.log.conversation().filter((item): item is ToolCallItem => item.type === "tool_call");
}

describe("a turn", () => {
  it("runs the model's tool call with checked arguments and replies with its result", async () => {
    const session = await memorySession(orderAgent());
    const { backend, runs } = recordingBackend();
    const turn = await turnOf(session, backend, await session.userMessage("where is order A1"));
    expect(await turn.run()).toBe<TurnOutcome>("completed");

    expect(runs.map((call) => call.arguments)).toEqual([{ order_id: "A1" }]);
    expect(toolCalls(session)).toEqual([
      expect.objectContaining({ name: "lookup_order", status: "completed", responseId: "r_1" }),
    ]);
    const assistant = session.log
      .conversation()
      .filter((item): item is MessageItem => item.type === "message" && item.role === "assistant");
    expect(assistant.map((item) => item.text)).toEqual(["Order: shipped"]);
    const kinds = session.events.map((event) => event.type);
    expect(kinds[1]).toBe("response.started");
    expect(kinds.at(-1)).toBe("response.completed");
    expect(session.eventsOf("response.completed")[0]).toMatchObject({
      reason: "stop",
      text: "Order: shipped",
    });
    // The store holds the turn as completed and the same conversation as the log.
    expect(await session.store.turnsWithStatus("running")).toEqual([]);
    expect((await session.store.conversation("s_1")).map((item) => item.id)).toEqual(
      session.log.conversation().map((item) => item.id),
    );
  });

  it("withdraws the calls of the last round allowed and ends with max_rounds", async () => {
    const session = await memorySession(orderAgent({ max_tool_rounds: 1 }, 2));
    const { backend, runs } = recordingBackend();
    const turn = await turnOf(session, backend, await session.userMessage("order B2"));
    expect(await turn.run()).toBe("completed");
    expect(runs).toHaveLength(1);
    expect(toolCalls(session).map((item) => item.status)).toEqual(["completed", "withdrawn"]);
    expect(session.eventsOf("response.completed")[0]).toMatchObject({ reason: "max_rounds" });
  });

  it("fails a call with invalid arguments without running it, and the model hears why", async () => {
    const session = await memorySession({
      model: {
        provider: "scripted",
        rules: [
          {
            match: "broken",
            toolCalls: [{ tool: "lookup_order", arguments: { order_id: 42 } }],
            reply: "fine",
            errorReply: "Could not: {result}",
          },
        ],
      },
    });
    const { backend, runs } = recordingBackend();
    const turn = await turnOf(session, backend, await session.userMessage("broken"));
    expect(await turn.run()).toBe("completed");
    expect(runs).toEqual([]);
    const [call] = toolCalls(session);
    expect(call).toMatchObject({ status: "failed", result: { outcome: "invalid_arguments" } });
    expect(session.eventsOf("response.completed")[0]?.text).toMatch(/^Could not: /);
  });

  it("asks before a tool with an approval runs, and a declined call never runs", async () => {
    const session = await memorySession(orderAgent());
    const guarded = { ...lookup, approval: { title: "Look up {order_id}?" } };
    const { backend, runs } = recordingBackend({ spec: guarded });
    const approvals = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 });
    const model = createModel(session.log.agent.model);
    const turn = await turnOf(session, backend, await session.userMessage("order F6"), model, approvals);
    const running = turn.run();
    await expect.poll(() => approvals.pending().length).toBe(1);
    expect(approvals.pending()[0]?.title).toBe("Look up F6?");
    expect(toolCalls(session)[0]?.status).toBe("awaiting_approval");
    approvals.decide(approvals.pending()[0]!.id, false);
    expect(await running).toBe("completed");
    expect(runs).toEqual([]);
    expect(toolCalls(session)[0]).toMatchObject({ status: "declined", result: { outcome: "declined" } });
    expect(session.eventsOf("response.completed")[0]?.text).toMatch(/^Could not: /);
  });

  it("on interrupt cancels an interruptible running call, keeps what happened and ends interrupted", async () => {
    const session = await memorySession(orderAgent());
    const { backend, runs, cancels } = recordingBackend({
      hang: true,
      spec: { ...lookup, interruptible: true },
    });
    const turn = await turnOf(session, backend, await session.userMessage("order C3"));
    const running = turn.run();
    await expect.poll(() => runs.length).toBe(1);
    turn.interrupt();
    expect(await running).toBe("interrupted");
    expect(cancels).toEqual([[runs[0]!.callId, "interrupted"]]);
    expect(toolCalls(session)[0]?.status).toBe("cancelled");
    expect(session.eventsOf("response.completed")[0]).toMatchObject({ reason: "interrupted" });
  });

  it("on interrupt lets a call that is not interruptible finish, then ends interrupted", async () => {
    const session = await memorySession(orderAgent());
    const { backend, runs, cancels, finish } = recordingBackend({ hang: true });
    const turn = await turnOf(session, backend, await session.userMessage("order E5"));
    const running = turn.run();
    await expect.poll(() => runs.length).toBe(1);
    turn.interrupt();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(cancels).toEqual([]);
    finish(runs[0]!.callId);
    expect(await running).toBe("interrupted");
    expect(toolCalls(session)[0]).toMatchObject({
      status: "completed",
      result: { content: { text: "done late" } },
    });
    // The model is not asked again after an interrupt.
    expect(session.eventsOf("message.completed")).toEqual([]);
  });

  it("turns a model error into response.failed for the user without the provider's text", async () => {
    const session = await memorySession(orderAgent());
    const { backend } = recordingBackend();
    const failing: LanguageModel = {
      ...createModel(session.log.agent.model),
      // biome-ignore lint/correctness/useYield: it fails before its first event, as a provider that refuses the request
      async *stream() {
        throw new ModelError("rate_limited", "provider says: org-42 quota exhausted, key sk-live-123");
      },
    };
    const turn = await turnOf(session, backend, await session.userMessage("order D4"), failing);
    expect(await turn.run()).toBe("failed");
    const [failed] = session.eventsOf("response.failed");
    expect(failed?.error.code).toBe("rate_limited");
    expect(JSON.stringify(failed)).not.toMatch(/org-42|sk-live/);
    expect(await session.store.turnsWithStatus("failed")).toEqual([
      expect.objectContaining({ responseId: "r_1" }),
    ]);
    // The conversation stays whole: the user's message is there, nothing half-written.
    expect(session.log.conversation().map((item) => item.type)).toEqual(["message"]);
  });

  it("logs the provider's request id of a failed model call for the developer", async () => {
    const session = await memorySession(orderAgent());
    const { backend } = recordingBackend();
    const failing: LanguageModel = {
      ...createModel(session.log.agent.model),
      // biome-ignore lint/correctness/useYield: it fails before its first event, as a provider that refuses the request
      async *stream() {
        throw new ModelError("bad_request", "openai: Invalid schema", {
          status: 400,
          requestId: "req_abc123",
        });
      },
    };
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      level: "warn",
      format: "json",
      write: (line) => lines.push(JSON.parse(line)),
    });
    const user = await session.userMessage("order D4");
    const turn = await turnOf(session, backend, user, failing, undefined, logger);
    expect(await turn.run()).toBe("failed");
    expect(lines).toEqual([
      expect.objectContaining({ msg: "model call failed", code: "bad_request", requestId: "req_abc123" }),
    ]);
  });

  it("warns the developer of a reply cut at the token cap, and ends a blocked prompt as a refusal", async () => {
    const session = await memorySession(orderAgent());
    const { backend } = recordingBackend();
    const replying = (events: ModelStreamEvent[]): LanguageModel => ({
      ...createModel(session.log.agent.model),
      async *stream() {
        yield* events;
      },
    });
    const usage = { inputTokens: 5, outputTokens: 0 };
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({
      level: "warn",
      format: "json",
      write: (line) => lines.push(JSON.parse(line)),
    });
    const cut = replying([
      { type: "text-delta", delta: "Once upon" },
      { type: "finish", reason: "length", usage },
    ]);
    const first = await session.userMessage("tell a story");
    expect(await (await turnOf(session, backend, first, cut, undefined, logger)).run()).toBe("completed");
    expect(session.eventsOf("response.completed")[0]).toMatchObject({ reason: "stop", text: "Once upon" });
    expect(lines).toEqual([
      expect.objectContaining({ msg: "model reply cut short", finishReason: "length" }),
    ]);

    // Gemini's promptFeedback.blockReason: no text, finish content_filter.
    const blocked = replying([{ type: "finish", reason: "content_filter", usage }]);
    const second = await session.userMessage("something blocked");
    await (await turnOf(session, backend, second, blocked, undefined, logger)).run();
    expect(session.eventsOf("response.completed")[1]).toMatchObject({ reason: "refusal", text: "" });
    expect(lines[1]).toMatchObject({ msg: "model reply cut short", finishReason: "content_filter" });
    expect(JSON.stringify(session.events)).not.toContain("content_filter");
  });

  it("runs one call of a reply when the model is to make one at a time but gave several", async () => {
    const session = await memorySession(orderAgent());
    const { backend, runs } = recordingBackend();
    const base = createModel(session.log.agent.model);
    const call = (id: string, order: string, index: number): ModelStreamEvent => ({
      type: "tool-call",
      call: {
        id,
        index,
        name: "lookup_order",
        arguments: { order_id: order },
        rawArguments: JSON.stringify({ order_id: order }),
      },
    });
    let round = 0;
    const model: LanguageModel = {
      ...base,
      capabilities: { ...base.capabilities, parallelToolCalls: false },
      async *stream() {
        const usage = { inputTokens: 1, outputTokens: 1 };
        if (round++ === 0)
          yield* [call("p1", "A1", 0), call("p2", "B2", 1), { type: "finish", reason: "tool_calls", usage }];
        else
          yield* [
            { type: "text-delta", delta: "done" },
            { type: "finish", reason: "stop", usage },
          ];
      },
    };
    const user = await session.userMessage("two orders");
    expect(await (await turnOf(session, backend, user, model)).run()).toBe("completed");
    expect(runs.map((run) => run.arguments)).toEqual([{ order_id: "A1" }]);
    expect(toolCalls(session).map((item) => item.providerCallId)).toEqual(["p1"]);
  });

  it("offers the model the same tool list while the backends' lists stay the same, a new one when one changes", async () => {
    const session = await memorySession(orderAgent());
    const base = createModel(session.log.agent.model);
    const offered: ToolSpec[][] = [];
    const model: LanguageModel = {
      ...base,
      stream: (request) => {
        offered.push(request.tools);
        return base.stream(request);
      },
    };
    const { backend } = recordingBackend();
    let list = [lookup];
    const changing: ToolBackend = { ...backend, specs: () => list };
    const first = await turnOf(session, changing, await session.userMessage("where is order A1"), model);
    expect(await first.run()).toBe("completed");
    const second = await turnOf(session, changing, await session.userMessage("where is order A2"), model);
    expect(await second.run()).toBe("completed");
    // Two rounds a turn, one list for all four.
    expect(offered).toHaveLength(4);
    for (const tools of offered) expect(tools).toBe(offered[0]);
    expect(offered[0]).toEqual([lookup]);
    expect(Object.isFrozen(offered[0])).toBe(true);
    const extra: ToolSpec = { ...lookup, name: "cancel_order" };
    list = [lookup, extra];
    const third = await turnOf(session, changing, await session.userMessage("where is order A3"), model);
    expect(await third.run()).toBe("completed");
    expect(offered[4]).not.toBe(offered[0]);
    expect(offered[4]).toEqual([lookup, extra]);
    expect(offered[5]).toBe(offered[4]);
  });
});
