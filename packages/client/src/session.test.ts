import type { ServerToClientFrame, SessionInfo } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { Client } from "./client-node";
import {
  DisconnectedError,
  NotFoundError,
  ProtocolViolationError,
  RateLimitedError,
  ResponseFailedError,
  ServerError,
} from "./errors";
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

function backendClient(): Client {
  const client = new Client({
    baseUrl: server.baseUrl,
    apiKey: "key_1",
    secret: "secret_1",
    reconnect: { initialDelayMs: 5, maxDelayMs: 20 },
  });
  clients.push(client);
  return client;
}

function info(id = "s_1", lastSeq = 0): SessionInfo {
  return { id, agent: "support", userId: "u_1", metadata: {}, createdAt: 1, lastSeq };
}

/** A session's event log as the scripted server keeps it, so a resume can be answered from it. */
class Log {
  readonly events: ServerToClientFrame[] = [];
  constructor(readonly sessionId = "s_1") {}
  add(event: Record<string, unknown>): ServerToClientFrame {
    const frame = { ...event, sessionId: this.sessionId, seq: this.events.length + 1 } as ServerToClientFrame;
    this.events.push(frame);
    return frame;
  }
  after(seq: number): ServerToClientFrame[] {
    return this.events.filter((e) => "seq" in e && e.seq > seq);
  }
  get lastSeq(): number {
    return this.events.length;
  }
}

const userMessage = (id: string, text: string) => ({
  type: "message",
  id,
  role: "user",
  text,
  status: "completed",
  createdAt: 1,
});

async function openSession(
  client: Client,
  options: { tools?: Tools } = {},
): Promise<{ session: Session; socket: ScriptedSocket }> {
  const creating = client.agent("support").sessions.create({ ...options, metadata: { page: "test" } });
  const socket = await server.accept();
  const create = await socket.next("session.create");
  socket.send({ type: "session.opened", requestId: create.requestId, session: info() });
  return { session: await creating, socket };
}

/** Everything a reply to one message sends, appended to the log and written to the socket. */
function reply(log: Log, socket: ScriptedSocket, commandId: string, text: string[], n: number): void {
  const frames = [
    log.add({ type: "message.created", commandId, item: userMessage(`m_u${n}`, "hi") }),
    log.add({ type: "response.started", responseId: `r_${n}`, commandId }),
    ...text.map((delta) => log.add({ type: "text.delta", responseId: `r_${n}`, itemId: `m_a${n}`, delta })),
    log.add({
      type: "message.completed",
      item: {
        type: "message",
        id: `m_a${n}`,
        role: "assistant",
        text: text.join(""),
        status: "completed",
        responseId: `r_${n}`,
        createdAt: 2,
      },
    }),
    log.add({
      type: "response.completed",
      responseId: `r_${n}`,
      commandId,
      reason: "stop",
      text: text.join(""),
    }),
  ];
  for (const frame of frames) socket.send(frame);
}

