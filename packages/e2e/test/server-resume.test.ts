import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Tools } from "@patchbay/client";
import type { SessionEvent } from "@patchbay/protocol";
import { SqliteStore, type Store } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { closeAllClients, userClient } from "./helpers/clients";
import { RawClient } from "./helpers/raw-client";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

const noArgs = { type: "object", properties: {} } as const;
const locate = { name: "locate", description: "Where the user is", parameters: noArgs };

function agents() {
  return {
    support: scriptedAgent([
      { match: "where", toolCalls: [{ tool: "locate", arguments: {} }], reply: "You are in {result}." },
      { match: "hello", reply: "Hello there, how can I help you today?" },
    ]),
  };
}

describe("resume", () => {
  it("replays every event after the last one seen, then live ones, none lost or doubled, and redelivers the pending call", async () => {
    server = await startTestServer({ agents: agents() });
    const token = await server.token("u_1");
    const first = await RawClient.open(server.wsUrl, { kind: "user", token });
    const sessionId = await first.create("support", { tools: [locate] });
    first.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    await first.turnEnd("c_1");
    first.send({ type: "message.send", sessionId, commandId: "c_2", text: "where am I?" });
    const call = await first.nextOf("tool.call");
    // The socket dies; the page saw everything up to the tool call.
    const seen = first.events(sessionId);
    const lastSeen = seen.at(-1)!.seq;
    first.drop();
    await first.whenClosed();

    const second = await RawClient.open(server.wsUrl, { kind: "user", token });
    second.send({ type: "session.resume", requestId: "r_2", sessionId, afterSeq: lastSeen, tools: [locate] });
    await second.nextOf("session.opened");
    const again = await second.next((f) => f.type === "tool.call" && f.attempt === 2);
    expect(again.type === "tool.call" && again.call.id).toBe(call.call.id);
    second.send({
      type: "tool.result",
      sessionId,
      callId: call.call.id,
      attempt: 2,
      result: { outcome: "completed", content: { text: "Porto", images: [] } },
    });
    const end = await second.turnEnd("c_2");
    expect(end.type === "response.completed" && end.text).toBe("You are in Porto.");

    const all: SessionEvent[] = [...seen, ...second.events(sessionId)];
    const seqs = all.map((event) => event.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    // The log read over HTTP is exactly what the two sockets saw together.
    const res = await fetch(`${server.url}/v1/sessions/${sessionId}/events?after=0&limit=1000`, {
      headers: server.backendHeaders(),
    });
    const log = (await res.json()) as { events: SessionEvent[]; lastSeq: number };
    expect(log.events).toEqual(all);
    expect(log.lastSeq).toBe(seqs.at(-1));
    await second.close();
  });

  it("loses and doubles nothing when events are produced while it resumes", async () => {
    server = await startTestServer({ agents: agents() });
    const backend = await RawClient.open(server.wsUrl, {
      kind: "api_key",
      apiKey: server.apiKey,
      secret: server.secret,
    });
    const sessionId = await backend.create("support", { userId: "u_1" });
    for (let i = 0; i < 5; i++) {
      backend.send({ type: "message.send", sessionId, commandId: `warm_${i}`, text: "hello" });
      await backend.turnEnd(`warm_${i}`);
    }
    const token = await server.token("u_1");
    const reader = await RawClient.open(server.wsUrl, { kind: "user", token });
    // Messages keep producing events while the reader resumes from the middle of the log.
    for (let i = 0; i < 5; i++)
      backend.send({ type: "message.send", sessionId, commandId: `live_${i}`, text: "hello" });
    reader.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 7, tools: [] });
    await backend.turnEnd("live_4");
    await reader.turnEnd("live_4");
    const seqs = reader.events(sessionId).map((event) => event.seq);
    expect(seqs[0]).toBe(8);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 8));
    expect(seqs.at(-1)).toBe(backend.events(sessionId).at(-1)!.seq);
    await reader.close();
    await backend.close();
  });

  it("picks a session up after a page reload with the real client and answers the pending call", async () => {
    server = await startTestServer({ agents: agents() });
    const tools = () =>
      new Tools().register({
        name: "locate",
        description: "Where the user is",
        parameters: noArgs,
        run: () => "Faro",
      });
    const before = new Client({ baseUrl: server.url, requestTimeoutMs: 5_000 });
    before.setUser({ id: "u_1" }, await server.token("u_1"));
    // This page never answers: its tool hangs until the page goes away.
    const hanging = new Tools().register({
      name: "locate",
      description: "Where the user is",
      parameters: noArgs,
      run: () => new Promise(() => {}),
    });
    const session = await before.agent("support").sessions.create({ tools: hanging });
    const reply = session.responses.create("where am I?");
    reply.catch(() => {});
    await new Promise<void>((resolve) =>
      session.on("toolCall", (item) => item.status === "running" && resolve()),
    );
    before.close();

    const after = await userClient(server, "u_1");
    const resumed = await after.agent("support").sessions.resume(session.id, { tools: tools() });
    await new Promise<void>((resolve) =>
      resumed.on("responseCompleted", (event) => event.text === "You are in Faro." && resolve()),
    );
    const call = resumed.conversation.find((item) => item.type === "tool_call");
    expect(call).toMatchObject({ status: "completed", attempt: 2 });
    expect(
      resumed.conversation
        .filter((item) => item.type === "message")
        .map((m) => m.type === "message" && m.text),
    ).toEqual(["where am I?", "You are in Faro."]);
  });

  it("takes a tool.result sent right behind its session.resume once the session is open on the socket", async () => {
    server = await startTestServer({ agents: agents() });
    const token = await server.token("u_1");
    const first = await RawClient.open(server.wsUrl, { kind: "user", token });
    const sessionId = await first.create("support", { tools: [locate] });
    first.send({ type: "message.send", sessionId, commandId: "c_1", text: "where am I?" });
    const call = await first.nextOf("tool.call");
    const lastSeen = first.events(sessionId).at(-1)!.seq;
    first.drop();
    await first.whenClosed();

    // The answer to the delivery the resume makes, in the same burst as the resume: a socket
    // takes an answer at once only when no frame of it is still being handled.
    const second = await RawClient.open(server.wsUrl, { kind: "user", token });
    second.send({ type: "session.resume", requestId: "r_2", sessionId, afterSeq: lastSeen, tools: [locate] });
    second.send({
      type: "tool.result",
      sessionId,
      callId: call.call.id,
      attempt: 2,
      result: { outcome: "completed", content: { text: "Lisbon", images: [] } },
    });
    const end = await second.turnEnd("c_1");
    expect(end.type === "response.completed" && end.text).toBe("You are in Lisbon.");
    await second.close();
  });

  it("refuses a session that is not open on this socket with not_found", async () => {
    server = await startTestServer({ agents: agents() });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("support");
    client.send({ type: "session.close", sessionId });
    client.send({ type: "message.send", sessionId, commandId: "c_9", text: "hello" });
    const error = await client.nextOf("error");
    expect(error).toMatchObject({ code: "not_found", sessionId, commandId: "c_9" });
    await client.close();
  });
});

