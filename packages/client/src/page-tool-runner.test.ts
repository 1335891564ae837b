import type { SessionInfo, ToolCallItem } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { Client } from "./client-node";
import type { Session } from "./session";
import { ScriptedServer, type ScriptedSocket } from "./testing/scripted-server";

let server: ScriptedServer;
const clients: Client[] = [];

beforeEach(async () => {
  server = await ScriptedServer.start();
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server.close();
});

function info(lastSeq = 0): SessionInfo {
  return { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 1, lastSeq };
}

function newClient(): Client {
  const client = new Client({
    baseUrl: server.baseUrl,
    apiKey: "key_1",
    secret: "secret_1",
    reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
  });
  clients.push(client);
  return client;
}

/** A tool whose runs the test releases by hand, counting how often it really ran. */
function gatedTool() {
  const runs: Array<{
    args: unknown;
    release: (value: string) => void;
    signal: AbortSignal;
    attempt: number;
  }> = [];
  const tools = new Tools().register({
    name: "get_location",
    description: "Where the person is",
    parameters: z.object({ reason: z.string() }),
    interruptible: true,
    run: (args, signal, ctx) =>
      new Promise<string>((resolve) => {
        ctx.update("Looking");
        runs.push({ args, release: resolve, signal, attempt: ctx.attempt });
      }),
  });
  return { tools, runs };
}

function toolCall(
  seq: number,
  attempt: number,
  id = "call_1",
  args: Record<string, unknown> = { reason: "weather" },
) {
  return {
    type: "tool.call",
    sessionId: "s_1",
    seq,
    call: { id, name: "get_location", arguments: args },
    attempt,
    timeoutMs: 30_000,
    user: { id: "u_1" },
  };
}

async function open(client: Client, tools: Tools): Promise<{ session: Session; socket: ScriptedSocket }> {
  const creating = client.agent("support").sessions.create({ tools });
  const socket = await server.accept();
  const create = await socket.next("session.create");
  socket.send({ type: "session.opened", requestId: create.requestId, session: info() });
  return { session: await creating, socket };
}

async function reattach(seq: number, resend: boolean, tools: string[]): Promise<ScriptedSocket> {
  const socket = await server.accept();
  const resume = await socket.next("session.resume");
  expect(resume.afterSeq).toBe(seq);
  expect(resume.tools.map((t) => t.name)).toEqual(tools);
  socket.send({ type: "session.opened", requestId: resume.requestId, session: info(resend ? seq + 1 : seq) });
  return socket;
}

