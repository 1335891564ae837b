// A dispatch worker keeps each session's recent conversation between hosted calls, so the server
// sends each item once (worker.hello.conversationCache, on by default). Whatever travels, a tool
// must read the session's whole conversation as it was when its call was made: in a session a
// client holds open, and in one driven over HTTP whose log the server unloads between turns.
// Real server and worker on 127.0.0.1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import type { ConversationItem } from "@patchbay/protocol";
import { createServer, type PatchbayServer, silentLogger } from "@patchbay/server";
import { Tools } from "@patchbay/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const apiKey = "pk_conversation_cache";
const secret = "sk_conversation_cache_secret_0123456789abcdef";

let server: PatchbayServer;
let dir: string;
let dispatch: Dispatch;
let client: Client;
/** What each call's tool read as its conversation, by call id. */
const seen = new Map<string, ConversationItem[]>();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "patchbay-conversation-cache-"));
  server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: dir,
    apiKey,
    secret,
    env: {},
    logger: silentLogger,
    agents: {
      support: {
        model: {
          provider: "scripted",
          rules: [
            {
              match: "^recall (?<n>\\d+)",
              toolCalls: [
                { tool: "recall", arguments: { n: "{n}" } },
                { tool: "recall", arguments: { n: "{n}b" } },
              ],
              reply: "Recalled {result}",
            },
          ],
        },
      },
    },
  });
  dispatch = new Dispatch({ url: server.url, apiKey, secret, env: {}, logger: false });
  dispatch.host(
    "support",
    new Tools().register({
      name: "recall",
      description: "Reads the conversation",
      parameters: { type: "object", properties: { n: { type: "string" } } },
      run: (_args, _signal, ctx) => {
        seen.set(ctx.id, JSON.parse(JSON.stringify(ctx.conversation)) as ConversationItem[]);
        return `${ctx.conversation.length} items`;
      },
    }),
  );
  const ready = new Promise((resolve) => dispatch.once("ready", resolve));
  void dispatch.run();
  await ready;
  client = new Client({ baseUrl: server.url, apiKey, secret, requestTimeoutMs: 10_000 });
});

afterAll(async () => {
  client?.close();
  await dispatch?.stop({ timeoutMs: 1_000 });
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

const headers = {
  "x-api-key": apiKey,
  authorization: `Bearer ${secret}`,
  "content-type": "application/json",
};

async function post(path: string, body: unknown, status: number): Promise<unknown> {
  const res = await fetch(`${server.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  expect(res.status, `POST ${path}: ${await res.clone().text()}`).toBe(status);
  return res.json();
}

/** Waits until `count` turns of the session have ended. */
async function turnsEnded(sessionId: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await fetch(`${server.url}/v1/sessions/${sessionId}/events?after=0`, { headers });
    const { events } = (await res.json()) as { events: Array<{ type: string }> };
    if (events.filter((e) => e.type === "response.completed").length >= count) return;
    if (Date.now() > deadline) throw new Error(`${count} turns did not end: ${events.map((e) => e.type)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function conversationOf(sessionId: string): Promise<ConversationItem[]> {
  const res = await fetch(`${server.url}/v1/sessions/${sessionId}`, { headers });
  expect(res.status).toBe(200);
  return ((await res.json()) as { conversation: ConversationItem[] }).conversation;
}

/**
 * Every call of the session read the conversation as it stood when the call was made: the items
 * up to its turn's calls (all of them, made together), each item before the turn's calls as it is
 * now (they had all finished), and the call itself running.
 */
function expectEachCallSawItsPast(conversation: ConversationItem[]): number {
  const calls = conversation.filter((item) => item.type === "tool_call");
  for (const call of calls) {
    const read = seen.get(call.id);
    expect(read, `call ${call.id} ran on the worker`).toBeDefined();
    const ids = read!.map((item) => item.id);
    expect(ids).toEqual(conversation.slice(0, ids.length).map((item) => item.id));
    for (const [i, item] of read!.entries()) {
      const sameTurnCall = item.type === "tool_call" && item.responseId === call.responseId;
      if (!sameTurnCall) expect(item, `item ${i} as call ${call.id} read it`).toEqual(conversation[i]);
    }
    expect(read!.find((item) => item.id === call.id)).toMatchObject({ status: "running" });
    expect(read!.at(-1)).toMatchObject({ type: "tool_call", responseId: call.responseId });
  }
  return calls.length;
}

describe("a worker that keeps conversations between calls", () => {
  it("gives every call of a session held open the whole conversation of its moment", async () => {
    const session = await client.agent("support").sessions.create({ userId: "u_1" });
    for (let n = 1; n <= 5; n++) {
      const reply = await session.responses.create(`recall ${n}`);
      expect(reply.text).toMatch(/^Recalled/);
    }
    expect(expectEachCallSawItsPast(await conversationOf(session.id))).toBe(10);
    session.close();
  });

  it("does the same for a session driven over HTTP, loaded again for each turn", async () => {
    const { id } = (await post("/v1/agents/support/sessions", { userId: "u_2" }, 201)) as { id: string };
    for (let n = 1; n <= 4; n++) {
      await post(`/v1/sessions/${id}/messages`, { commandId: `c_${n}`, text: `recall ${n}` }, 202);
      await turnsEnded(id, n);
    }
    expect(expectEachCallSawItsPast(await conversationOf(id))).toBe(8);
  });
});
