// Finding 6 of issue 12, end to end: what the model is told for a failure is the same sentence
// whichever place the tool runs in, and an in-process call's arguments are checked once.
import { Tools } from "@patchbay/client";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { backendClient, closeAllClients } from "./helpers/clients";
import { RawClient } from "./helpers/raw-client";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

const agent = scriptedAgent([
  {
    match: "count",
    toolCalls: [{ tool: "count", arguments: { n: "x" } }],
    reply: "{result}",
    errorReply: "{result}",
  },
  {
    match: "ghost",
    toolCalls: [{ tool: "ghost", arguments: {} }],
    reply: "{result}",
    errorReply: "{result}",
  },
  {
    match: "ok",
    toolCalls: [{ tool: "count", arguments: { n: 3 } }],
    reply: "{result}",
    errorReply: "{result}",
  },
]);

let parses = 0;
const counting = () =>
  new Tools().register({
    name: "count",
    description: "Counts",
    parameters: z.object({ n: z.number() }).refine(() => {
      parses++;
      return true;
    }),
    run: async ({ n }) => `counted ${n}`,
  });

describe("the same words on every path (finding 6)", () => {
  it("tells the model the same sentence for bad arguments and an unknown tool, in-process or in the page", async () => {
    server = await startTestServer({ agents: { a: agent }, tools: counting() });
    const inProcess = await backendClient(server).agent("a").sessions.create({ userId: "u_1" });
    const other = await backendClient(server).agent("a").sessions.create({ userId: "u_1" });
    // The same tool in a page of a server whose own registry does not have it.
    const pageServer = await startTestServer({ agents: { a: agent } });
    try {
      const page = await backendClient(pageServer)
        .agent("a")
        .sessions.create({ userId: "u_1", tools: counting() });
      const badHere = (await inProcess.responses.create("count")).text;
      const badThere = (await page.responses.create("count")).text;
      const prefix = 'The arguments for "count" do not fit its schema:\n';
      expect(badHere.startsWith(prefix), badHere).toBe(true);
      expect(badThere.startsWith(prefix), badThere).toBe(true);
      expect((await other.responses.create("ghost")).text).toBe(
        'There is no tool named "ghost". Available tools: count.',
      );
      expect((await page.responses.create("ghost")).text).toBe(
        'There is no tool named "ghost". Available tools: count.',
      );
    } finally {
      await pageServer.close();
    }
  });

  it("checks an in-process call's arguments once", async () => {
    server = await startTestServer({ agents: { a: agent }, tools: counting() });
    const s = await backendClient(server).agent("a").sessions.create({ userId: "u_1" });
    parses = 0;
    expect((await s.responses.create("ok")).text).toBe("counted 3");
    expect(parses).toBe(1);
  });
});

describe("attempts on the page socket (finding 5)", () => {
  it("refuses a result for an older attempt once the call was delivered again", async () => {
    server = await startTestServer({ agents: { a: agent } });
    const token = await server.token("u_1");
    const spec = { name: "count", description: "Counts", parameters: { type: "object", properties: {} } };
    const first = await RawClient.open(server.wsUrl, { kind: "user", token });
    const sessionId = await first.create("a", { tools: [spec] });
    first.send({ type: "message.send", sessionId, commandId: "c_1", text: "ok" });
    const call = await first.nextOf("tool.call");
    expect(call.attempt).toBe(1);
    const second = await RawClient.open(server.wsUrl, { kind: "user", token });
    second.send({ type: "session.resume", requestId: "r_2", sessionId, afterSeq: call.seq, tools: [spec] });
    const again = await second.nextOf("tool.call");
    expect(again.attempt).toBe(2);
    const result = (text: string) => ({ outcome: "completed", content: { text, images: [] } });
    first.send({ type: "tool.result", sessionId, callId: call.call.id, attempt: 1, result: result("stale") });
    await new Promise((resolve) => setTimeout(resolve, 100));
    second.send({
      type: "tool.result",
      sessionId,
      callId: call.call.id,
      attempt: 2,
      result: result("fresh"),
    });
    const end = await first.turnEnd("c_1");
    expect(end.type === "response.completed" && end.text).toBe("fresh");
    await first.close();
    await second.close();
  });
});
