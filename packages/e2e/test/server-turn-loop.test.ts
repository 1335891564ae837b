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
});
