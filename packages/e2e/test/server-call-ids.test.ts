import type { LanguageModel, ModelStreamEvent } from "@patchbay/models";
import { scripted } from "@patchbay/models";
import { normalizeToolCall, type ToolCallItem } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { closeAllClients, userClient } from "./helpers/clients";
import { recording } from "./helpers/recording-model";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

/** An in-process tool that records the call id it runs under and how often it ran. */
function recordingTool(): { tools: Tools; ids: string[] } {
  const ids: string[] = [];
  const tools = new Tools().register({
    name: "record_payment",
    description: "Record a payment",
    parameters: { type: "object", properties: { amount: { type: "integer" } }, required: ["amount"] },
    run: ({ amount }: { amount: number }, _signal, ctx) => {
      ids.push(ctx.id);
      return `payment ${ids.length} of ${amount}`;
    },
  });
  return { tools, ids };
}

async function conversationOf(sessionId: string): Promise<ToolCallItem[]> {
  const res = await fetch(`${server!.url}/v1/sessions/${sessionId}`, { headers: server!.backendHeaders() });
  const body = (await res.json()) as { conversation: Array<{ type: string }> };
  return body.conversation.filter((item): item is ToolCallItem => item.type === "tool_call");
}

/**
 * A model like an OpenAI-compatible server that leaves tool call ids out: a user message gets a
 * call of `record_payment` (normalized to id `call_0` every time), a tool result gets text.
 */
function idlessModel(): LanguageModel {
  const base = scripted({ rules: [] });
  return {
    provider: "openai",
    modelId: "idless",
    capabilities: base.capabilities,
    async *stream(request): AsyncGenerator<ModelStreamEvent> {
      const last = request.messages.at(-1);
      const usage = { inputTokens: 1, outputTokens: 1 };
      if (last?.role === "user") {
        const call = normalizeToolCall(
          { type: "function", function: { name: "record_payment", arguments: '{"amount":1}' } },
          0,
        );
        yield { type: "tool-call", call };
        yield { type: "finish", reason: "tool_calls", usage };
        return;
      }
      yield { type: "text-delta", delta: "Recorded." };
      yield { type: "finish", reason: "stop", usage };
    },
  };
}

describe("tool call ids", () => {
  it("gives the same call in two sessions that say the same thing two different ids", async () => {
    const { tools, ids } = recordingTool();
    server = await startTestServer({
      tools,
      agents: {
        pay: scriptedAgent([
          {
            match: "pay (?<amount>\\d+)",
            toolCalls: [{ tool: "record_payment", arguments: { amount: "{amount:integer}" } }],
            reply: "Done: {result}",
          },
        ]),
      },
    });
    const replies: string[] = [];
    const sessionIds: string[] = [];
    for (const user of ["u_1", "u_2"]) {
      const session = await (await userClient(server, user)).agent("pay").sessions.create();
      sessionIds.push(session.id);
      replies.push((await session.responses.create("pay 5")).text);
    }
    // The tool ran in each session: the second was not answered from the first one's cached
    // result, which a shared id would have done (the executor's idempotency store is per server).
    expect(replies).toEqual(["Done: payment 1 of 5", "Done: payment 2 of 5"]);
    expect(ids).toHaveLength(2);
    expect(ids[0]).not.toBe(ids[1]);
    const [first, second] = await Promise.all(sessionIds.map((id) => conversationOf(id)));
    expect(first!.map((c) => c.id)).toEqual([ids[0]]);
    expect(second!.map((c) => c.id)).toEqual([ids[1]]);
    // The scripted model's own ids are the same in both sessions; they are kept for the model.
    expect(first![0]!.providerCallId).toMatch(/^call_/);
    expect(first![0]!.providerCallId).toBe(second![0]!.providerCallId);
  });

  it("gives calls of a model that omits ids their own ids on every turn, and echoes the model's to it, across a restart", async () => {
    const { tools, ids } = recordingTool();
    const model = recording(idlessModel());
    server = await startTestServer({
      tools,
      agents: { pay: scriptedAgent([]) },
      createModel: () => model,
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("pay").sessions.create();
    expect((await session.responses.create("first")).text).toBe("Recorded.");
    const before = await conversationOf(session.id);
    client.close();

    // The ids are stored with the items: a restarted server keeps them.
    await server.restart();
    expect(await conversationOf(session.id)).toEqual(before);

    const again = await (await userClient(server, "u_1")).agent("pay").sessions.resume(session.id);
    expect((await again.responses.create("second")).text).toBe("Recorded.");
    const calls = await conversationOf(session.id);
    expect(calls.map((c) => c.providerCallId)).toEqual(["call_0", "call_0"]);
    expect(calls.map((c) => c.id)).toEqual(ids);
    expect(new Set(ids).size).toBe(2);
    expect(calls[0]!.id).toBe(before[0]!.id);

    // The model only ever sees its own ids: in the calls it made and in the results it is given.
    const seen = model.requests.flatMap((request) =>
      request.messages.flatMap((m) =>
        m.role === "tool"
          ? [m.toolCallId]
          : m.role === "assistant"
            ? (m.toolCalls ?? []).map((c) => c.id)
            : [],
      ),
    );
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(new Set(seen)).toEqual(new Set(["call_0"]));
  });
});
