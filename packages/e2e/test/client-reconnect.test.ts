import { Client, type SessionEvents, Tools } from "@patchbay/client";
import type { SessionEvent } from "@patchbay/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

// The real server and the real client over 127.0.0.1; the test cuts the client's socket (as a
// dead network would) at chosen points and checks that nothing is lost, doubled, or run twice.

let server: TestServer | undefined;
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

/** A page client whose sockets the test can cut. */
async function droppableClient(test: TestServer, userId = "u_1") {
  const sockets: WebSocket[] = [];
  const client = new Client({
    baseUrl: test.url,
    requestTimeoutMs: 5_000,
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    createSocket: (url) => {
      const socket = new WebSocket(url);
      sockets.push(socket);
      return socket as never;
    },
  });
  client.setUser({ id: userId }, await test.token(userId));
  clients.push(client);
  const drop = async () => {
    const reopened = new Promise<void>((resolve) => {
      const onState = (state: string) => {
        if (state !== "open") return;
        client.off("state", onState);
        resolve();
      };
      client.on("state", onState);
    });
    sockets.at(-1)!.terminate();
    return reopened;
  };
  return { client, drop, sockets };
}

function gatedTool() {
  const runs: Array<{ attempt: number; release: (text: string) => void }> = [];
  const tools = new Tools().register({
    name: "get_location",
    description: "Where the person is",
    parameters: { type: "object", properties: { reason: { type: "string" } }, required: ["reason"] },
    run: (_args, _signal, ctx) =>
      new Promise<string>((resolve) => {
        runs.push({ attempt: ctx.attempt, release: resolve });
      }),
  });
  return { tools, runs };
}

async function start(): Promise<TestServer> {
  return startTestServer({
    agents: {
      support: scriptedAgent([
        {
          match: "where am i",
          toolCalls: [{ tool: "get_location", arguments: { reason: "you asked" } }],
          reply: "You are in {result}.",
        },
        { match: "^echo (?<word>\\w+)", reply: "echo: {word} {word} {word}" },
      ]),
    },
  });
}

/** Every event the session applied, to compare with the server's log. */
function record(session: { on: (name: "event", fn: (...a: SessionEvents["event"]) => void) => void }) {
  const events: SessionEvent[] = [];
  session.on("event", (event) => events.push(event));
  return events;
}

async function serverLog(test: TestServer, sessionId: string): Promise<SessionEvent[]> {
  const response = await fetch(`${test.url}/v1/sessions/${sessionId}/events?after=0&limit=1000`, {
    headers: test.backendHeaders(),
  });
  return ((await response.json()) as { events: SessionEvent[] }).events;
}

describe("the client against the real server, with the socket cut", () => {
  it("resumes after a drop between replies with every event applied exactly once", async () => {
    server = await start();
    const { client, drop } = await droppableClient(server);
    const session = await client.agent("support").sessions.create();
    const events = record(session);
    expect((await session.responses.create("echo one")).text).toBe("echo: one one one");
    await drop();
    expect((await session.responses.create("echo two")).text).toBe("echo: two two two");
    await drop();
    await drop();
    expect((await session.responses.create("echo three")).text).toBe("echo: three three three");
    const log = await serverLog(server, session.id);
    expect(events.map((e) => e.seq)).toEqual(log.map((e) => e.seq));
    expect(events).toEqual(log);
    const snapshot = await client.agent("support").sessions.get(session.id);
    expect(session.conversation).toEqual(snapshot.conversation);
  });

  it("finishes a reply whose socket was cut while it streamed, without doubling text", async () => {
    server = await start();
    const { client, drop } = await droppableClient(server);
    const session = await client.agent("support").sessions.create();
    const text: string[] = [];
    session.on("text", ({ delta }) => text.push(delta));
    const reply = session.responses.create("echo streamed");
    const firstDelta = new Promise((resolve) => session.once("text", resolve));
    await firstDelta;
    await drop();
    const result = await reply;
    expect(result.text).toBe("echo: streamed streamed streamed");
    expect(text.join("")).toBe(result.text);
    const assistant = session.conversation.filter((i) => i.type === "message" && i.role === "assistant");
    expect(assistant).toHaveLength(1);
    expect(assistant[0]).toMatchObject({ text: result.text, status: "completed" });
  });

  it("sends a message cut off by a drop again with its command id, and the server runs it once", async () => {
    server = await start();
    const { client, drop, sockets } = await droppableClient(server);
    const session = await client.agent("support").sessions.create();
    // Cut the socket right after the frame is written: the server may or may not have it.
    const reply = session.responses.create("echo once");
    sockets.at(-1)!.terminate();
    const result = await reply;
    expect(result.text).toBe("echo: once once once");
    await drop();
    const users = session.conversation.filter((i) => i.type === "message" && i.role === "user");
    expect(users.map((i) => (i.type === "message" ? i.text : ""))).toEqual(["echo once"]);
    const log = await serverLog(server, session.id);
    expect(log.filter((e) => e.type === "message.created")).toHaveLength(1);
    expect(log.filter((e) => e.type === "response.completed")).toHaveLength(1);
  });

  it("runs a page tool once when the socket is cut during the call, answering the redelivery", async () => {
    server = await start();
    const { client, drop } = await droppableClient(server);
    const { tools, runs } = gatedTool();
    const session = await client.agent("support").sessions.create({ tools });
    const reply = session.responses.create("where am I?");
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    await drop();
    // The server delivers the pending call again (attempt 2) once the page's tools are back.
    await vi.waitFor(() =>
      expect(session.conversation.find((i) => i.type === "tool_call")).toMatchObject({ attempt: 2 }),
    );
    runs[0]!.release("Lisbon");
    expect((await reply).text).toBe("You are in Lisbon.");
    expect(runs).toHaveLength(1);
    expect(session.conversation.find((i) => i.type === "tool_call")).toMatchObject({
      status: "completed",
      location: "page",
      result: { outcome: "completed", content: { text: "Lisbon" } },
    });
  });

  it("picks a session up after a reload with resume, runs the call still pending, and replays the rest", async () => {
    server = await start();
    const first = await droppableClient(server);
    const gate = gatedTool();
    const session = await first.client.agent("support").sessions.create({ tools: gate.tools });
    expect((await session.responses.create("echo before")).text).toBe("echo: before before before");
    const reply = session.responses.create("where am I?");
    void reply.catch(() => {});
    await vi.waitFor(() => expect(gate.runs).toHaveLength(1));
    // The page reloads: its client goes away, a new one resumes the session by id.
    first.client.close();
    const second = await droppableClient(server);
    const again = gatedTool();
    const resumed = await second.client.agent("support").sessions.resume(session.id, { tools: again.tools });
    const completed = new Promise<SessionEvents["responseCompleted"][0]>((resolve) =>
      resumed.on("responseCompleted", (event) => {
        if (event.text.startsWith("You are")) resolve(event);
      }),
    );
    await vi.waitFor(() => expect(again.runs).toHaveLength(1));
    // The replay shows the call still pending and the server delivers it again: one run answers both.
    await vi.waitFor(() =>
      expect(resumed.conversation.find((i) => i.type === "tool_call")).toMatchObject({ attempt: 2 }),
    );
    again.runs[0]!.release("Porto");
    expect((await completed).text).toBe("You are in Porto.");
    const texts = resumed.conversation.flatMap((i) => (i.type === "message" ? [i.text] : []));
    expect(texts).toEqual(["echo before", "echo: before before before", "where am I?", "You are in Porto."]);
    expect(gate.runs).toHaveLength(1);
    expect(again.runs).toHaveLength(1);
  });
});
