import { type Client, type ConnectionState, ToolOutput, Tools } from "@patchbay/client";
import { scripted } from "@patchbay/models";
import { MAX_IMAGE_BYTES } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, startDispatchHarness } from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients, userClient } from "./helpers/clients";
import { recording } from "./helpers/recording-model";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

// An image that passes the 5 MB check reaches the model from a page and from a worker process,
// not only from the server's own tools; a result too large for one frame fails its call once,
// with no disconnect and no second delivery.

const rules = [
  {
    match: "^chart (?<bytes>\\d+) x(?<count>\\d+)$",
    toolCalls: [{ tool: "chart", arguments: { bytes: "{bytes:integer}", count: "{count:integer}" } }],
    reply: "Here: {result}",
    errorReply: "Failed: {result}",
  },
];

/** `bytes` bytes that start like a PNG (the image check reads the signature, not the pixels). */
function pngOf(bytes: number): Uint8Array {
  const data = new Uint8Array(bytes).fill(7);
  data.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return data;
}

const base64Of = (bytes: number) => Buffer.from(pngOf(bytes)).toString("base64");

/** Every connection state a client passed through, to see that nothing dropped. */
function states(client: Client): ConnectionState[] {
  const seen: ConnectionState[] = [];
  client.on("state", (state) => seen.push(state));
  return seen;
}

let server: TestServer | undefined;
let harness: DispatchHarness | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
  await harness?.close();
  harness = undefined;
});

describe("images from a page tool", () => {
  it("reach the model up to the 5 MB limit; a result too large fails its call once", async () => {
    const model = recording(scripted({ rules }));
    server = await startTestServer({ agents: { charts: scriptedAgent(rules) }, createModel: () => model });
    const client = await userClient(server, "u_1");
    const seen = states(client);
    let runs = 0;
    const tools = new Tools().register<{ bytes: number; count: number }>({
      name: "chart",
      description: "Draw charts",
      parameters: {
        type: "object",
        properties: { bytes: { type: "integer" }, count: { type: "integer" } },
        required: ["bytes", "count"],
      },
      run: ({ bytes, count }) => {
        runs++;
        return new ToolOutput({
          text: `${count} chart(s) of ${bytes} bytes`,
          images: Array.from({ length: count }, () => pngOf(bytes)),
        });
      },
    });
    const session = await client.agent("charts").sessions.create({ tools });

    for (const bytes of [4_000_000, MAX_IMAGE_BYTES]) {
      const reply = await session.responses.create(`chart ${bytes} x1`);
      expect(reply.text).toBe(`Here: 1 chart(s) of ${bytes} bytes`);
      const tool = model.requests.at(-1)!.messages.findLast((m) => m.role === "tool");
      expect(tool).toMatchObject({ isError: false, content: { images: [{ mimeType: "image/png" }] } });
      const image = (tool as { content: { images: Array<{ data: string }> } }).content.images[0]!;
      expect(image.data === base64Of(bytes)).toBe(true);
    }

    // Two images of 3.5 MB: each passes the check, together they are over one result frame.
    const reply = await session.responses.create("chart 3500000 x2");
    expect(reply.text).toMatch(/^Failed: The tool's result was \d+ bytes, over the limit of 8388608 bytes/);
    const call = session.conversation.findLast((item) => item.type === "tool_call");
    expect(call).toMatchObject({
      status: "failed",
      attempt: 1,
      result: { error: { code: "result_too_large" } },
    });
    expect(runs).toBe(3);
    expect(seen.filter((state) => state === "reconnecting")).toEqual([]);
  });
});

describe("images from a hosted tool on a worker process", () => {
  it("reach the model up to the 5 MB limit; a result too large fails its call once", async () => {
    const model = recording(scripted({ rules }));
    // Heartbeats of 2 s: building and parsing frames of 7 MB on a loaded machine can take longer
    // than the harness's usual 250 ms (two missed intervals drop a socket).
    harness = await startDispatchHarness(
      { charts: scriptedAgent(rules) },
      { createModel: () => model, heartbeatIntervalMs: 2_000 },
    );
    const worker = await harness.worker({ id: "w_images", capacity: 1, imageTools: true });
    const backend = backendClient(harness, 10_000);
    try {
      const session = await backend.agent("charts").sessions.create({ userId: "u_1" });
      for (const bytes of [4_000_000, MAX_IMAGE_BYTES]) {
        const reply = await session.responses.create(`chart ${bytes} x1`);
        expect(reply.text).toBe(`Here: 1 chart(s) of ${bytes} bytes`);
        const tool = model.requests.at(-1)!.messages.findLast((m) => m.role === "tool");
        const image = (tool as { content: { images: Array<{ data: string }> } }).content.images[0]!;
        expect(image.data === base64Of(bytes)).toBe(true);
      }
      // The next call's hosted.call carries a conversation with two 5 MB images: it still
      // reaches the worker (16 MiB accepted), and a result over one frame fails once.
      const reply = await session.responses.create("chart 3500000 x2");
      expect(reply.text).toMatch(/^Failed: The tool's result was \d+ bytes, over the limit of 8388608 bytes/);
      const charts = worker.events.filter((e) => e.event === "chart");
      expect(charts.map((e) => e.attempt)).toEqual([1, 1, 1]);
      expect(worker.events.filter((e) => e.event === "disconnected")).toEqual([]);
      expect(worker.events.filter((e) => e.event === "ready")).toHaveLength(1);
    } finally {
      backend.close();
    }
  }, 30_000);
});