describe("delete", () => {
  it("tells an attached socket its session was deleted, and refuses it from then on", async () => {
    server = await startTestServer({ agents: agents() });
    const client = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("u_1") });
    const sessionId = await client.create("support");
    const res = await fetch(`${server.url}/v1/sessions/${sessionId}`, {
      method: "DELETE",
      headers: server.backendHeaders(),
    });
    expect(res.status).toBe(204);
    expect(await client.nextOf("error")).toMatchObject({ code: "not_found", sessionId, message: /deleted/ });
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    expect(await client.nextOf("error")).toMatchObject({ code: "not_found", commandId: "c_1" });
    client.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0, tools: [] });
    expect(await client.nextOf("error")).toMatchObject({ code: "not_found", requestId: "r" });
    await client.close();
  });
});

describe("restart", () => {
  it("keeps sessions and conversations across a graceful restart; a turn that ran is handed back, not lost", async () => {
    server = await startTestServer({ agents: agents() });
    const token = await server.token("u_1");
    const client = await RawClient.open(server.wsUrl, { kind: "user", token });
    const sessionId = await client.create("support", { tools: [locate] });
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    await client.turnEnd("c_1");
    client.send({ type: "message.send", sessionId, commandId: "c_2", text: "where?" });
    await client.nextOf("tool.call");

    await server.restart();
    const closed = await client.whenClosed();
    expect(closed).toEqual({ code: 1001, reason: "server shutting down" });
    const lastSeen = client.events(sessionId).at(-1)!.seq;
    // The shutdown ended the turn itself: the page was told, the call was cancelled.
    expect(
      client.events(sessionId).some((e) => e.type === "tool.cancel" && e.reason === "session_closed"),
    ).toBe(true);

    const after = await RawClient.open(server.wsUrl, { kind: "user", token });
    after.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0, tools: [locate] });
    const ended = await after.turnEnd("c_2");
    expect(ended).toMatchObject({ type: "response.completed", reason: "interrupted" });
    expect(after.events(sessionId).at(-1)!.seq).toBe(lastSeen);

    after.send({ type: "message.send", sessionId, commandId: "c_3", text: "hello again" });
    expect((await after.turnEnd("c_3")).type).toBe("response.completed");
    // A command id from before the restart is still known: not run twice.
    after.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    const res = await fetch(`${server.url}/v1/sessions/${sessionId}`, { headers: server.backendHeaders() });
    const body = (await res.json()) as { conversation: { type: string; text?: string; status?: string }[] };
    expect(body.conversation.map((item) => `${item.type}:${item.text ?? ""}:${item.status}`)).toEqual([
      "message:hello:completed",
      "message:Hello there, how can I help you today?:completed",
      "message:where?:completed",
      "tool_call::cancelled",
      "message:hello again:completed",
      "message:Hello there, how can I help you today?:completed",
    ]);
    await after.close();
  });
});

