import { Tools } from "@patchbay/client";
import { afterEach, describe, expect, it } from "vitest";
import { closeAllClients, nextEvent, userClient } from "./helpers/clients";
import { RawClient } from "./helpers/raw-client";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

const noArgs = { type: "object", properties: {} } as const;

describe("interrupts", () => {
  it("cancels an interruptible call, lets a held one finish, and keeps what is done", async () => {
    server = await startTestServer({
      agents: {
        travel: scriptedAgent([
          {
            match: "search and book",
            toolCalls: [
              { tool: "search_flights", arguments: {} },
              { tool: "book_flight", arguments: {} },
            ],
            reply: "Both done.",
          },
          { match: "thanks", reply: "You are welcome." },
        ]),
      },
    });
    const searchAborted: string[] = [];
    let bookingSignalAborted: boolean | undefined;
    const tools = new Tools()
      .register({
        name: "search_flights",
        description: "Search for flights",
        parameters: noArgs,
        interruptible: true,
        run: (_args, signal) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener("abort", () => {
              searchAborted.push(String(signal.reason));
              reject(signal.reason);
            });
          }),
      })
      .register({
        name: "book_flight",
        description: "Book the flight",
        parameters: noArgs,
        interruptible: true,
        run: async (_args, _signal, ctx) => {
          const held = await ctx.disallowInterruptions();
          await new Promise((resolve) => setTimeout(resolve, 300));
          bookingSignalAborted = held.aborted;
          return "Booked. Confirmation AB12.";
        },
      });
    const client = await userClient(server, "u_1");
    const session = await client.agent("travel").sessions.create({ tools });
    const held = nextEvent(session, "held");
    const searching = nextEvent(
      session,
      "toolCall",
      (item) => item.name === "search_flights" && item.status === "running",
    );
    const reply = session.responses.create("search and book please");
    await Promise.all([held, searching]);
    await session.interrupt();
    const result = await reply;
    expect(result.reason).toBe("interrupted");
    const calls = session.conversation.filter((item) => item.type === "tool_call");
    expect(calls.find((c) => c.name === "search_flights")).toMatchObject({
      status: "cancelled",
      result: { outcome: "cancelled" },
    });
    expect(calls.find((c) => c.name === "book_flight")).toMatchObject({
      status: "completed",
      held: true,
      result: { outcome: "completed", content: { text: "Booked. Confirmation AB12." } },
    });
    expect(searchAborted.length).toBe(1);
    expect(bookingSignalAborted).toBe(false);
    // The next message works and the model sees the booking.
    expect((await session.responses.create("thanks")).text).toBe("You are welcome.");
  });

  it("withdraws a call still waiting for approval when a new message interrupts, and answers the new one", async () => {
    server = await startTestServer({
      agents: {
        travel: scriptedAgent([
          { match: "^book", toolCalls: [{ tool: "book", arguments: {} }], reply: "Booked." },
          { match: "never mind", reply: "Okay, nothing booked." },
        ]),
      },
    });
    const runs: number[] = [];
    const tools = new Tools().register({
      name: "book",
      description: "Book",
      parameters: noArgs,
      approval: { title: "Book it?" },
      run: () => {
        runs.push(1);
        return "ok";
      },
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("travel").sessions.create({ tools });
    const asked = nextEvent(session, "approval");
    const first = session.responses.create("book it");
    await asked;
    const second = session.responses.create("never mind");
    expect((await first).reason).toBe("interrupted");
    expect((await second).text).toBe("Okay, nothing booked.");
    expect(session.conversation.find((item) => item.type === "tool_call")).toMatchObject({
      status: "withdrawn",
    });
    expect(session.approvals).toEqual([]);
    expect(runs).toEqual([]);
  });
});

