import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConversationItem, PROTOCOL_VERSION, type ServerToWorkerFrame } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";
import { backendHttp } from "../testing/backend-http";
import { ConversationFollower } from "../testing/conversation-follower";
import { TestWorkerSocket } from "../testing/test-worker-socket";
import { createDispatch } from "./create-dispatch";

// A worker that asked to keep conversations (worker.hello.conversationCache), over a real socket:
// each item travels once per connection, the worker can always rebuild the whole conversation,
// and what it keeps stays within what it asked for.

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };

let server: PatchbayServer;
let dataDir: string;
const sockets: TestWorkerSocket[] = [];

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "patchbay-conversation-cache-"));
  server = await createServer({
    port: 0,
    dataDir,
    apiKey: "pk_test",
    secret: "sk_test",
    logger: silentLogger,
    agents: {
      support: {
        model: {
          provider: "scripted",
          rules: [
            { match: "^recall", toolCalls: [{ tool: "recall", arguments: {} }], reply: "Said: {result}" },
          ],
        },
      },
    },
    dispatch: (context) => createDispatch(context, { heartbeatIntervalMs: 5_000 }),
  });
});

const clients: WebSocket[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.terminate();
  for (const socket of sockets.splice(0)) socket.drop();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function worker(workerId: string, sessions = 10): Promise<TestWorkerSocket> {
  const socket = await TestWorkerSocket.connect(server.url, {
    workerId,
    capacity: 0,
    handles: { messages: false, calls: false },
    hosts: [
      {
        agent: "support",
        tools: [{ name: "recall", description: "Recall", parameters: { type: "object" } }],
      },
    ],
    conversationCache: { sessions, bytes: 1024 * 1024 },
  });
  sockets.push(socket);
  await socket.next("worker.ready");
  return socket;
}

const http = () => backendHttp(server.url);

/** A session a client socket holds open, so the server keeps it (and its items) loaded. */
async function heldSession(): Promise<string> {
  const ws = new WebSocket(`${server.url.replace(/^http/, "ws")}/v1/client`);
  clients.push(ws);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const frames: Array<{ type: string; session?: { id: string } }> = [];
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  const until = async (type: string) => {
    while (!frames.some((f) => f.type === type)) await new Promise((resolve) => setTimeout(resolve, 5));
    return frames.find((f) => f.type === type)!;
  };
  ws.send(
    JSON.stringify({
      type: "hello",
      protocol: PROTOCOL_VERSION,
      auth: { kind: "api_key", apiKey: "pk_test", secret: "sk_test" },
    }),
  );
  await until("welcome");
  ws.send(JSON.stringify({ type: "session.create", requestId: "r_1", agent: "support", userId: "u_1" }));
  return (await until("session.opened")).session!.id;
}

async function conversation(sessionId: string): Promise<ConversationItem[]> {
  const res = await fetch(`${server.url}/v1/sessions/${sessionId}`, { headers: http().headers });
  return ((await res.json()) as { conversation: ConversationItem[] }).conversation;
}

/** Sends `text`, waits for its call on `socket` and answers it; returns the call's frame. */
async function turn(
  socket: TestWorkerSocket,
  sessionId: string,
  text: string,
  turns: number,
): Promise<HostedCall> {
  const seen = socket.frames.length;
  await http().send(sessionId, text);
  const call = await socket.next(
    "hosted.call",
    (f) => f.sessionId === sessionId && socket.frames.indexOf(f) >= seen,
  );
  socket.send({
    type: "hosted.result",
    callId: call.callId,
    attempt: call.attempt,
    result: { outcome: "completed", content: { text: `answer to ${text}`, images: [] } },
  });
  await http().turnsEnded(sessionId, turns, 10_000);
  return call;
}

describe("a worker that keeps conversations", () => {
  it("gets each item once, and every call rebuilds to the session's conversation at the time", async () => {
    const socket = await worker("w_1");
    const kept = new ConversationFollower();
    const id = await heldSession();
    const first = await turn(socket, id, "recall one", 1);
    expect(first.conversation.map((item) => item.id)).toEqual(first.conversationIds);
    kept.read(first);

    await http().send(id, "recall two");
    const second = await socket.next("hosted.call", (f) => f.callId !== first.callId);
    // While the call waits, the session's conversation is what the worker must be able to rebuild.
    expect(kept.read(second)).toEqual(await conversation(id));
    const ids = second.conversationIds!;
    expect(ids).toHaveLength(5); // message, call, reply, message, call
    // The first message did not change since the first call: it stays on the worker's side. The
    // first call (now completed) and everything after it travel.
    expect(second.conversation.map((item) => item.id)).toEqual(ids.slice(1));
    expect(second.conversation[0]).toMatchObject({ id: first.callId, status: "completed" });
    socket.send({
      type: "hosted.result",
      callId: second.callId,
      attempt: second.attempt,
      result: { outcome: "completed", content: { text: "two", images: [] } },
    });
    await http().turnsEnded(id, 2, 10_000);
  });

  it("rebuilds the conversation of a session the server loaded again between turns", async () => {
    const socket = await worker("w_4");
    const kept = new ConversationFollower();
    // No client holds it: its log is unloaded after each turn and loaded again for the next.
    const id = await http().createSession("support");
    for (let n = 1; n <= 3; n++) {
      const seen = socket.frames.length;
      await http().send(id, `recall ${n}`);
      const call = await socket.next("hosted.call", (f) => socket.frames.indexOf(f) >= seen);
      expect(kept.read(call)).toEqual(await conversation(id));
      socket.send({
        type: "hosted.result",
        callId: call.callId,
        attempt: call.attempt,
        result: { outcome: "completed", content: { text: `${n}`, images: [] } },
      });
      await http().turnsEnded(id, n, 10_000);
    }
  });

  it("drops the least recently called session beyond what the worker keeps, and tells it", async () => {
    const socket = await worker("w_2", 2);
    const kept = new ConversationFollower();
    const [a, b, c] = [
      await http().createSession("support"),
      await http().createSession("support"),
      await http().createSession("support"),
    ];
    kept.read(await turn(socket, a, "recall a", 1));
    kept.read(await turn(socket, b, "recall b", 1));
    const third = await turn(socket, c, "recall c", 1);
    expect(third.forgetSessions).toEqual([a]);
    kept.read(third);
    expect([...kept.sessions.keys()].sort()).toEqual([b, c].sort());
    // a comes back: its whole conversation travels again, and b (now least recent) leaves.
    const back = await turn(socket, a, "recall a again", 2);
    expect(back.forgetSessions).toEqual([b]);
    expect(back.conversation.map((item) => item.id)).toEqual(back.conversationIds);
    expect(kept.read(back)).toHaveLength(5);
  });

  it("starts from nothing on a new connection: the first call there sends every item", async () => {
    const first = await worker("w_3");
    const id = await http().createSession("support");
    await turn(first, id, "recall one", 1);
    first.drop();
    const second = await worker("w_3");
    const call = await turn(second, id, "recall two", 2);
    expect(call.conversationIds).toHaveLength(5);
    expect(call.conversation.map((item) => item.id)).toEqual(call.conversationIds);
  });
});
