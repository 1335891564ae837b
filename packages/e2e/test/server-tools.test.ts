import { ToolOutput, Tools } from "@patchbay/client";
import { type LanguageModel, ModelError, type ModelStreamEvent, scripted } from "@patchbay/models";
import { createLogger } from "@patchbay/server";
import { Tools as ServerTools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { closeAllClients, userClient } from "./helpers/clients";
import { RawClient } from "./helpers/raw-client";
import { recording } from "./helpers/recording-model";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

const noArgs = { type: "object", properties: {} } as const;
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

function seatMapTools(): Tools {
  return new Tools().register({
    name: "seat_map",
    description: "Show the seat map",
    parameters: noArgs,
    run: () =>
      new ToolOutput({ text: "Seat map for LH400", images: [{ data: `data:image/png;base64,${PNG}` }] }),
  });
}

describe("tool results and the model", () => {
  it("hands an image result to a model that reads images", async () => {
    const model = recording(
      scripted({ rules: [{ match: "seats", toolCalls: [{ tool: "seat_map" }], reply: "Here: {result}" }] }),
    );
    server = await startTestServer({
      agents: { air: scriptedAgent([]) },
      createModel: () => model,
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("air").sessions.create({ tools: seatMapTools() });
    expect((await session.responses.create("show seats")).text).toBe("Here: Seat map for LH400");
    const toolMessage = model.requests.at(-1)!.messages.find((m) => m.role === "tool");
    expect(toolMessage).toMatchObject({
      role: "tool",
      isError: false,
      content: { text: "Seat map for LH400", images: [{ type: "image", mimeType: "image/png", data: PNG }] },
    });
    const call = session.conversation.find((item) => item.type === "tool_call");
    expect(call?.type === "tool_call" && call.result?.content.images.length).toBe(1);
  });

  it("tells a text-only model that an image result failed", async () => {
    const model = recording(
      scripted({
        capabilities: { images: false },
        rules: [
          {
            match: "seats",
            toolCalls: [{ tool: "seat_map" }],
            reply: "Here: {result}",
            errorReply: "Sorry: {result}",
          },
        ],
      }),
    );
    server = await startTestServer({ agents: { air: scriptedAgent([]) }, createModel: () => model });
    const client = await userClient(server, "u_1");
    const session = await client.agent("air").sessions.create({ tools: seatMapTools() });
    const reply = await session.responses.create("show seats");
    expect(reply.text).toMatch(/^Sorry: The tool "seat_map" failed: its result contains 1 image/);
    const toolMessage = model.requests.at(-1)!.messages.find((m) => m.role === "tool");
    expect(toolMessage).toMatchObject({ isError: true, content: { images: [] } });
  });

  it("lets the model see an unknown tool or arguments that do not fit, so it can try again", async () => {
    server = await startTestServer({
      agents: {
        air: scriptedAgent([
          { match: "ghost", toolCalls: [{ tool: "no_such_tool" }], reply: "?", errorReply: "E: {result}" },
          {
            match: "book (?<seats>\\d+)",
            toolCalls: [{ tool: "book", arguments: { seats: "{seats:integer}" } }],
            reply: "Booked {result}",
            errorReply: "E: {result}",
          },
        ]),
      },
    });
    const runs: number[] = [];
    const tools = new Tools().register({
      name: "book",
      description: "Book seats",
      parameters: {
        type: "object",
        properties: { seats: { type: "integer", minimum: 1, maximum: 9 } },
        required: ["seats"],
      },
      run: ({ seats }: { seats: number }) => {
        runs.push(seats);
        return String(seats);
      },
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("air").sessions.create({ tools });
    expect((await session.responses.create("call the ghost")).text).toBe(
      'E: There is no tool named "no_such_tool". Available tools: book.',
    );
    const invalid = await session.responses.create("book 12");
    expect(invalid.text).toMatch(/^E: The arguments for "book" do not fit its schema:\nseats: /);
    expect(invalid.text).toMatch(/9/);
    expect((await session.responses.create("book 2")).text).toBe("Booked 2");
    expect(runs).toEqual([2]);
  });

  it("runs in-process tools from createServer through the executor", async () => {
    const tools = new ServerTools().register({
      name: "lookup_order",
      description: "Look up an order",
      parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
      run: async ({ order_id }: { order_id: string }, _signal, ctx) => {
        ctx.update(`Looking up ${order_id}`);
        await new Promise((resolve) => setTimeout(resolve, 60));
        return { status: "shipped", id: order_id, user: ctx.user.id, session: ctx.sessionId };
      },
    });
    server = await startTestServer({
      tools,
      agents: {
        support: scriptedAgent([
          {
            match: "order (?<id>[A-Z0-9]+)",
            toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{id}" } }],
            reply:
              "Order {results.lookup_order.id} is {results.lookup_order.status} for {results.lookup_order.user}.",
          },
        ]),
      },
    });
    const client = await userClient(server, "u_7");
    const session = await client.agent("support").sessions.create();
    const progress: string[] = [];
    session.on("progress", ({ text }) => progress.push(text));
    expect((await session.responses.create("where is order A1?")).text).toBe("Order A1 is shipped for u_7.");
    expect(progress).toEqual(["Looking up A1"]);
    expect(session.conversation.find((item) => item.type === "tool_call")).toMatchObject({
      location: "server",
      status: "completed",
    });
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain(
      'patchbay_tool_calls_total{tool="lookup_order",location="server",outcome="completed"} 1',
    );
  });

  it("fails a page tool at once when no page holding it is connected", async () => {
    server = await startTestServer({
      agents: {
        support: scriptedAgent([
          { match: "where", toolCalls: [{ tool: "locate" }], reply: "ok", errorReply: "E: {result}" },
        ]),
      },
    });
    const page = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await page.create("support", {
      tools: [{ name: "locate", description: "Where", parameters: noArgs }],
    });
    await page.close();
    const started = Date.now();
    const res = await fetch(`${server.url}/v1/sessions/${sessionId}/messages`, {
      method: "POST",
      headers: server.backendHeaders(),
      body: JSON.stringify({ commandId: "c_1", text: "where am I" }),
    });
    expect(res.status).toBe(202);
    let text = "";
    for (let i = 0; i < 100 && !text; i++) {
      const log = (await (
        await fetch(`${server.url}/v1/sessions/${sessionId}/events?after=0`, {
          headers: server.backendHeaders(),
        })
      ).json()) as { events: { type: string; text?: string }[] };
      text = log.events.find((e) => e.type === "response.completed")?.text ?? "";
      if (!text) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(text).toMatch(/^E: The tool "locate" runs in the user's page, and no page is connected/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

function scriptedStream(events: ModelStreamEvent[]): AsyncIterable<ModelStreamEvent> {
  return (async function* () {
    for (const event of events) yield event;
  })();
}

describe("the model's own failures and limits", () => {
  it("ends a turn on a model error with response.failed, keeps the conversation whole, and the next message works", async () => {
    const fallback = scripted({ rules: [{ match: "hello", reply: "Hi again." }] });
    const model: LanguageModel = {
      provider: "test",
      modelId: "flaky",
      capabilities: { images: true, parallelToolCalls: true },
      stream(request) {
        const last = request.messages.at(-1);
        if (last?.role === "user" && last.content === "break") {
          return (async function* () {
            yield { type: "text-delta", delta: "Let me " } as const;
            throw new ModelError("rate_limited", "provider said slow down", { status: 429 });
          })();
        }
        return fallback.stream(request);
      },
    };
    const log: string[] = [];
    const logger = createLogger({ level: "warn", write: (line) => log.push(line) });
    server = await startTestServer({ agents: { a: scriptedAgent([]) }, createModel: () => model, logger });
    const client = await userClient(server, "u_1");
    const session = await client.agent("a").sessions.create();
    // The end user gets a neutral sentence and a reference, never the provider's text...
    const failed = await session.responses.create("break").then(
      () => undefined,
      (error: unknown) => error as Error & { wireCode?: string },
    );
    expect(failed).toMatchObject({ code: "response_failed", wireCode: "rate_limited" });
    const ref =
      /^The assistant is busy right now\. Please try again in a moment\. \(reference (err_[0-9a-f]{10})\)$/.exec(
        failed!.message,
      )?.[1];
    expect(ref, failed!.message).toBeDefined();
    // ...and the developer finds the whole error under that reference, at warn, with the ids.
    const line = log.find((text) => text.includes(ref!))!;
    const entry = JSON.parse(line);
    expect(entry).toMatchObject({
      level: "warn",
      msg: "model call failed",
      sessionId: session.id,
      code: "rate_limited",
    });
    // Each id once in the line (the turn's logger carries them; the fields used to repeat them).
    expect(line.split('"sessionId"')).toHaveLength(2);
    expect(line.split('"responseId"')).toHaveLength(2);
    expect(entry.error.message).toBe("provider said slow down");
    expect(entry.error.stack).toContain("ModelError");
    expect((await session.responses.create("hello")).text).toBe("Hi again.");
    expect(
      session.conversation.map((item) =>
        item.type === "message" ? `${item.role}:${item.text}:${item.status}` : item.type,
      ),
    ).toEqual([
      "user:break:completed",
      "assistant:Let me :failed",
      "user:hello:completed",
      "assistant:Hi again.:completed",
    ]);
  });

  it("stops at the agent's round limit and withdraws the calls of the last reply", async () => {
    let n = 0;
    const model: LanguageModel = {
      provider: "test",
      modelId: "loop",
      capabilities: { images: true, parallelToolCalls: true },
      stream: () => {
        n += 1;
        return scriptedStream([
          { type: "text-delta", delta: `round ${n}` },
          {
            type: "tool-call",
            call: { id: `call_${n}`, index: 0, name: "tick", arguments: {}, rawArguments: "{}" },
          },
          { type: "finish", reason: "tool_calls", usage: { inputTokens: 1, outputTokens: 1 } },
        ]);
      },
    };
    server = await startTestServer({
      agents: { a: scriptedAgent([], { max_tool_rounds: 2 }) },
      createModel: () => model,
      tools: new ServerTools().register({ name: "tick", description: "Tick", run: () => "tock" }),
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("a").sessions.create();
    const result = await session.responses.create("go");
    expect(result.reason).toBe("max_rounds");
    expect(result.text).toBe("round 3");
    expect(n).toBe(3);
    const calls = session.conversation.filter((item) => item.type === "tool_call");
    expect(calls.map((c) => (c.type === "tool_call" ? c.status : ""))).toEqual([
      "completed",
      "completed",
      "withdrawn",
    ]);
    // The model hears why: the round limit, not a user who interrupted.
    const last = calls.at(-1);
    expect(last?.type === "tool_call" && last.result?.content?.text).toMatch(/limit of 2 tool rounds/);
  });

  it("drops a message of a dispatch: text agent with no_worker when no dispatch module routes it", async () => {
    server = await startTestServer({
      dispatch: false,
      agents: { desk: scriptedAgent([{ match: "hello", reply: "Hi." }], { dispatch: { text: "enabled" } }) },
    });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("desk");
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    const thinking = await client.nextOf("response.thinking");
    expect(thinking.reason).toBe("dispatch");
    expect(await client.turnEnd("c_1")).toMatchObject({
      type: "response.failed",
      error: { code: "no_worker" },
    });
    expect(client.events(sessionId).some((e) => e.type === "text.delta")).toBe(false);
    await client.close();
  });

  it("runs a message once however often its command id is sent", async () => {
    server = await startTestServer({ agents: { a: scriptedAgent([{ match: "hello", reply: "Hi." }]) } });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("a");
    for (let i = 0; i < 3; i++)
      client.send({ type: "message.send", sessionId, commandId: "same", text: "hello" });
    await client.turnEnd("same");
    const post = await fetch(`${server.url}/v1/sessions/${sessionId}/messages`, {
      method: "POST",
      headers: server.backendHeaders(),
      body: JSON.stringify({ commandId: "same", text: "hello" }),
    });
    expect(await post.json()).toEqual({ commandId: "same", duplicate: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(client.events(sessionId).filter((e) => e.type === "message.created").length).toBe(1);
    expect(client.events(sessionId).filter((e) => e.type === "response.completed").length).toBe(1);
    await client.close();
  });
});
