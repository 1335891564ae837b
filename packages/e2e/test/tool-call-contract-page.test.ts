// The tool-call contract of issue 12 for page tools (a session client with tools, over a real
// socket, through a loopback proxy where latency matters) and in-process tools.
import { Client, type Session, Tools } from "@patchbay/client";
import type { ToolCallItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { DelayProxy } from "../fixtures/delay-proxy";
import { eventually } from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients } from "./helpers/clients";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
const proxies: DelayProxy[] = [];
const extraClients: Client[] = [];
afterEach(async () => {
  closeAllClients();
  for (const client of extraClients.splice(0)) client.close();
  for (const proxy of proxies.splice(0)) await proxy.close();
  await server?.close();
  server = undefined;
});

const agent = scriptedAgent([
  {
    match: "change",
    toolCalls: [{ tool: "held_change", arguments: {} }],
    reply: "{result}",
    errorReply: "{result}",
  },
  { match: "book", toolCalls: [{ tool: "book", arguments: {} }], reply: "{result}", errorReply: "{result}" },
  { match: "look", toolCalls: [{ tool: "look", arguments: {} }], reply: "{result}", errorReply: "{result}" },
]);

const sleepOrAbort = (ms: number, signal: AbortSignal) =>
  new Promise<"slept" | "aborted">((resolve) => {
    if (signal.aborted) return resolve("aborted");
    const timer = setTimeout(() => resolve("slept"), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve("aborted");
    });
  });

/** `held_change`: holds, then waits on the held signal for 2.5 s; records how it ended. */
function heldChange(record: Array<{ how: string; elapsedMs: number }>): Tools {
  return new Tools().register({
    name: "held_change",
    description: "Makes a change that must not be left half done",
    interruptible: true,
    timeoutMs: 700,
    run: async (_args, _signal, ctx) => {
      const started = Date.now();
      const held = await ctx.disallowInterruptions();
      const how = await sleepOrAbort(2_500, held);
      record.push({ how, elapsedMs: Date.now() - started });
      return "changed";
    },
  });
}

function toolCall(s: Session, name: string): ToolCallItem | undefined {
  return s.conversation.find((i): i is ToolCallItem => i.type === "tool_call" && i.name === name);
}

describe("a held call that times out (finding 1)", () => {
  it("in a page: the held signal aborts at the timeout and the model is told once", async () => {
    server = await startTestServer({ agents: { a: agent } });
    const record: Array<{ how: string; elapsedMs: number }> = [];
    const s = await backendClient(server)
      .agent("a")
      .sessions.create({ userId: "u_1", tools: heldChange(record) });
    const reply = await s.responses.create("change");
    await eventually(
      () => record.length,
      (n) => n === 1,
    );
    expect(record[0]!.how).toBe("aborted");
    expect(record[0]!.elapsedMs).toBeLessThan(1_500);
    expect(reply.text).toBe('The call of "held_change" timed out after 700 ms.');
    expect(toolCall(s, "held_change")).toMatchObject({ status: "timed_out", held: true });
  });

  it("in the server process: the same, with the same words", async () => {
    const record: Array<{ how: string; elapsedMs: number }> = [];
    server = await startTestServer({ agents: { a: agent }, tools: heldChange(record) });
    const s = await backendClient(server).agent("a").sessions.create({ userId: "u_1" });
    const reply = await s.responses.create("change");
    await eventually(
      () => record.length,
      (n) => n === 1,
    );
    expect(record[0]!.how).toBe("aborted");
    expect(record[0]!.elapsedMs).toBeLessThan(1_500);
    expect(reply.text).toBe('The call of "held_change" timed out after 700 ms.');
  });
});

describe("hold versus interrupt from a page over a slow link (finding 2)", () => {
  it("books if and only if the model was told it booked, with 30 ms each way", async () => {
    server = await startTestServer({ agents: { a: agent } });
    const proxy = await DelayProxy.start(server.url, { up: 30, down: 30 });
    proxies.push(proxy);
    const booked = new Set<string>();
    const tools = new Tools().register({
      name: "book",
      description: "Books the flight",
      interruptible: true,
      run: async (_args, signal, ctx) => {
        await sleepOrAbort(80, signal);
        signal.throwIfAborted();
        await ctx.disallowInterruptions();
        booked.add(ctx.id);
        return "Booked.";
      },
    });
    const client = new Client({
      baseUrl: proxy.url,
      apiKey: server.apiKey,
      secret: server.secret,
      requestTimeoutMs: 5_000,
    });
    extraClients.push(client);
    const told: Array<{ offset: number; booked: boolean; outcome: string | undefined }> = [];
    // The last comes long after the hold was accepted, so both outcomes occur even under load.
    for (const offset of [0, 15, 30, 45, 60, 75, 90, 120, 160, 1_500]) {
      const s = await client.agent("a").sessions.create({ userId: "u_1", tools });
      const reply = s.responses.create("book");
      await eventually(
        () => toolCall(s, "book")?.status,
        (status) => status === "running",
        5_000,
      );
      await new Promise((resolve) => setTimeout(resolve, offset));
      await s.interrupt();
      await reply.catch(() => undefined);
      const item = await eventually(
        () => toolCall(s, "book"),
        (i) => i !== undefined && !["pending", "running"].includes(i.status),
        10_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
      told.push({ offset, booked: booked.has(item!.id), outcome: item!.result?.outcome });
    }
    for (const trial of told) expect(trial.booked, JSON.stringify(trial)).toBe(trial.outcome === "completed");
    expect(told.some((t) => t.booked)).toBe(true);
    expect(told.some((t) => !t.booked)).toBe(true);
  }, 60_000);
});

describe("attempts after a page reload (finding 5)", () => {
  it("runs the call the server delivers again as attempt 2, and ctx.attempt says so", async () => {
    server = await startTestServer({ agents: { a: agent } });
    const attempts: number[] = [];
    const hanging = new Tools().register({
      name: "look",
      description: "Looks",
      run: (_args, signal, ctx) => {
        attempts.push(ctx.attempt);
        return new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => reject(signal.reason)),
        );
      },
    });
    const first = new Client({ baseUrl: server.url, apiKey: server.apiKey, secret: server.secret });
    extraClients.push(first);
    const s1 = await first.agent("a").sessions.create({ userId: "u_1", tools: hanging });
    void s1.responses.create("look").catch(() => undefined);
    await eventually(
      () => attempts.length,
      (n) => n === 1,
    );
    first.close(); // the page reloads
    const answering = new Tools().register({
      name: "look",
      description: "Looks",
      run: async (_args, _signal, ctx) => {
        attempts.push(ctx.attempt);
        return `seen on attempt ${ctx.attempt}`;
      },
    });
    const second = new Client({ baseUrl: server.url, apiKey: server.apiKey, secret: server.secret });
    extraClients.push(second);
    const s2 = await second.agent("a").sessions.resume(s1.id, { tools: answering });
    const item = await eventually(
      () => toolCall(s2, "look"),
      (i) => i?.status === "completed",
      5_000,
    );
    expect(attempts).toEqual([1, 2]);
    expect(item).toMatchObject({ attempt: 2, result: { content: { text: "seen on attempt 2" } } });
  });
});