describe("page tools", () => {
  it("runs a call, forwards progress and answers with the delivery's attempt", async () => {
    const { tools, runs } = gatedTool();
    const { socket } = await open(newClient(), tools);
    socket.send(toolCall(1, 1));
    expect(await socket.next("tool.progress")).toEqual({
      type: "tool.progress",
      sessionId: "s_1",
      callId: "call_1",
      text: "Looking",
    });
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    expect(runs[0]!.args).toEqual({ reason: "weather" });
    runs[0]!.release("Berlin");
    const result = await socket.next("tool.result");
    expect(result).toMatchObject({ callId: "call_1", attempt: 1, result: { outcome: "completed" } });
    expect(result.result.content.text).toBe("Berlin");
  });

  it("answers a call that outlived 300 later ones (past the attempts it keeps) with its attempt", async () => {
    const { tools, runs } = gatedTool();
    const { socket } = await open(newClient(), tools);
    socket.send(toolCall(1, 1, "call_long"));
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    // More calls than the page keeps attempts of (256): the long call's entry is pushed out.
    for (let i = 0; i < 300; i++) socket.send(toolCall(2 + i, 1, `call_${i}`));
    let released = 1;
    await vi.waitFor(
      () => {
        for (; released < runs.length; released++) runs[released]!.release(`done ${released}`);
        expect(socket.all("tool.result")).toHaveLength(300);
      },
      { timeout: 10_000, interval: 5 },
    );
    runs[0]!.release("Lisbon");
    await vi.waitFor(() => expect(socket.all("tool.result")).toHaveLength(301));
    expect(socket.all("tool.result").at(-1)).toMatchObject({
      callId: "call_long",
      attempt: 1,
      result: { content: { text: "Lisbon" } },
    });
  });

  it("answers invalid arguments without running the tool", async () => {
    const { tools, runs } = gatedTool();
    const { socket } = await open(newClient(), tools);
    socket.send(toolCall(1, 1, "call_bad", { reason: 42 }));
    const result = await socket.next("tool.result");
    expect(result.result.outcome).toBe("invalid_arguments");
    expect(runs).toHaveLength(0);
  });

  it("joins a call delivered again after a drop during the call: one run, answered once with the new attempt", async () => {
    const { tools, runs } = gatedTool();
    const { socket } = await open(newClient(), tools);
    socket.send(toolCall(1, 1));
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    socket.drop();
    const second = await reattach(1, false, ["get_location"]);
    second.send(toolCall(2, 2));
    await new Promise((resolve) => setTimeout(resolve, 20));
    runs[0]!.release("Paris");
    const result = await second.next("tool.result");
    expect(result).toMatchObject({ callId: "call_1", attempt: 2 });
    expect(result.result.content.text).toBe("Paris");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(second.all("tool.result")).toHaveLength(1);
    expect(runs).toHaveLength(1);
  });

  it("answers a redelivery of a call that finished while the socket was down from the stored result", async () => {
    const { tools, runs } = gatedTool();
    const { socket } = await open(newClient(), tools);
    socket.send(toolCall(1, 1));
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    socket.drop();
    runs[0]!.release("Rome");
    const second = await reattach(1, false, ["get_location"]);
    second.send(toolCall(2, 2));
    const result = await second.next("tool.result");
    expect(result).toMatchObject({ attempt: 2, result: { outcome: "completed", content: { text: "Rome" } } });
    expect(runs).toHaveLength(1);
  });

  it("cancels a call on tool.cancel", async () => {
    const { tools, runs } = gatedTool();
    const { socket } = await open(newClient(), tools);
    socket.send(toolCall(1, 1));
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    socket.send({ type: "tool.cancel", sessionId: "s_1", seq: 2, callId: "call_1", reason: "interrupted" });
    const result = await socket.next("tool.result");
    expect(result.result.outcome).toBe("cancelled");
    expect(runs[0]!.signal.aborted).toBe(true);
  });

  it("tells the server again after a reconnect that a running call is held", async () => {
    let release!: () => void;
    const tools = new Tools().register({
      name: "book",
      description: "Books",
      interruptible: true,
      run: async (_args, _signal, ctx) => {
        await ctx.disallowInterruptions();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return "booked";
      },
    });
    const { socket } = await open(newClient(), tools);
    socket.send({ ...toolCall(1, 1), call: { id: "call_b", name: "book", arguments: {} } });
    expect(await socket.next("tool.hold")).toMatchObject({ callId: "call_b", attempt: 1 });
    const ack = { type: "tool.hold.ack", sessionId: "s_1", callId: "call_b", accepted: true };
    socket.send({ ...ack, attempt: 1 });
    socket.drop();
    const second = await reattach(1, false, ["book"]);
    expect(await second.next("tool.hold")).toMatchObject({ callId: "call_b", attempt: 1 });
    second.send({ ...toolCall(2, 2), call: { id: "call_b", name: "book", arguments: {} } });
    expect(await second.next("tool.hold")).toMatchObject({ callId: "call_b", attempt: 2 });
    second.send({ ...ack, attempt: 2 });
    await vi.waitFor(() => expect(release).toBeTypeOf("function"));
    release();
    expect(await second.next("tool.result")).toMatchObject({
      attempt: 2,
      result: { outcome: "completed", held: true },
    });
  });

  it("after a reload, runs no replayed call, only the server's new delivery, as that attempt", async () => {
    const { tools, runs } = gatedTool();
    const client = newClient();
    const resuming = client.agent("support").sessions.resume("s_1", { tools });
    const socket = await server.accept();
    const resume = await socket.next("session.resume");
    expect(resume).toMatchObject({ sessionId: "s_1", afterSeq: 0 });
    socket.send({ type: "session.opened", requestId: resume.requestId, session: info(4) });
    const done: ToolCallItem = {
      type: "tool_call",
      id: "call_old",
      name: "get_location",
      arguments: { reason: "old" },
      status: "completed",
      held: false,
      attempt: 1,
      createdAt: 1,
    };
    socket.send(toolCall(1, 1, "call_old", { reason: "old" }));
    socket.send({ type: "conversation.updated", sessionId: "s_1", seq: 2, item: done });
    socket.send(toolCall(3, 1, "call_new", { reason: "new" }));
    expect(runs).toHaveLength(0);
    socket.send({
      type: "conversation.updated",
      sessionId: "s_1",
      seq: 4,
      item: { ...done, id: "call_new", arguments: { reason: "new" }, status: "running" },
    });
    // `resume` resolves once the replay up to the opened seq (4) is applied.
    const session = await resuming;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs).toHaveLength(0);
    // The server delivers the call still waiting again, right after the replay (finding 5).
    socket.send(toolCall(5, 2, "call_new", { reason: "new" }));
    await vi.waitFor(() => expect(runs).toHaveLength(1));
    expect(runs[0]).toMatchObject({ args: { reason: "new" }, attempt: 2 });
    expect(session.conversation.map((i) => i.id)).toEqual(["call_old", "call_new"]);
  });
});
