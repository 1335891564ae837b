import { afterEach, describe, expect, it } from "vitest";
import { RawClient } from "./helpers/raw-client";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

const locationTool = {
  name: "get_location",
  description: "Where the person is.",
  parameters: { type: "object", properties: { reason: { type: "string" } }, required: ["reason"] },
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("turn loop over a real socket", () => {
  it("runs a page tool round with the scripted model and replies with its result", async () => {
    server = await startTestServer({
      agents: {
        support: scriptedAgent([
          {
            match: "where am i",
            toolCalls: [{ tool: "get_location", arguments: { reason: "you asked" } }],
            reply: "You are at {results.get_location.city}.",
          },
        ]),
      },
    });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("support", { tools: [locationTool] });
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: "Where am I?" });
    const call = await client.nextOf("tool.call");
    expect(call.call.name).toBe("get_location");
    expect(call.call.arguments).toEqual({ reason: "you asked" });
    expect(call.attempt).toBe(1);
    client.send({
      type: "tool.result",
      sessionId,
      callId: call.call.id,
      attempt: 1,
      result: { outcome: "completed", content: { text: '{"city":"Lisbon"}', images: [] } },
    });
    const end = await client.turnEnd("c_1");
    expect(end.type).toBe("response.completed");
    expect(end.type === "response.completed" && end.text).toBe("You are at Lisbon.");
    const seqs = client.events(sessionId).map((e) => e.seq);
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    await client.close();
  });

  it("runs the calls of one reply at once, up to the session's concurrency limit", async () => {
    const rule = {
      match: "both",
      toolCalls: [
        { tool: "get_location", arguments: { reason: "a" } },
        { tool: "get_location", arguments: { reason: "b" } },
      ],
      reply: "Got {result}",
    };
    server = await startTestServer({
      agents: {
        wide: scriptedAgent([rule]),
        narrow: scriptedAgent([rule], { max_concurrent_tool_calls: 1 }),
      },
    });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const answer = (sessionId: string, callId: string, text: string) =>
      client.send({
        type: "tool.result",
        sessionId,
        callId,
        attempt: 1,
        result: { outcome: "completed", content: { text, images: [] } },
      });

    const wide = await client.create("wide", { tools: [locationTool] });
    client.send({ type: "message.send", sessionId: wide, commandId: "w", text: "both" });
    const first = await client.nextOf("tool.call");
    const second = await client.nextOf("tool.call");
    expect(new Set([first.call.arguments.reason, second.call.arguments.reason])).toEqual(new Set(["a", "b"]));
    answer(wide, first.call.id, "1");
    answer(wide, second.call.id, "2");
    await client.turnEnd("w");

    const narrow = await client.create("narrow", { tools: [locationTool] });
    client.send({ type: "message.send", sessionId: narrow, commandId: "n", text: "both" });
    const only = await client.nextOf("tool.call");
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(client.events(narrow).filter((e) => e.type === "tool.call").length).toBe(1);
    answer(narrow, only.call.id, "1");
    const next = await client.nextOf("tool.call");
    expect(next.call.id).not.toBe(only.call.id);
    answer(narrow, next.call.id, "2");
    expect((await client.turnEnd("n")).type).toBe("response.completed");
    await client.close();
  });
});
