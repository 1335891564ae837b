import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MAX_IMAGE_BYTES, type SessionEvent, type ToolCallItem } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";
import { backendHttp } from "../testing/backend-http";
import { TestWorkerSocket } from "../testing/test-worker-socket";
import { createDispatch } from "./create-dispatch";

// What travels on /v1/worker at the edges of the size limits: a frame over the limit is answered
// with frame_too_large on an open socket, a result may carry a 5 MiB image, a result too large
// fails its call once, and the server never sends a worker more than it said it accepts.

let server: PatchbayServer;
let dataDir: string;
const sockets: TestWorkerSocket[] = [];
const MiB = 1024 * 1024;

beforeEach(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "patchbay-frame-limits-"));
  server = await createServer({
    port: 0,
    dataDir,
    apiKey: "pk_test",
    secret: "sk_test",
    logger: silentLogger,
    agents: {
      charts: {
        model: {
          provider: "scripted",
          rules: [
            {
              match: "^chart (?<name>\\w+)",
              toolCalls: [{ tool: "chart", arguments: { name: "{name}" } }],
              reply: "Chart: {result}",
              errorReply: "Failed: {result}",
            },
            {
              match: "^echo (?<text>.+)$",
              toolCalls: [{ tool: "chart", arguments: { name: "{text}" } }],
              reply: "Chart: {result}",
              errorReply: "Failed: {result}",
            },
          ],
        },
      },
    },
    dispatch: (context) => createDispatch(context, { heartbeatIntervalMs: 5_000 }),
  });
});

afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.drop();
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
});

async function worker(hello: Parameters<typeof TestWorkerSocket.connect>[1] = {}): Promise<TestWorkerSocket> {
  const socket = await TestWorkerSocket.connect(server.url, {
    capacity: 0,
    handles: { messages: false, calls: false },
    hosts: [
      {
        agent: "charts",
        tools: [{ name: "chart", description: "Draw a chart", parameters: { type: "object" } }],
      },
    ],
    ...hello,
  });
  sockets.push(socket);
  await socket.next("worker.ready");
  return socket;
}

const session = () => backendHttp(server.url).createSession("charts");
const send = (sessionId: string, text: string) => backendHttp(server.url).send(sessionId, text);

const turnsEnded = (sessionId: string, count: number) =>
  backendHttp(server.url).turnsEnded(sessionId, count, 10_000);

function lastReply(events: SessionEvent[]): string {
  const done = events.filter((e) => e.type === "message.completed");
  const item = (done.at(-1) as { item?: { text?: string } } | undefined)?.item;
  return item?.text ?? "";
}

/** Base64 of `bytes` bytes that start like a PNG. */
function pngBase64(bytes: number): string {
  const data = Buffer.alloc(bytes, 7);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(data);
  return data.toString("base64");
}

function chartResult(callId: string, attempt: number, images: string[]): string {
  return JSON.stringify({
    type: "hosted.result",
    callId,
    attempt,
    result: {
      outcome: "completed",
      content: {
        text: "the chart",
        images: images.map((data) => ({ type: "image", mimeType: "image/png", data })),
      },
    },
  });
}

async function toolCalls(sessionId: string): Promise<ToolCallItem[]> {
  const res = await fetch(`${server.url}/v1/sessions/${sessionId}`, {
    headers: backendHttp(server.url).headers,
  });
  const body = (await res.json()) as { conversation: Array<{ type: string }> };
  return body.conversation.filter((item): item is ToolCallItem => item.type === "tool_call");
}

