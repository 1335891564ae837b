// A worker that keeps conversations between hosted calls, against a scripted server: what its
// hello asks, what its tools see, and how it gets back in step when a frame names an item it
// does not keep.
import type { ConversationItem, ServerToWorkerFrame } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_CONVERSATION_CACHE } from "./conversation-cache";
import { Dispatch } from "./dispatch";
import type { DispatchError } from "./dispatch-error";
import type { DispatchOptions } from "./dispatch-options";
import {
  type ScriptedServer,
  type ScriptedSocket,
  startScriptedServer,
} from "./test-support/scripted-server";

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };

const servers: ScriptedServer[] = [];
const workers: Dispatch[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 }).catch(() => undefined)));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A worker hosting `recall`, which answers with the ids and texts of the conversation it sees. */
async function setup(options: Partial<DispatchOptions> = {}) {
  const server = await startScriptedServer();
  servers.push(server);
  const dispatch = new Dispatch({
    url: server.url,
    apiKey: "pk",
    secret: "sk",
    backoff: { initialDelayMs: 20, maxDelayMs: 50 },
    env: {},
    logger: false,
    ...options,
  });
  workers.push(dispatch);
  const tools = new Tools().register({
    name: "recall",
    description: "What the conversation holds",
    parameters: { type: "object" },
    run: (_args, _signal, ctx) =>
      ctx.conversation
        .map((item) => `${item.id}:${item.type === "message" ? item.text : item.status}`)
        .join(" "),
  });
  dispatch.host({ name: "support", tools });
  void dispatch.run();
  return { server, dispatch, socket: await server.nextSocket() };
}

const message = (id: string, text = id): ConversationItem => ({
  type: "message",
  id,
  role: "user",
  text,
  status: "completed",
  createdAt: 1,
});

function call(socket: ScriptedSocket, callId: string, extra: Partial<HostedCall>): void {
  socket.send({
    type: "hosted.call",
    callId,
    attempt: 1,
    agent: "support",
    sessionId: "s_1",
    tool: "recall",
    arguments: {},
    user: { id: "u_1" },
    conversation: [],
    timeoutMs: 10_000,
    ...extra,
  });
}

async function answer(socket: ScriptedSocket, callId: string): Promise<string> {
  return (await socket.next("hosted.result", (f) => f.callId === callId)).result.content.text;
}

describe("a worker that keeps conversations", () => {
  it("asks for it in its hello, with the defaults or its own limits, and not when told not to", async () => {
    expect((await setup()).socket.hello.conversationCache).toEqual(DEFAULT_CONVERSATION_CACHE);
    const own = await setup({ conversationCache: { sessions: 5 } });
    expect(own.socket.hello.conversationCache).toEqual({
      sessions: 5,
      bytes: DEFAULT_CONVERSATION_CACHE.bytes,
    });
    expect((await setup({ conversationCache: false })).socket.hello.conversationCache).toBeUndefined();
  });

  it("refuses limits that are not whole numbers, naming the option", () => {
    for (const conversationCache of [{ sessions: 0 }, { sessions: 1.5 }, { bytes: -1 }]) {
      expect(
        () =>
          new Dispatch({ url: "http://127.0.0.1:1", apiKey: "k", secret: "s", env: {}, conversationCache }),
      ).toThrow(/conversationCache\.(sessions|bytes) must be/);
    }
  });

  it("gives its tools the whole conversation when a call sends only what changed", async () => {
    const { socket } = await setup();
    call(socket, "call_1", {
      conversation: [message("m_1"), message("m_2")],
      conversationIds: ["m_1", "m_2"],
    });
    expect(await answer(socket, "call_1")).toBe("m_1:m_1 m_2:m_2");
    call(socket, "call_2", {
      conversation: [message("m_2", "edited"), message("m_3")],
      conversationIds: ["m_1", "m_2", "m_3"],
    });
    expect(await answer(socket, "call_2")).toBe("m_1:m_1 m_2:edited m_3:m_3");
    call(socket, "call_3", { conversation: [], conversationIds: ["m_2", "m_3"] });
    expect(await answer(socket, "call_3")).toBe("m_2:edited m_3:m_3");
  });

  it("reconnects when a call names an item it does not keep, and runs the call delivered again whole", async () => {
    const { server, dispatch, socket } = await setup();
    const errors: DispatchError[] = [];
    dispatch.on("error", (error) => errors.push(error));
    call(socket, "call_1", { conversation: [message("m_1")], conversationIds: ["m_1"] });
    await answer(socket, "call_1");
    call(socket, "call_2", { conversation: [], conversationIds: ["m_1", "m_9"] });
    const again = await server.nextSocket();
    expect(errors.map((e) => [e.code, e.message])).toEqual([
      ["protocol", "hosted.call call_2 names a conversation item this worker does not keep; reconnecting"],
    ]);
    expect(socket.frames.some((f) => f.type === "hosted.result" && f.callId === "call_2")).toBe(false);
    // The new connection keeps nothing: what the old one kept is not used.
    call(again, "call_3", { conversation: [], conversationIds: ["m_1"] });
    const third = await server.nextSocket();
    call(third, "call_2", {
      attempt: 2,
      conversation: [message("m_1"), message("m_9")],
      conversationIds: ["m_1", "m_9"],
    });
    expect(await answer(third, "call_2")).toBe("m_1:m_1 m_9:m_9");
  });
});