describe("Session over a scripted server", () => {
  it("creates a session with the page's tool specs and streams a reply", async () => {
    const client = backendClient();
    const tools = new Tools().register({
      name: "get_time",
      description: "The time",
      parameters: z.object({}),
      run: () => "noon",
    });
    const { session, socket } = await openSession(client, { tools });
    const create = socket.all("session.create")[0]!;
    expect(create).toMatchObject({ agent: "support", metadata: { page: "test" } });
    expect(create.tools.map((t) => t.name)).toEqual(["get_time"]);
    expect(socket.all("hello")[0]!.auth).toEqual({ kind: "api_key", apiKey: "key_1", secret: "secret_1" });

    const log = new Log();
    const response = session.responses.create("hi");
    const send = await socket.next("message.send");
    expect(send).toMatchObject({ sessionId: "s_1", text: "hi", commandId: response.commandId });
    reply(log, socket, send.commandId, ["Hel", "lo"], 1);
    const deltas: string[] = [];
    for await (const delta of response) deltas.push(delta);
    expect(deltas).toEqual(["Hel", "lo"]);
    await expect(response).resolves.toEqual({ id: "r_1", text: "Hello", reason: "stop" });
    expect(session.conversation.map((i) => i.id)).toEqual(["m_u1", "m_a1"]);
    expect(session.lastSeq).toBe(6);
  });

  it("resumes from the last seq after a drop and applies nothing twice", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const log = new Log();
    const seen: number[] = [];
    session.on("event", (event) => seen.push(event.seq));
    const first = session.responses.create("one");
    reply(log, socket, (await socket.next("message.send")).commandId, ["A", "B"], 1);
    await first;
    // Events the client never gets: they happen while it is away.
    const text: string[] = [];
    session.on("text", ({ delta }) => text.push(delta));
    socket.drop();
    log.add({ type: "message.created", item: userMessage("m_other", "from another tab") });
    log.add({ type: "response.started", responseId: "r_x" });
    log.add({ type: "text.delta", responseId: "r_x", itemId: "m_ax", delta: "while away" });

    const second = await server.accept();
    const resume = await second.next("session.resume");
    expect(resume).toMatchObject({ sessionId: "s_1", afterSeq: 6 });
    second.send({ type: "session.opened", requestId: resume.requestId, session: info("s_1", log.lastSeq) });
    // The server replays a little too much: the client must drop what it already applied.
    for (const event of log.after(4)) second.send(event);
    await vi.waitFor(() => expect(session.lastSeq).toBe(9));
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(text).toEqual(["while away"]);
    expect(session.conversation.map((i) => i.id)).toEqual(["m_u1", "m_a1", "m_other", "m_ax"]);
  });

  it("sends a message again after a reconnect with the same command id", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const response = session.responses.create("are you there?");
    const sent = await socket.next("message.send");
    socket.drop();
    const second = await server.accept();
    const resume = await second.next("session.resume");
    second.send({ type: "session.opened", requestId: resume.requestId, session: info() });
    const resent = await second.next("message.send");
    expect(resent.commandId).toBe(sent.commandId);
    expect(resent.text).toBe("are you there?");
    reply(new Log(), second, resent.commandId, ["yes"], 1);
    await expect(response).resolves.toMatchObject({ text: "yes" });
    // Acknowledged: a later reconnect does not send it a third time.
    second.drop();
    const third = await server.accept();
    const again = await third.next("session.resume");
    third.send({ type: "session.opened", requestId: again.requestId, session: info("s_1", 5) });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(third.all("message.send")).toHaveLength(0);
  });

  it("queues a create made before the socket is welcomed, across a drop before welcome", async () => {
    const client = backendClient();
    const states: string[] = [];
    client.on("state", (state) => states.push(state));
    const creating = client.agent("support").sessions.create();
    const first = await server.nextConnection();
    await first.next("hello");
    first.drop();
    const second = await server.accept();
    const create = await second.next("session.create");
    second.send({ type: "session.opened", requestId: create.requestId, session: info() });
    expect((await creating).id).toBe("s_1");
    expect(first.all("session.create")).toHaveLength(0);
    expect(states).toEqual(["connecting", "reconnecting", "open"]);
  });

  it("rejects a create cut off by a drop with a DisconnectedError", async () => {
    const client = backendClient();
    const creating = client.agent("support").sessions.create();
    const socket = await server.accept();
    await socket.next("session.create");
    socket.drop();
    await expect(creating).rejects.toBeInstanceOf(DisconnectedError);
  });

  it("gives typed errors to the caller whose request the server refused", async () => {
    const client = backendClient();
    const creating = client.agent("support").sessions.create();
    const socket = await server.accept();
    const create = await socket.next("session.create");
    socket.send({
      type: "error",
      code: "rate_limited",
      message: "slow down",
      requestId: create.requestId,
      retryAfterMs: 1500,
    });
    const error = await creating.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ code: "rate_limited", retryAfterMs: 1500 });

    const resuming = client.agent("support").sessions.resume("s_gone");
    const resume = await socket.next("session.resume");
    expect(resume.afterSeq).toBe(0);
    socket.send({
      type: "error",
      code: "not_found",
      message: "no such session",
      requestId: resume.requestId,
    });
    await expect(resuming).rejects.toBeInstanceOf(NotFoundError);

    const creating2 = client.agent("support").sessions.create();
    const create2 = await socket.next("session.create");
    socket.send({ type: "session.opened", requestId: create2.requestId, session: info() });
    const session = await creating2;
    const refused = session.responses.create("x".repeat(10));
    const sent = await socket.next("message.send");
    socket.send({
      type: "error",
      code: "invalid_frame",
      message: "text: too long",
      path: "text",
      sessionId: "s_1",
      commandId: sent.commandId,
    });
    const sendError = await refused.catch((e: unknown) => e);
    expect(sendError).toBeInstanceOf(ProtocolViolationError);
    expect(sendError).toMatchObject({ code: "protocol", wireCode: "invalid_frame", path: "text" });

    const failing = session.responses.create("hello");
    const sent2 = await socket.next("message.send");
    const log = new Log();
    log.events.length = 0;
    socket.send({
      type: "response.started",
      sessionId: "s_1",
      seq: 1,
      responseId: "r_9",
      commandId: sent2.commandId,
    });
    socket.send({
      type: "response.failed",
      sessionId: "s_1",
      seq: 2,
      responseId: "r_9",
      error: { code: "model_error", message: "the model is down" },
    });
    const failed = await failing.catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ResponseFailedError);
    expect(failed).toMatchObject({ code: "response_failed", wireCode: "model_error", responseId: "r_9" });
  });

  it("keeps approvals current and resolves decide with the outcome", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const log = new Log();
    const approval = {
      id: "ap_1",
      callId: "call_1",
      tool: "get_location",
      title: "Share your location for weather?",
      reason: "weather",
      allowTitle: "Share",
      declineTitle: "Not now",
      argumentsHash: "h",
      expiresAt: Date.now() + 60_000,
    };
    const asked = new Promise((resolve) => session.once("approval", resolve));
    socket.send(log.add({ type: "approval.requested", approval }));
    expect(await asked).toEqual(approval);
    expect(session.approvals).toEqual([approval]);
    await expect(session.decide("ap_nope", { allowed: true })).rejects.toBeInstanceOf(NotFoundError);
    const deciding = session.decide("ap_1", { allowed: true });
    expect(await socket.next("approval.decide")).toEqual({
      type: "approval.decide",
      sessionId: "s_1",
      approvalId: "ap_1",
      allowed: true,
    });
    socket.send(
      log.add({ type: "approval.resolved", approvalId: "ap_1", callId: "call_1", outcome: "allowed" }),
    );
    await expect(deciding).resolves.toBe("allowed");
    expect(session.approvals).toEqual([]);
  });

  it("fetches a gap in the sequence from the event log over HTTP", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const log = new Log();
    log.add({ type: "message.created", item: userMessage("m_1", "a") });
    log.add({ type: "message.created", item: userMessage("m_2", "b") });
    log.add({ type: "message.created", item: userMessage("m_3", "c") });
    const requests: string[] = [];
    server.onHttp = (req, res) => {
      requests.push(`${req.method} ${req.url} ${req.headers["x-api-key"]} ${req.headers.authorization}`);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ events: log.after(1), lastSeq: log.lastSeq }));
    };
    socket.send(log.events[0]!);
    socket.send(log.events[2]!);
    await vi.waitFor(() => expect(session.lastSeq).toBe(3));
    expect(session.conversation.map((i) => i.id)).toEqual(["m_1", "m_2", "m_3"]);
    expect(requests).toEqual(["GET /v1/sessions/s_1/events?after=1 key_1 Bearer secret_1"]);
  });

  it("closes the session for this client and rejects what waited", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const pending = session.responses.create("hi");
    await socket.next("message.send");
    session.close();
    expect(await socket.next("session.close")).toEqual({ type: "session.close", sessionId: "s_1" });
    await expect(pending).rejects.toBeInstanceOf(DisconnectedError);
    expect(session.closed).toBe(true);
    expect(client.sessions).toEqual([]);
    await expect(session.responses.create("again")).rejects.toBeInstanceOf(DisconnectedError);
  });

  it("attaches a session again when the server says it moved (unavailable), and the waiting reply completes from the replay", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const errors: unknown[] = [];
    session.on("error", (e) => errors.push(e));
    const log = new Log();
    const response = session.responses.create("where is order 19");
    const sent = await socket.next("message.send");
    socket.send(
      log.add({ type: "message.created", commandId: sent.commandId, item: userMessage("m_u1", "hi") }),
    );
    socket.send(log.add({ type: "response.started", responseId: "r_1", commandId: sent.commandId }));
    await vi.waitFor(() => expect(session.lastSeq).toBe(2));
    // The cluster's words (sockets/client-relay.ts): its owner died, the edge serves it no more.
    const moved = { type: "error", code: "unavailable", sessionId: "s_1", path: "sessionId" };
    socket.send({ ...moved, message: "session s_1 moved to another node: attach again" });
    // A later frame the edge refused the same way asks for no second attach.
    const later = session.responses.create("and order 20");
    const refused = await socket.next("message.send");
    socket.send({
      ...moved,
      commandId: refused.commandId,
      message: "the node serving this session is not answering",
    });
    const resume = await socket.next("session.resume");
    expect(resume).toMatchObject({ sessionId: "s_1", afterSeq: 2 });
    // The dead owner's lease has not expired yet: refused, and asked again a second later.
    socket.send({ ...moved, requestId: resume.requestId, message: "did not answer; retry shortly" });
    const again = await socket.next("session.resume");
    expect(again.requestId).not.toBe(resume.requestId);
    expect(again.afterSeq).toBe(2);
    expect(socket.all("session.resume")).toHaveLength(2);
    // The node that took the session over finished the turn meanwhile.
    log.add({ type: "text.delta", responseId: "r_1", itemId: "m_a1", delta: "Shipped." });
    log.add({
      type: "response.completed",
      responseId: "r_1",
      commandId: sent.commandId,
      reason: "stop",
      text: "Shipped.",
    });
    socket.send({ type: "session.opened", requestId: again.requestId, session: info("s_1", log.lastSeq) });
    for (const event of log.after(2)) socket.send(event);
    await expect(response).resolves.toEqual({ id: "r_1", text: "Shipped.", reason: "stop" });
    // What the edge refused is sent again once attached, with its command id.
    const resent = await socket.next("message.send");
    expect(resent).toMatchObject({ commandId: refused.commandId, text: "and order 20" });
    expect(later.done).toBe(false);
    expect(errors).toEqual([]);
    expect(session.closed).toBe(false);
  });

  it("rejects what waits in a moved session with a typed error when attaching it again is refused", async () => {
    const client = backendClient();
    const { session, socket } = await openSession(client);
    const response = session.responses.create("hi");
    await socket.next("message.send");
    socket.send({
      type: "error",
      code: "unavailable",
      message: "moved",
      sessionId: "s_1",
      path: "sessionId",
    });
    const resume = await socket.next("session.resume");
    socket.send({
      type: "error",
      code: "forbidden",
      message: "not yours",
      requestId: resume.requestId,
      sessionId: "s_1",
    });
    const error = await response.catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "auth", wireCode: "forbidden" });
    expect(session.closed).toBe(true);
    expect(client.sessions).toEqual([]);
  });

  it("gives up attaching a moved session after 30 refusals as unavailable, rejecting what waits", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const client = backendClient();
      const { session, socket } = await openSession(client);
      const response = session.responses.create("hi");
      await socket.next("message.send");
      const moved = {
        type: "error",
        code: "unavailable",
        message: "moved",
        sessionId: "s_1",
        path: "sessionId",
      };
      socket.send(moved);
      for (let i = 0; i <= 30; i++) {
        const resume = await socket.next("session.resume");
        socket.send({ ...moved, requestId: resume.requestId });
        // The refusal reaches the client over a real socket: advance its retry's second once it did.
        if (i < 30)
          await vi.waitFor(() => {
            vi.advanceTimersByTime(1_000);
            expect(socket.all("session.resume")).toHaveLength(i + 2);
          });
      }
      const error = await response.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ServerError);
      expect(error).toMatchObject({ wireCode: "unavailable" });
      expect(session.closed).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
