import type { AgentFileInput } from "@patchbay/server";
import { Tools as ServerTools } from "@patchbay/tools";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, PAY_RULE, startDispatchHarness } from "../fixtures/dispatch-harness";
import { SqliteIdempotencyStore } from "../fixtures/sqlite-idempotency-store";
import { backendClient, closeAllClients } from "./helpers/clients";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

const agents: Record<string, AgentFileInput> = {
  support: {
    model: {
      provider: "scripted",
      rules: [PAY_RULE],
    },
  },
};

let harness: DispatchHarness | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
  await harness?.close();
  harness = undefined;
});

describe("Dispatch.host({ idempotencyStore })", () => {
  it("answers a call redelivered to a second worker from the store the first one wrote", async () => {
    harness = await startDispatchHarness(agents);
    const first = await harness.worker({
      id: "w1",
      capacity: 1,
      hostTools: true,
      sharedStore: true,
      exitAfterStore: true,
    });
    const client = backendClient(harness);
    const session = await client.agent("support").sessions.create({ userId: "u_1" });
    const reply = session.responses.create("pay 5");
    // w1 ran the tool, stored its result, and died before it could answer.
    expect(await first.exited).toBe(0);
    await harness.worker({ id: "w2", capacity: 1, hostTools: true, sharedStore: true });
    const result = await reply;
    expect(result.text).toBe("Done: payment of 5 recorded by w1, answered by w1");
    const deliveries = harness.db.prepare("SELECT worker, attempt FROM deliveries").all();
    expect(deliveries).toEqual([{ worker: "w1", attempt: 1 }]);
    const call = session.conversation.find((item) => item.type === "tool_call");
    expect(call).toMatchObject({ status: "completed", attempt: 2 });
  });
});

describe("createServer({ idempotencyStore })", () => {
  it("keeps in-process tools' results in the store passed, and refuses one without get/set", async () => {
    const db = new Database(":memory:");
    const store = new SqliteIdempotencyStore(db);
    const runs: string[] = [];
    server = await startTestServer({
      idempotencyStore: store,
      agents: {
        a: scriptedAgent([
          { match: "tick", toolCalls: [{ tool: "tick", arguments: {} }], reply: "{result}" },
        ]),
      },
      tools: new ServerTools().register({
        name: "tick",
        description: "Tick",
        run: () => {
          runs.push("tick");
          return "tock";
        },
      }),
    });
    const session = await backendClient(server).agent("a").sessions.create({ userId: "u_1" });
    expect((await session.responses.create("tick")).text).toBe("tock");
    const call = session.conversation.find((item) => item.type === "tool_call")!;
    expect(store.get(`${session.id}:${call.id}`)).toMatchObject({
      outcome: "completed",
      content: { text: "tock" },
    });
    expect(runs).toEqual(["tick"]);
    db.close();
    await expect(startTestServer({ idempotencyStore: { get: () => undefined } as never })).rejects.toThrow(
      /idempotencyStore: expected an IdempotencyStore/,
    );
  });
});
