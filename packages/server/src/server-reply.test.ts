// `server.reply`: one reply of an agent in this process, through the real turn loop (model,
// in-process tools, approvals), on a real server.
import { createModel, type LanguageModel, ModelError } from "@patchbay/models";
import { Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { createServer, type PatchbayServer } from "./create-server";
import { ServerError } from "./errors";
import { silentLogger } from "./observability/logger";

const servers: PatchbayServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const runs: string[] = [];
const tools = new Tools()
  .register<{ order_id: string }>({
    name: "lookup_order",
    description: "Look up an order",
    parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
    run: ({ order_id }) => {
      runs.push(order_id);
      return `${order_id} has shipped`;
    },
  })
  .register<{ order_id: string }>({
    name: "refund_order",
    description: "Refund an order",
    parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
    approval: { title: "Refund {order_id}?" },
    run: ({ order_id }) => `refunded ${order_id}`,
  });

async function start(createModelOverride?: () => LanguageModel): Promise<PatchbayServer> {
  const server = await createServer({
    port: 0,
    host: "127.0.0.1",
    mode: "development",
    env: {},
    logger: silentLogger,
    tools,
    agents: {
      support: {
        model: {
          provider: "scripted",
          rules: [
            {
              match: "^where is (?<id>\\w+)",
              toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{id}" } }],
              reply: "Order: {result}",
              errorReply: "Failed: {result}",
            },
            {
              match: "^refund (?<id>\\w+)",
              toolCalls: [{ tool: "refund_order", arguments: { order_id: "{id}" } }],
              reply: "Refund: {result}",
              errorReply: "No refund: {result}",
            },
            { match: "^hello", reply: "Hello! How can I help?" },
          ],
        },
      },
    },
    ...(createModelOverride ? { createModel: createModelOverride } : {}),
  });
  servers.push(server);
  return server;
}

describe("server.reply", () => {
  it("resolves with the final text after the tool calls ran, and the calls themselves", async () => {
    const server = await start();
    runs.length = 0;
    const reply = await server.reply("support", "where is A1");
    expect(reply.text).toBe("Order: A1 has shipped");
    expect(reply.reason).toBe("stop");
    expect(runs).toEqual(["A1"]);
    expect(reply.toolCalls).toEqual([
      expect.objectContaining({ name: "lookup_order", status: "completed", arguments: { order_id: "A1" } }),
    ]);
    // The session stays: a second reply continues it.
    const next = await server.reply("support", "hello", { sessionId: reply.sessionId });
    expect(next).toMatchObject({ text: "Hello! How can I help?", sessionId: reply.sessionId, toolCalls: [] });
    const { conversation } = await server.sessions.get({ kind: "backend" }, reply.sessionId);
    expect(
      conversation.filter((i) => i.type === "message").map((i) => i.type === "message" && i.role),
    ).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("declines a question for approval unless onApproval allows it", async () => {
    const server = await start();
    const declined = await server.reply("support", "refund B2");
    expect(declined.text).toBe(
      'No refund: The user declined the call of "refund_order"; it did not run. Their reason: nobody could be asked: server.reply declines approvals unless its onApproval allows them',
    );
    expect(declined.toolCalls[0]?.status).toBe("declined");
    const titles: string[] = [];
    const allowed = await server.reply("support", "refund B2", {
      onApproval: (request) => {
        titles.push(request.title);
        return true;
      },
    });
    expect(allowed.text).toBe("Refund: refunded B2");
    expect(titles).toEqual(["Refund B2?"]);
  });

  it("rejects with the failed reply's code, and names a bad agent or message", async () => {
    const server = await start(() => ({
      ...createModel({ provider: "scripted", rules: [] }),
      // biome-ignore lint/correctness/useYield: it fails before its first event, as a provider that refuses the request
      async *stream() {
        throw new ModelError("rate_limited", "provider says: quota exhausted");
      },
    }));
    const failed = await server.reply("support", "hello").catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(ServerError);
    expect(failed).toMatchObject({ code: "rate_limited" });
    expect(await server.reply("nobody", "hello").catch((e: unknown) => e)).toMatchObject({
      code: "not_found",
    });
    expect(await server.reply("support", "  ").catch((e: unknown) => e)).toMatchObject({
      code: "invalid_request",
      path: "message",
    });
  });
});
