// docs/production.md, the server README and docs/protocol.md promise that a graceful shutdown
// gives calls that survive interrupts (not interruptible, or held) the shutdown grace, wherever
// they run: a worker process or the user's page. Real server, worker process and clients.
import { type Session, Tools } from "@patchbay/client";
import type { ToolCallItem } from "@patchbay/protocol";
import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, PAY_RULE, startDispatchHarness } from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients, nextEvent, userClient } from "./helpers/clients";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let harness: DispatchHarness | undefined;
let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await harness?.close();
  harness = undefined;
  await server?.close();
  server = undefined;
});

const workerAgents: Record<string, AgentFileInput> = {
  support: scriptedAgent([
    PAY_RULE,
    {
      match: "transfer (?<amount>\\d+)",
      toolCalls: [{ tool: "held_transfer", arguments: { amount: "{amount:integer}" } }],
      reply: "Done: {result}",
      errorReply: "Transfer failed: {result}",
    },
  ]),
};

/** The call's final item, as an attached client sees it. */
function finalCall(session: Session, name: string): Promise<ToolCallItem> {
  return nextEvent(
    session,
    "toolCall",
    (item) => item.name === name && !["pending", "running", "awaiting_approval"].includes(item.status),
    15_000,
  ).then(([item]) => item);
}

async function backendSession(): Promise<Session> {
  const client = backendClient(harness!);
  return client.agent("support").sessions.create({ userId: "u_1" });
}

describe("graceful shutdown with worker calls running", () => {
  it("waits for a non-interruptible call and records the worker's real result", async () => {
    harness = await startDispatchHarness(workerAgents, { shutdownGraceMs: 5_000 });
    const worker = await harness.worker({ id: "w1", capacity: 2, hostTools: true, toolDelayMs: 600 });
    const session = await backendSession();
    const ended = finalCall(session, "record_payment");
    void session.responses.create("pay 5").catch(() => {});
    await worker.waitFor("effect");
    const closing = harness.server.close();
    const item = await ended;
    await closing;
    expect(item.status).toBe("completed");
    expect(item.result?.content?.text).toBe("payment of 5 recorded by w1, answered by w1");
  });

  it("waits for a held call and records its result with held: true", async () => {
    harness = await startDispatchHarness(workerAgents, { shutdownGraceMs: 5_000 });
    const worker = await harness.worker({ id: "w1", capacity: 2, hostTools: true, toolDelayMs: 600 });
    const session = await backendSession();
    const held = nextEvent(session, "held");
    const ended = finalCall(session, "held_transfer");
    void session.responses.create("transfer 7").catch(() => {});
    await worker.waitFor("effect");
    await held;
    const closing = harness.server.close();
    const item = await ended;
    await closing;
    expect(item).toMatchObject({ status: "completed", held: true });
    expect(item.result).toMatchObject({ outcome: "completed", held: true });
    expect(item.result?.content?.text).toBe("transfer of 7 sent by w1");
  });

  it("ends a call still running when the grace is over as cancelled, held: true where held", async () => {
    harness = await startDispatchHarness(workerAgents, { shutdownGraceMs: 300 });
    const worker = await harness.worker({ id: "w1", capacity: 2, hostTools: true, toolDelayMs: 5_000 });
    const session = await backendSession();
    const held = nextEvent(session, "held");
    const ended = finalCall(session, "held_transfer");
    void session.responses.create("transfer 9").catch(() => {});
    await worker.waitFor("effect");
    await held;
    const started = Date.now();
    const closing = harness.server.close();
    const item = await ended;
    await closing;
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(item).toMatchObject({ status: "cancelled", held: true, result: { held: true } });
    expect(item.result?.content?.text).toMatch(/may have completed/);
  });
});

describe("graceful shutdown with page calls", () => {
  it("waits for a held page call, and withdraws a call awaiting approval as a shutdown, not an interrupt", async () => {
    server = await startTestServer({
      shutdownGraceMs: 5_000,
      agents: {
        travel: scriptedAgent([
          {
            match: "pay",
            toolCalls: [{ tool: "pay", arguments: {} }],
            reply: "Done: {result}",
            errorReply: "Failed: {result}",
          },
          {
            match: "book",
            toolCalls: [{ tool: "book", arguments: {} }],
            reply: "Done: {result}",
            errorReply: "Failed: {result}",
          },
        ]),
      },
    });
    const runs: string[] = [];
    const tools = new Tools()
      .register({
        name: "pay",
        description: "Pay",
        interruptible: true,
        run: async (_args, _signal, ctx) => {
          await ctx.disallowInterruptions();
          runs.push("pay");
          await new Promise((resolve) => setTimeout(resolve, 500));
          return "paid";
        },
      })
      .register({ name: "book", description: "Book", approval: { title: "Book?" }, run: () => "booked" });
    const payer = await userClient(server, "u_1");
    const paying = await payer.agent("travel").sessions.create({ tools });
    const booker = await userClient(server, "u_2");
    const booking = await booker.agent("travel").sessions.create({ tools });
    const held = nextEvent(paying, "held");
    const paid = finalCall(paying, "pay");
    void paying.responses.create("pay").catch(() => {});
    const asked = nextEvent(booking, "approval");
    const withdrawn = finalCall(booking, "book");
    void booking.responses.create("book").catch(() => {});
    await held;
    await asked;
    const closing = server.server.close();
    const [payItem, bookItem] = await Promise.all([paid, withdrawn]);
    await closing;
    expect(payItem).toMatchObject({ status: "completed", held: true, result: { content: { text: "paid" } } });
    expect(runs).toEqual(["pay"]);
    expect(bookItem.status).toBe("withdrawn");
    expect(bookItem.result?.content?.text).not.toMatch(/user interrupted/);
    expect(bookItem.result?.content?.text).toMatch(/shut|closed/);
  });
});