describe("opening a session", () => {
  it("reads nothing back for a session just created over the socket (not even whether a command id is new), and reads the store on a resume", async () => {
    const dir = mkdtempSync(join(tmpdir(), "patchbay-reads-"));
    const sqlite = new SqliteStore({ dataDir: dir });
    const reads: string[] = [];
    const counted = new Set(["getSession", "conversation", "pageTools", "readEvents", "hasCommand"]);
    // The server's store, with the reads a session's load and replay make counted.
    const store = new Proxy(sqlite, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (typeof key !== "string" || !counted.has(key) || typeof value !== "function") return value;
        return (...args: unknown[]) => {
          reads.push(key);
          return value.apply(target, args);
        };
      },
    }) as Store;
    try {
      server = await startTestServer({ agents: agents(), store, dataDir: undefined });
      const token = await server.token("u_1");
      const first = await RawClient.open(server.wsUrl, { kind: "user", token });
      const sessionId = await first.create("support", { tools: [locate] });
      expect(reads).toEqual([]);
      first.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
      const ended = await first.turnEnd("c_1");
      expect(ended.type).toBe("response.completed");
      // The same command again is a duplicate, known without asking the store; a new one runs.
      first.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
      first.send({ type: "message.send", sessionId, commandId: "c_2", text: "hello" });
      expect((await first.turnEnd("c_2")).type).toBe("response.completed");
      const created = (client: RawClient) =>
        client.events(sessionId).flatMap((e) => (e.type === "message.created" ? [e.commandId] : []));
      expect(created(first)).toEqual(["c_1", "c_2"]);
      expect(reads).toEqual([]);
      await first.close();
      // A resume from the start replays the session's events from the store.
      const second = await RawClient.open(server.wsUrl, { kind: "user", token });
      second.send({ type: "session.resume", requestId: "r_1", sessionId, afterSeq: 0, tools: [] });
      await second.next((f) => f.type === "response.completed");
      expect(reads).toContain("readEvents");
      const replayed = second.events(sessionId);
      expect(replayed.map((e) => e.seq)).toEqual(first.events(sessionId).map((e) => e.seq));
      // Loaded from the store, the session asks it whether a command id is new.
      second.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
      second.send({ type: "message.send", sessionId, commandId: "c_3", text: "hello" });
      expect((await second.turnEnd("c_3")).type).toBe("response.completed");
      expect(created(second)).toEqual(["c_1", "c_2", "c_3"]);
      expect(reads).toContain("hasCommand");
      await second.close();
    } finally {
      await server?.close();
      server = undefined;
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
