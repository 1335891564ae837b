import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionEvent } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";
import { backendHttp } from "../testing/backend-http";
import { TestWorkerSocket } from "../testing/test-worker-socket";
import { createDispatch, type DispatchModule } from "./create-dispatch";

let server: PatchbayServer;
let dispatch: DispatchModule;
let dataDir: string;
const sockets: TestWorkerSocket[] = [];

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "patchbay-dispatch-"));
  server = await createServer({
    port: 0,
    dataDir,
    apiKey: "pk_test",
    secret: "sk_test",
    logger: silentLogger,
    agents: {
      support: {
        model: { provider: "scripted", rules: [{ match: ".", reply: "The model replied." }] },
        dispatch: { text: "enabled" },
      },
      plain: { model: { provider: "scripted", rules: [{ match: ".", reply: "plain" }] } },
      payments: {
        model: {
          provider: "scripted",
          rules: [
            {
              match: "pay (?<amount>\\d+)",
              toolCalls: [{ tool: "record_payment", arguments: { amount: "{amount:integer}" } }],
              reply: "Paid: {results.record_payment}",
            },
          ],
        },
      },
    },
    dispatch: (context) => {
      dispatch = createDispatch(context, { heartbeatIntervalMs: 100, queueTimeoutMs: 2_000 });
      return dispatch;
    },
  });
});

const api = () => backendHttp(server.url);

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.drop();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function worker(hello: Parameters<typeof TestWorkerSocket.connect>[1] = {}): Promise<TestWorkerSocket> {
  const socket = await TestWorkerSocket.connect(server.url, hello);
  sockets.push(socket);
  await socket.next("worker.ready");
  return socket;
}

const post = (path: string, body: unknown, headers?: Record<string, string>) =>
  api().post(path, body, headers);
const session = (agent: string) => api().createSession(agent);

/**
 * Sends a message to session `sessionId` (of user u_1) and waits for its turn to end. By default
 * the user sends it (a user token): only a user's message goes to a worker first.
 */
async function turnEvents(
  sessionId: string,
  body: Record<string, unknown>,
  sender: "user" | "backend" = "user",
): Promise<SessionEvent[]> {
  await api().send(sessionId, body, sender);
  return api().turnsEnded(sessionId);
}

