import { Tools } from "@patchbay/client";
import { afterEach, describe, expect, it } from "vitest";
import { closeAllClients, nextEvent, userClient } from "./helpers/clients";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

function pageTools(runs: string[], expiresInMs?: number): Tools {
  return new Tools().register({
    name: "book_flight",
    description: "Book the flight the user picked",
    parameters: {
      type: "object",
      properties: { flight_id: { type: "string" }, reason: { type: "string" } },
      required: ["flight_id"],
    },
    approval: {
      title: "Book flight {flight_id}?",
      reasonArgument: "reason",
      allowTitle: "Book",
      declineTitle: "Not now",
      ...(expiresInMs === undefined ? {} : { expiresInMs }),
    },
    run: ({ flight_id }: { flight_id: string }) => {
      runs.push(flight_id);
      return `Booked ${flight_id}.`;
    },
  });
}

async function start(): Promise<TestServer> {
  return startTestServer({
    agents: {
      travel: scriptedAgent([
        {
          match: "book (?<flight>[A-Z]{2}\\d+)",
          toolCalls: [
            { tool: "book_flight", arguments: { flight_id: "{flight}", reason: "you asked me to" } },
          ],
          reply: "Done: {result}",
          errorReply: "Not booked: {result}",
        },
      ]),
    },
  });
}

describe("a page tool that needs approval", () => {
  it("asks with placeholders filled, runs once allowed, and the model sees the result", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: pageTools(runs) });
    const asked = nextEvent(session, "approval");
    const reply = session.responses.create("Please book LH400");
    const [request] = await asked;
    expect(request).toMatchObject({
      tool: "book_flight",
      title: "Book flight LH400?",
      reason: "you asked me to",
      allowTitle: "Book",
      declineTitle: "Not now",
    });
    expect(request.expiresAt).toBeGreaterThan(Date.now() + 60_000);
    // The page renders the step from the conversation: it must show the call waiting.
    expect(session.conversation.find((item) => item.type === "tool_call")).toMatchObject({
      id: request.callId,
      status: "awaiting_approval",
    });
    expect(await session.decide(request.id, { allowed: true })).toBe("allowed");
    const result = await reply;
    expect(result.text).toBe("Done: Booked LH400.");
    expect(runs).toEqual(["LH400"]);
    const call = session.conversation.find((item) => item.type === "tool_call");
    expect(call).toMatchObject({ status: "completed", location: "page", result: { outcome: "completed" } });
  });

  it("never runs a declined call and tells the model", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: pageTools(runs) });
    session.on("approval", (request) => void session.decide(request.id, { allowed: false }));
    const result = await session.responses.create("book LH401");
    expect(result.text).toMatch(/^Not booked: The user declined/);
    expect(runs).toEqual([]);
    expect(session.conversation.find((item) => item.type === "tool_call")).toMatchObject({
      status: "declined",
      result: { outcome: "declined" },
    });
  });

  it("expires an unanswered approval, never runs the call, and answers a late decision with expired", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: pageTools(runs, 150) });
    const asked = nextEvent(session, "approval");
    const resolved = nextEvent(session, "approvalResolved");
    const started = Date.now();
    const result = await session.responses.create("book LH402");
    const [request] = await asked;
    expect((await resolved)[0].outcome).toBe("expired");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(result.text).toMatch(/did not answer the approval/);
    expect(runs).toEqual([]);
    expect(session.conversation.find((item) => item.type === "tool_call")).toMatchObject({
      result: { outcome: "approval_expired" },
    });
    await expect(session.decide(request.id, { allowed: true })).resolves.toBe("expired");
  });
});
