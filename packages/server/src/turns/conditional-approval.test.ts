// A conditional approval (`approval.conditional`, the tool's `when` said yes where it runs) asked
// by the host over the wire: one question per call whatever delivery asks, the call's timeout
// paused while it waits, a decline that ends the call. Real server, raw worker sockets on
// 127.0.0.1 (the SDK sides are tested in e2e/test/conditional-approval.test.ts).
import type { ApprovalRequest, ToolCallItem } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { PatchbayServer } from "../create-server";
import { backendHttp } from "../testing/backend-http";
import { startServerForTest } from "../testing/test-server";
import { TestWorkerSocket } from "../testing/test-worker-socket";
import { createDispatch } from "../workers/create-dispatch";

let server: PatchbayServer;
let closeServer: () => Promise<void>;
const sockets: TestWorkerSocket[] = [];

beforeEach(async () => {
  ({ server, close: closeServer } = await startServerForTest({
    agents: {
      support: {
        model: {
          provider: "scripted",
          rules: [
            {
              match: "^pay (?<amount>\\d+)",
              toolCalls: [{ tool: "pay", arguments: { amount: "{amount:integer}" } }],
              reply: "Done: {result}",
              errorReply: "Failed: {result}",
            },
          ],
        },
      },
    },
    dispatch: (context) => createDispatch(context, { heartbeatIntervalMs: 5_000 }),
  }));
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.drop();
  await closeServer();
});

async function worker(timeoutMs?: number): Promise<TestWorkerSocket> {
  const socket = await TestWorkerSocket.connect(server.url, {
    capacity: 0,
    handles: { messages: false, calls: false },
    hosts: [
      {
        agent: "support",
        tools: [
          {
            name: "pay",
            description: "Pay an invoice",
            parameters: { type: "object", properties: { amount: { type: "integer" } } },
            approval: { title: "Pay {amount}?", conditional: true },
            ...(timeoutMs === undefined ? {} : { timeoutMs }),
          },
        ],
      },
    ],
  });
  sockets.push(socket);
  await socket.next("worker.ready");
  return socket;
}

const http = <T>(path: string, body?: unknown) => backendHttp(server.url).json<T>(path, body);

async function startTurn(text: string): Promise<string> {
  const api = backendHttp(server.url);
  const id = await api.createSession("support");
  await api.send(id, text);
  return id;
}

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const pending = (sessionId: string) =>
  http<{ approvals: ApprovalRequest[] }>(`/v1/sessions/${sessionId}/approvals`).then((r) => r.approvals);

const events = (sessionId: string) => backendHttp(server.url).events(sessionId);

async function ended(sessionId: string): Promise<{ reply: string; call: ToolCallItem }> {
  return until("the turn ended", async () => {
    const all = await events(sessionId);
    if (!all.some((e) => e.type === "response.completed")) return undefined;
    const reply = all.filter((e) => e.type === "message.completed").at(-1) as { item: { text: string } };
    const calls = all
      .filter((e) => e.type === "conversation.updated" && e.item.type === "tool_call")
      .map((e) => (e as { item: ToolCallItem }).item);
    return { reply: reply.item.text, call: calls.at(-1)! };
  });
}