describe("/v1/worker frame limits", () => {
  it("answers a frame over the limit with frame_too_large and keeps the socket open", async () => {
    const socket = await worker();
    socket.sendText(JSON.stringify({ type: "hosted.say", callId: "c_1", text: "x".repeat(6 * MiB) }));
    const error = await socket.next("error");
    expect(error).toMatchObject({ code: "frame_too_large" });
    expect(error.message).toContain("over the limit of 5242880 bytes");
    socket.send({ type: "ping", nonce: "still-there" });
    await socket.next("pong", (pong) => pong.nonce === "still-there");
    expect(socket.open).toBe(true);
  });

  it("takes a hosted.result carrying an image of the full 5 MiB, and the session keeps it", async () => {
    const socket = await worker({ maxFrameBytes: 16 * MiB });
    const ready = await socket.next("worker.ready");
    expect(ready).toMatchObject({ maxFrameBytes: 5 * MiB, maxResultFrameBytes: 8 * MiB });
    const id = await session();
    await send(id, "chart big");
    const call = await socket.next("hosted.call");
    const image = pngBase64(MAX_IMAGE_BYTES);
    const text = chartResult(call.callId, call.attempt, [image]);
    expect(text.length).toBeGreaterThan(5 * MiB);
    socket.sendText(text);
    expect(lastReply(await turnsEnded(id, 1))).toBe("Chart: the chart");
    const [item] = await toolCalls(id);
    expect(item?.result?.content.images[0]).toMatchObject({ type: "image", data: image });
    expect(socket.open).toBe(true);
    expect(socket.frames.filter((f) => f.type === "hosted.call")).toHaveLength(1);
  });

  it("fails a call once when its result is over the result limit: no disconnect, no redelivery", async () => {
    const socket = await worker();
    const id = await session();
    await send(id, "chart two");
    const call = await socket.next("hosted.call");
    // Two images of 3.2 MiB each: every one passes the image check, together they do not fit.
    socket.sendText(chartResult(call.callId, call.attempt, [pngBase64(3.2 * MiB), pngBase64(3.2 * MiB)]));
    const error = await socket.next("error");
    expect(error.code).toBe("frame_too_large");
    const reply = lastReply(await turnsEnded(id, 1));
    expect(reply).toMatch(/^Failed: The tool's result was \d+ bytes, over the limit of 8388608 bytes/);
    const [item] = await toolCalls(id);
    expect(item).toMatchObject({ status: "failed", result: { error: { code: "result_too_large" } } });
    // The worker's own (late) answer changes nothing, and the call is not delivered again.
    socket.sendText(chartResult(call.callId, call.attempt, [pngBase64(100)]));
    socket.send({ type: "ping", nonce: "after" });
    await socket.next("pong", (pong) => pong.nonce === "after");
    expect(socket.open).toBe(true);
    expect(socket.frames.filter((f) => f.type === "hosted.call")).toHaveLength(1);
    expect((await toolCalls(id))[0]?.status).toBe("failed");
  });

  it("never sends a worker more than it accepts: the conversation's images and oldest items go first", async () => {
    const socket = await worker(); // no maxFrameBytes: 1 MiB, Python websockets' default
    const id = await session();
    await send(id, "chart first");
    const first = await socket.next("hosted.call");
    expect(first.conversationTrimmed).toBeUndefined();
    const image = pngBase64(4_000_000);
    socket.sendText(chartResult(first.callId, first.attempt, [image]));
    await turnsEnded(id, 1);
    await send(id, "chart second");
    const second = await socket.next("hosted.call", (call) => call.callId !== first.callId);
    const size = socket.sizes[socket.frames.indexOf(second)]!;
    expect(size).toBeLessThanOrEqual(MiB);
    expect(second.conversationTrimmed).toBe(true);
    // The first call's result is still there, without its image; the new call is last.
    const earlier = second.conversation.find((item) => item.id === first.callId) as ToolCallItem;
    expect(earlier.result?.content).toEqual({ text: "the chart", images: [] });
    expect(second.conversation.at(-1)).toMatchObject({ type: "tool_call", id: second.callId });
    socket.sendText(chartResult(second.callId, second.attempt, []));
    expect(lastReply(await turnsEnded(id, 2))).toBe("Chart: the chart");
  });

  it("fails a call whose arguments alone are over what the worker accepts, once, without sending it", async () => {
    const socket = await worker({ maxFrameBytes: 64 * 1024 });
    const id = await session();
    await send(id, `echo ${"y".repeat(70_000)}`);
    const reply = lastReply(await turnsEnded(id, 1));
    expect(reply).toMatch(
      /^Failed: The call to chart could not be delivered: its arguments take \d+ bytes, more than the 65536 bytes its worker accepts/,
    );
    expect(socket.frames.filter((f) => f.type === "hosted.call")).toHaveLength(0);
    expect(socket.open).toBe(true);
  });
});