describe("timeouts and progress", () => {
  it("times a page tool out after the agent's page tool timeout and cancels it in the page", async () => {
    server = await startTestServer({
      agents: {
        slow: scriptedAgent(
          [
            {
              match: "go",
              toolCalls: [{ tool: "hang", arguments: {} }],
              reply: "ok",
              errorReply: "Failed: {result}",
            },
          ],
          { page_tool_timeout_ms: 150 },
        ),
      },
    });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("slow", {
      tools: [{ name: "hang", description: "Never answers", parameters: noArgs }],
    });
    const started = Date.now();
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: "go" });
    const call = await client.nextOf("tool.call");
    expect(call.timeoutMs).toBeLessThanOrEqual(150);
    const cancel = await client.nextOf("tool.cancel");
    expect(cancel).toMatchObject({ callId: call.call.id, reason: "timed_out" });
    const end = await client.turnEnd("c_1");
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(end.type === "response.completed" && end.text).toMatch(
      /^Failed: The call of "hang" timed out after 150 ms\./,
    );
    // A result after the timeout is dropped: the call stays timed out.
    client.send({
      type: "tool.result",
      sessionId,
      callId: call.call.id,
      attempt: 1,
      result: { outcome: "completed", content: { text: "late", images: [] } },
    });
    const res = await fetch(`${server.url}/v1/sessions/${sessionId}`, { headers: server.backendHeaders() });
    const body = (await res.json()) as { conversation: { type: string; status?: string }[] };
    expect(body.conversation.find((item) => item.type === "tool_call")?.status).toBe("timed_out");
    await client.close();
  });

  it("relays progress by the coalescing rule: first at once, newest of a burst, none after the result", async () => {
    server = await startTestServer({
      progressIntervalMs: 50,
      agents: {
        a: scriptedAgent([{ match: "go", toolCalls: [{ tool: "work", arguments: {} }], reply: "done" }]),
      },
    });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("a", {
      tools: [{ name: "work", description: "Works", parameters: noArgs }],
    });
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: "go" });
    const call = await client.nextOf("tool.call");
    const callId = call.call.id;
    for (const text of ["p1", "p2", "p3"]) client.send({ type: "tool.progress", sessionId, callId, text });
    await new Promise((resolve) => setTimeout(resolve, 150));
    for (const text of ["p4", "p5"]) client.send({ type: "tool.progress", sessionId, callId, text });
    client.send({
      type: "tool.result",
      sessionId,
      callId,
      attempt: 1,
      result: { outcome: "completed", content: { text: "ok", images: [] } },
    });
    await client.turnEnd("c_1");
    await new Promise((resolve) => setTimeout(resolve, 120));
    const progress = client.events(sessionId).filter((e) => e.type === "tool.progress");
    expect(progress.map((e) => e.type === "tool.progress" && e.text)).toEqual(["p1", "p3", "p4"]);
    const items = client
      .events(sessionId)
      .filter((e) => e.type === "conversation.updated" && e.item.type === "tool_call")
      .map((e) => (e.type === "conversation.updated" && e.item.type === "tool_call" ? e.item : undefined));
    // The item says each relayed line too, but for one its call's end replaced in the same
    // transaction (an item's later update takes its earlier one's place: sessions/change-queue.ts).
    const shown = items.map((item) => item?.progress).filter(Boolean);
    expect(shown.slice(0, 2)).toEqual(["p1", "p3"]);
    expect(shown.slice(2)).toEqual(shown.length > 2 ? ["p4"] : []);
    expect(items.at(-1)).toMatchObject({ status: "completed" });
    expect(items.at(-1)?.progress).toBeUndefined();
    await client.close();
  });

  it("shows a page tool's progress on its call through the real client", async () => {
    server = await startTestServer({
      agents: {
        a: scriptedAgent([{ match: "go", toolCalls: [{ tool: "work", arguments: {} }], reply: "done" }]),
      },
    });
    const tools = new Tools().register({
      name: "work",
      description: "Works",
      parameters: noArgs,
      run: async (_args, _signal, ctx) => {
        ctx.update("Checking seats on the flight");
        await new Promise((resolve) => setTimeout(resolve, 150));
        return "ok";
      },
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("a").sessions.create({ tools });
    const progressed = nextEvent(
      session,
      "toolCall",
      (item) => item.progress === "Checking seats on the flight",
    );
    const progress = nextEvent(session, "progress");
    expect((await session.responses.create("go")).text).toBe("done");
    await progressed;
    expect((await progress)[0].text).toBe("Checking seats on the flight");
  });
});
