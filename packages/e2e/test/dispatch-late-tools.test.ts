import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, startDispatchHarness } from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients } from "./helpers/clients";

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
afterEach(async () => {
  closeAllClients();
  await harness?.close();
  harness = undefined;
});

describe("a tool registered on a worker after run()", () => {
  it("is offered to the model and runs on that worker (one that only hosts tools, no capacity)", async () => {
    harness = await startDispatchHarness(agents);
    const worker = await harness.worker({ id: "w1", hostTools: true, lateTool: true });
    await worker.waitFor("late.registered");
    const client = backendClient(harness);
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
