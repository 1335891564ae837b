// #22: a tool registered on a worker after `run()` is offered to the model (the worker sends
// `worker.hosts`), not silently left out. Real server, real worker process, real client.
import { Client } from "@patchbay/client";
import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { API_KEY, type DispatchHarness, SECRET, startDispatchHarness } from "../fixtures/dispatch-harness";

const agents: Record<string, AgentFileInput> = {
  support: {
    model: {
      provider: "scripted",
      rules: [
        {
          match: "late",
          toolCalls: [{ tool: "late_lookup", arguments: {} }],
          reply: "Got: {result}",
          errorReply: "Failed: {result}",
        },
      ],
    },
  },
};

let harness: DispatchHarness | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await harness?.close();
  harness = undefined;
});

describe("a tool registered on a worker after run()", () => {
  it("is offered to the model and runs on that worker (one that only hosts tools, no capacity)", async () => {
    harness = await startDispatchHarness(agents);
    const worker = await harness.worker({ id: "w1", hostTools: true, lateTool: true });
    await worker.waitFor("late.registered");
    const client = new Client({
      baseUrl: harness.server.url,
      apiKey: API_KEY,
      secret: SECRET,
      requestTimeoutMs: 5_000,
    });
    clients.push(client);
    const session = await client.agent("support").sessions.create({ userId: "u_1" });
    // The frame and the message race on two sockets: ask until the server has read it (bounded).
    let text = "";
    for (let i = 0; i < 20 && !text.startsWith("Got"); i++) {
      text = (await session.responses.create("late")).text;
      if (!text.startsWith("Got")) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(text).toBe("Got: found late");
    expect((await worker.waitFor("hosted.finished")).outcome).toBe("completed");
  });
});