describe("createDispatch", () => {
  it("refuses a worker with a wrong secret and closes its socket", async () => {
    const socket = await TestWorkerSocket.connect(server.url, { secret: "wrong" });
    sockets.push(socket);
    const error = await socket.next("error");
    expect(error.code).toBe("unauthorized");
    expect((await socket.closed).code).toBe(4401);
    expect(dispatch.registry.size).toBe(0);
  });

  it("tells a socket replaced by a newer one of the same workerId why, and closes it with 4409", async () => {
    const first = await worker({ workerId: "w_same" });
    const second = await worker({ workerId: "w_same" });
    const error = await first.next("error");
    expect(error).toMatchObject({ code: "conflict" });
    expect(error.message).toContain("w_same");
    expect((await first.closed).code).toBe(4409);
    expect(dispatch.registry.get("w_same")).toBeDefined();
    expect(second.frames.filter((f) => f.type === "error")).toEqual([]);
  });

  it("tells a worker that hosts an agent the server does not have, naming the field, and keeps it", async () => {
    const socket = await worker({
      workerId: "w_hosts",
      hosts: [
        { agent: "payments", tools: [] },
        { agent: "no_such_agent", tools: [] },
      ],
    });
    const error = await socket.next("error");
    expect(error).toMatchObject({ code: "not_found", path: "hosts.1.agent" });
    expect(dispatch.registry.get("w_hosts")).toBeDefined();
  });

  it("names the field when it refuses a hello", async () => {
    const socket = await TestWorkerSocket.connect(server.url, { protocol: 2 });
    sockets.push(socket);
    expect(await socket.next("error")).toMatchObject({ code: "protocol_version", path: "protocol" });
    expect((await socket.closed).code).toBe(4400);
  });

  it("routes an inbound message to a worker, or answers 503 no_worker when none is connected", async () => {
    const body = { channel: { type: "sms", id: "+15550100" }, userId: "u_9", text: "Where is A1?" };
    const none = await post("/v1/agents/support/inbound/messages", body);
    expect(none.status).toBe(503);
    expect(await none.json()).toEqual({ error: expect.objectContaining({ code: "no_worker" }) });

    const w = await worker();
    const res = await post("/v1/agents/support/inbound/messages", body);
    expect(res.status).toBe(202);
    const receipt = (await res.json()) as { workId: string; status: string };
    expect(receipt.status).toBe("offered");
    const offer = await w.next("work.offered");
    expect(offer.workId).toBe(receipt.workId);
    expect(offer.work).toMatchObject({
      kind: "message",
      message: {
        agent: "support",
        sessionId: null,
        channel: body.channel,
        user: { id: "u_9" },
        text: "Where is A1?",
      },
    });
  });

  it("refuses inbound messages with images, unknown agents, user tokens and bad bodies", async () => {
    await worker();
    const images = await post("/v1/agents/support/inbound/messages", {
      channel: { type: "sms", id: "+1" },
      userId: "u_1",
      text: "look",
      images: [{ type: "image", url: "https://example.com/a.png" }],
    });
    expect(images.status).toBe(422);
    expect(((await images.json()) as { error: { code: string } }).error.code).toBe("unsupported_content");
    const unknown = await post("/v1/agents/nobody/inbound/calls", { from: "+1", to: "+2" });
    expect(unknown.status).toBe(404);
    const anonymous = await post("/v1/agents/support/inbound/calls", { from: "+1", to: "+2" }, {});
    expect(anonymous.status).toBe(401);
    const bad = await post("/v1/agents/support/inbound/calls", { from: "+1" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { path: string } }).error.path).toBe("to");
  });

  it("routes an inbound call to a worker's onCall, holding a slot until it is done", async () => {
    const w = await worker({ capacity: 1, handles: { messages: false, calls: true } });
    const call = { from: "+15550100", to: "+15550199", customData: { campaign: "spring" } };
    const first = await post("/v1/agents/support/inbound/calls", call);
    const second = await post("/v1/agents/support/inbound/calls", call);
    expect(((await first.json()) as { status: string }).status).toBe("offered");
    expect(((await second.json()) as { status: string }).status).toBe("queued");
    const offer = await w.next("work.offered");
    expect(offer.work).toMatchObject({
      kind: "call",
      call: { from: "+15550100", customData: { campaign: "spring" } },
    });
    w.send({ type: "work.accepted", workId: offer.workId });
    w.send({ type: "work.done", workId: offer.workId });
    const next = await w.next("work.offered", (f) => f.workId !== offer.workId);
    expect(next.work.kind).toBe("call");
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/patchbay_dispatch_work_total\{kind="call",event="offered"\} 2/);
    expect(metrics).toMatch(/patchbay_dispatch_work_total\{kind="call",event="queued"\} 1/);
    expect(metrics).toMatch(/patchbay_workers_connected 1/);
  });

  it("drops a worker that stops answering heartbeats and offers its work to another", async () => {
    const silent = await worker({ workerId: "w_silent", capacity: 1 });
    const res = await post("/v1/agents/support/inbound/calls", { from: "+1", to: "+2" });
    const { workId } = (await res.json()) as { workId: string };
    await silent.next("work.offered");
    silent.send({ type: "work.accepted", workId });
    silent.answerPings = false;
    const healthy = await worker({ workerId: "w_healthy", capacity: 1 });
    const again = await healthy.next("work.offered", (f) => f.workId === workId, 3_000);
    expect(again.attempt).toBe(2);
    expect((await silent.closed).code).toBe(4408);
  });

  it("sends a session's message to a worker first and lets the model answer after `answer`", async () => {
    const w = await worker();
    const id = await session("support");
    const turn = turnEvents(id, { text: "Hello" });
    const offer = await w.next("work.offered");
    expect(offer.work.kind === "message" && offer.work.message).toMatchObject({
      sessionId: id,
      text: "Hello",
    });
    const message = offer.work.kind === "message" ? offer.work.message : undefined;
    w.send({ type: "work.accepted", workId: offer.workId });
    w.send({ type: "answer", workId: offer.workId, sessionId: id, messageId: message!.id });
    w.send({ type: "work.done", workId: offer.workId });
    const events = await turn;
    expect(events.find((e) => e.type === "response.thinking")).toMatchObject({ reason: "dispatch" });
    expect(events.find((e) => e.type === "response.completed")).toMatchObject({ text: "The model replied." });
  });

  it("sends a message the backend sends with the API key straight to the model, not to a worker", async () => {
    const w = await worker();
    const id = await session("support");
    const events = await turnEvents(id, { text: "Hello from the backend" }, "backend");
    expect(events.find((e) => e.type === "response.completed")).toMatchObject({
      reason: "stop",
      text: "The model replied.",
    });
    expect(events.some((e) => e.type === "response.thinking" && e.reason === "dispatch")).toBe(false);
    expect(w.frames.some((f) => f.type === "work.offered")).toBe(false);
  });

  it("ends the turn as answered by the worker when it finishes without `answer`", async () => {
    const w = await worker();
    const id = await session("support");
    const turn = turnEvents(id, { text: "Hello" });
    const offer = await w.next("work.offered");
    w.send({ type: "work.done", workId: offer.workId });
    expect((await turn).find((e) => e.type === "response.completed")).toMatchObject({
      reason: "answered_by_worker",
    });
  });

  it("tells the sender when no worker is connected, and refuses images", async () => {
    const id = await session("support");
    const failed = (await turnEvents(id, { text: "Hello" })).find((e) => e.type === "response.failed");
    expect(failed).toMatchObject({ error: { code: "no_worker" } });

    const w = await worker();
    const other = await session("support");
    const withImage = await turnEvents(other, {
      text: "What is this?",
      images: [{ type: "image", url: "https://example.com/a.png" }],
    });
    expect(withImage.find((e) => e.type === "response.failed")).toMatchObject({
      error: { code: "unsupported_content" },
    });
    expect(w.frames.some((f) => f.type === "work.offered")).toBe(false);
  });

  it("leaves an agent without `dispatch.text` to the model", async () => {
    const w = await worker();
    const id = await session("plain");
    const events = await turnEvents(id, { text: "Hello" });
    expect(events.find((e) => e.type === "response.completed")).toMatchObject({ text: "plain" });
    expect(events.some((e) => e.type === "response.thinking" && e.reason === "dispatch")).toBe(false);
    expect(w.frames.some((f) => f.type === "work.offered")).toBe(false);
  });

  it("sends worker.ready before anything else, even a call that waited for the worker to come back", async () => {
    const spec = {
      name: "record_payment",
      description: "Record a payment",
      parameters: { type: "object" as const, properties: { amount: { type: "integer" } } },
    };
    const hello = {
      workerId: "w_pay",
      handles: { messages: false, calls: false },
      hosts: [{ agent: "payments", tools: [spec] }],
    };
    const first = await worker(hello);
    const id = await session("payments");
    const turn = turnEvents(id, { text: "pay 5" });
    const call = await first.next("hosted.call");
    expect(call).toMatchObject({
      tool: "record_payment",
      arguments: { amount: 5 },
      attempt: 1,
      sessionId: id,
    });
    first.drop();
    for (let i = 0; i < 100 && dispatch.registry.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(dispatch.registry.size).toBe(0);

    const second = await TestWorkerSocket.connect(server.url, hello);
    sockets.push(second);
    const again = await second.next("hosted.call");
    expect(second.frames[0]?.type).toBe("worker.ready");
    expect(again).toMatchObject({ callId: call.callId, attempt: 2 });
    second.send({
      type: "hosted.result",
      callId: call.callId,
      attempt: 2,
      result: { outcome: "completed", content: { text: "paid once", images: [] } },
    });
    // A late copy from another delivery changes nothing: the first result was used.
    second.send({
      type: "hosted.result",
      callId: call.callId,
      attempt: 1,
      result: { outcome: "completed", content: { text: "paid twice", images: [] } },
    });
    expect((await turn).find((e) => e.type === "response.completed")).toMatchObject({
      text: "Paid: paid once",
    });
  });
});