describe("a conditional approval asked by a worker", () => {
  it("is one question across redelivery: the next worker asks again and gets that question's answer", async () => {
    const first = await worker();
    const sessionId = await startTurn("pay 500");
    const call = await first.next("hosted.call");
    // Routed without a question: the tool decides (its `when`) where it runs.
    expect(await pending(sessionId)).toEqual([]);
    first.send({ type: "hosted.approval", callId: call.callId, attempt: 1 });
    const [question] = await until("the question", async () => {
      const list = await pending(sessionId);
      return list.length > 0 ? list : undefined;
    });
    expect(question).toMatchObject({ id: `approval_${call.callId}`, callId: call.callId, title: "Pay 500?" });

    // The worker dies while the user thinks; the call goes to another, which asks again.
    const second = await worker();
    first.drop();
    const again = await second.next("hosted.call");
    expect(again).toMatchObject({ callId: call.callId, attempt: 2 });
    second.send({ type: "hosted.approval", callId: call.callId, attempt: 2 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await pending(sessionId)).map((a) => a.id)).toEqual([question!.id]);
    // An older delivery asking is refused; it must not run.
    second.send({ type: "hosted.approval", callId: call.callId, attempt: 1 });
    expect(await second.next("hosted.approval.ack", (f) => f.attempt === 1)).toMatchObject({
      outcome: "cancelled",
      reason: "stale_attempt",
    });

    expect(
      await http(`/v1/sessions/${sessionId}/approvals/${question!.id}`, { allowed: true }),
    ).toMatchObject({
      outcome: "allowed",
    });
    expect(await second.next("hosted.approval.ack", (f) => f.attempt === 2)).toEqual({
      type: "hosted.approval.ack",
      callId: call.callId,
      attempt: 2,
      outcome: "allowed",
    });
    second.send({
      type: "hosted.result",
      callId: call.callId,
      attempt: 2,
      result: { outcome: "completed", content: { text: "paid 500", images: [] } },
    });
    const { reply, call: item } = await ended(sessionId);
    expect(reply).toBe("Done: paid 500");
    expect(item).toMatchObject({ status: "completed", attempt: 2 });
    const statuses = (await events(sessionId))
      .filter((e) => e.type === "conversation.updated" && e.item.type === "tool_call")
      .map((e) => (e as { item: ToolCallItem }).item.status)
      .filter((status, i, all) => status !== all[i - 1]); // the redelivery's attempt is an update too
    // Made and started in one transaction, the call's first update says running (change-queue.ts).
    expect(statuses).toEqual(["running", "awaiting_approval", "running", "completed"]);
  });

  it("ends the call on a decline, with the user's reason for the model; the worker's answer after it is no late result", async () => {
    const socket = await worker();
    const sessionId = await startTurn("pay 900");
    const call = await socket.next("hosted.call");
    socket.send({ type: "hosted.approval", callId: call.callId, attempt: 1 });
    await until("the question", async () => ((await pending(sessionId)).length > 0 ? true : undefined));
    await http(`/v1/sessions/${sessionId}/approvals/approval_${call.callId}`, {
      allowed: false,
      reason: "too much this month",
    });
    expect(await socket.next("hosted.approval.ack")).toMatchObject({
      outcome: "declined",
      reason: "too much this month",
    });
    const { reply, call: item } = await ended(sessionId);
    expect(reply).toBe(
      'Failed: The user declined the call of "pay"; it did not run. Their reason: too much this month',
    );
    expect(item.status).toBe("declined");
    socket.send({
      type: "hosted.result",
      callId: call.callId,
      attempt: 1,
      result: { outcome: "declined", content: { text: "declined", images: [] } },
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const { conversation } = await http<{ conversation: ToolCallItem[] }>(`/v1/sessions/${sessionId}`);
    expect(conversation.find((i) => i.type === "tool_call")).not.toHaveProperty("lateResult");
  });

  it("pauses the call's timeout while the question waits, and starts it anew once allowed", async () => {
    const socket = await worker(300);
    const sessionId = await startTurn("pay 700");
    const call = await socket.next("hosted.call");
    socket.send({ type: "hosted.approval", callId: call.callId, attempt: 1 });
    await until("the question", async () => ((await pending(sessionId)).length > 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 600)); // twice the tool's timeout
    await http(`/v1/sessions/${sessionId}/approvals/approval_${call.callId}`, { allowed: true });
    expect(await socket.next("hosted.approval.ack")).toMatchObject({ outcome: "allowed" });
    socket.send({
      type: "hosted.result",
      callId: call.callId,
      attempt: 1,
      result: { outcome: "completed", content: { text: "paid 700", images: [] } },
    });
    expect((await ended(sessionId)).reply).toBe("Done: paid 700");
  });
});
