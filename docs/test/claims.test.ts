// What the documentation claims, checked against a real server on 127.0.0.1 (the scripted model
// stands in for a language model). Each test names the file and the heading it holds to; a test
// that fails means the code or that sentence changed, and the two must agree again.
//
// Claims already held by tests elsewhere are not repeated here: frames over the limit on
// /v1/client (packages/e2e/test/server-bad-input.test.ts), binary frames on /v1/client (same
// file), a channel handler on a worker of capacity 1 (packages/e2e/test/dispatch-routing.test.ts),
// what a restart ends (packages/server/src/recovery.test.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, type Session, type ToolCallItem } from "@patchbay/client";
import { Dispatch, DispatchError } from "@patchbay/dispatch";
import { type LanguageModel, ModelError, type ScriptedRule } from "@patchbay/models";
import { type CreateServerOptions, createServer, type PatchbayServer, silentLogger } from "@patchbay/server";
import { ToolOutput, Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";

const apiKey = "pk_docs_claims";
const secret = "docs-claims-secret-0123456789abcdef-0123456789";
// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function start(options: Partial<CreateServerOptions>): Promise<PatchbayServer> {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-claims-"));
  const server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: join(dir, "data"),
    apiKey,
    secret,
    logger: silentLogger,
    env: {},
    shutdownGraceMs: 2_000,
    ...options,
  });
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  cleanup.push(() => server.close());
  return server;
}

function backend(server: PatchbayServer): Client {
  const client = new Client({ baseUrl: server.url, apiKey, secret });
  cleanup.push(() => client.close());
  return client;
}

async function session(server: PatchbayServer, agent = "support"): Promise<Session> {
  return backend(server).agent(agent).sessions.create({ userId: "u_claims" });
}

function toolCall(s: Session, name: string): ToolCallItem | undefined {
  return s.conversation.find((item): item is ToolCallItem => item.type === "tool_call" && item.name === name);
}

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const scripted = (rules: ScriptedRule[], extra: { capabilities?: { images: boolean } } = {}) => ({
  instructions: "Help.",
  model: { provider: "scripted" as const, rules, ...extra },
});

describe("docs/protocol.md", () => {
  it("Errors: a failed model ends the reply with the model error's code (never model_error) and a neutral sentence", async () => {
    const failing: LanguageModel = {
      provider: "test",
      modelId: "down",
      capabilities: { images: false, parallelToolCalls: true },
      // biome-ignore lint/correctness/useYield: a model that fails before its first event
      async *stream() {
        throw new ModelError("unavailable", "upstream said 503 with secret account details");
      },
    };
    const server = await start({ agents: { support: scripted([]) }, createModel: () => failing });
    const s = await session(server);
    const failed = new Promise<{ code: string; message: string }>((resolve) =>
      s.on("responseFailed", (event) => resolve(event.error)),
    );
    await expect(s.responses.create("hello")).rejects.toMatchObject({ wireCode: "unavailable" });
    const error = await failed;
    expect(error.code).toBe("unavailable");
    expect(error.message).toMatch(
      /^The assistant is not available right now\. Please try again later\. \(reference err_/,
    );
    expect(error.message).not.toContain("secret account");
  });

  it("The HTTP API: a body over the limit is refused with 413 payload_too_large", async () => {
    const server = await start({ agents: { support: scripted([]) }, http: { maxBodyBytes: 1_024 } });
    const response = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers: { "x-api-key": apiKey, authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ userId: "u_claims", metadata: { note: "x".repeat(4_096) } }),
    });
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
  });

  it("Errors: an image for a text-only model is not refused (unsupported_content); the model reads a note instead", async () => {
    const server = await start({
      agents: {
        support: scripted(
          [{ match: "image omitted: this model reads text only", reply: "I got a note, not the image." }],
          {
            capabilities: { images: false },
          },
        ),
      },
    });
    const s = await session(server);
    const reply = await s.responses.create("What is on this picture?", {
      images: [{ type: "image", mimeType: "image/png", data: PNG }],
    });
    expect(reply.text).toBe("I got a note, not the image.");
  });

  it("Server events: response.thinking is sent only for a message that went to a worker (reason dispatch)", async () => {
    const server = await start({
      agents: {
        support: scripted([{ match: ".", reply: "Straight from the model." }]),
        desk: { ...scripted([{ match: ".", reply: "After the worker." }]), dispatch: { text: "enabled" } },
      },
    });
    const client = backend(server);
    const plain = await client.agent("support").sessions.create({ userId: "u_claims" });
    const thinking: string[] = [];
    plain.on("thinking", (event) => thinking.push(event.reason));
    expect((await plain.responses.create("hi")).text).toBe("Straight from the model.");
    expect(thinking).toEqual([]);

    // A user's message to an agent that leaves text to a worker: thinking, reason dispatch.
    const dispatch = new Dispatch({ capacity: 1, url: server.url, apiKey, secret, logger: false });
    dispatch.onMessage((message) => dispatch.answer(message));
    const running = dispatch.run();
    cleanup.push(async () => {
      await dispatch.stop({ timeoutMs: 1_000 });
      await running;
    });
    await new Promise((resolve) => dispatch.once("ready", resolve));
    const token = await client.createUserToken("u_page", { expiresIn: "5m" });
    const page = new Client({ baseUrl: server.url });
    page.setUser({ id: "u_page" }, token);
    cleanup.push(() => page.close());
    const dispatched = await page.agent("desk").sessions.create();
    dispatched.on("thinking", (event) => thinking.push(event.reason));
    expect((await dispatched.responses.create("hi")).text).toBe("After the worker.");
    expect(thinking).toEqual(["dispatch"]);
  });
});

describe("docs/production.md", () => {
  it("Shutting down: the listener closes first, so /readyz is refused (not 503) while a held call gets its grace", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = false;
    const tools = new Tools().register({
      name: "book_flight",
      description: "Book",
      parameters: z.object({}),
      interruptible: true,
      run: async (_args, _signal, ctx) => {
        await ctx.disallowInterruptions();
        holding = true;
        await held;
        return "booked";
      },
    });
    const server = await start({
      agents: { support: scripted([{ match: "book", toolCalls: [{ tool: "book_flight", arguments: {} }] }]) },
      tools,
    });
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    const s = await session(server);
    void s.responses.create("book it").catch(() => {});
    await until(() => holding, "the held call");
    const closing = server.close();
    await expect(fetch(`${server.url}/readyz`)).rejects.toThrow();
    release();
    await closing;
  });
});

describe("docs/guides/images.md", () => {
  const seatMap = new Tools().register({
    name: "seat_map",
    description: "Seat map",
    parameters: z.object({}),
    run: () =>
      new ToolOutput({
        text: "Seat map of LH400",
        images: [{ data: Buffer.from(PNG, "base64"), mimeType: "image/png" }],
      }),
  });
  const rules = [{ match: "seats", toolCalls: [{ tool: "seat_map", arguments: {} }], reply: "{result}" }];

  it("Who sees the image: the scripted model reads images unless its config says images: false", async () => {
    const server = await start({
      agents: { support: scripted(rules), textonly: scripted(rules, { capabilities: { images: false } }) },
      tools: seatMap,
    });
    const client = backend(server);
    const reads = await client.agent("support").sessions.create({ userId: "u_claims" });
    expect((await reads.responses.create("seats?")).text).toBe("Seat map of LH400");
    const textOnly = await client.agent("textonly").sessions.create({ userId: "u_claims" });
    expect((await textOnly.responses.create("seats?")).text).toMatch(
      /^The tool "seat_map" failed: its result contains 1 image, and this model reads text only/,
    );
  });
});

describe("docs/guides/interruptions.md", () => {
  it("Interrupting: a running interruptible worker call ends cancelled and the model reads the documented sentence", async () => {
    const server = await start({
      agents: {
        support: scripted([
          { match: "search", toolCalls: [{ tool: "search_flights", arguments: { destination: "Lisbon" } }] },
        ]),
      },
    });
    const client = backend(server);
    const agent = client.agent("support");
    let started = false;
    agent.tools.register({
      name: "search_flights",
      description: "Search for flights",
      parameters: z.object({ destination: z.string() }),
      interruptible: true,
      run: (_args, signal) =>
        new Promise<string>((_resolve, reject) => {
          started = true;
          signal.addEventListener("abort", () => reject(signal.reason));
        }),
    });
    const dispatch = new Dispatch({ capacity: 1, url: server.url, apiKey, secret, logger: false });
    dispatch.host(agent);
    const running = dispatch.run();
    cleanup.push(async () => {
      await dispatch.stop({ timeoutMs: 1_000 });
      await running;
    });
    await new Promise((resolve) => dispatch.once("ready", resolve));
    const s = await agent.sessions.create({ userId: "u_claims" });
    const reply = s.responses.create("search Lisbon");
    await until(() => started && toolCall(s, "search_flights")?.status === "running", "the running call");
    await s.interrupt();
    expect((await reply).reason).toBe("interrupted");
    await until(() => toolCall(s, "search_flights")?.status === "cancelled", "the cancelled call");
    expect(toolCall(s, "search_flights")?.result?.content.text).toBe(
      'The call of "search_flights" was cancelled: the user interrupted.',
    );
  });
});

describe("docs/guides/approval.md", () => {
  it("What the model is told: a declined call never runs and the model reads the documented sentence", async () => {
    let runs = 0;
    const tools = new Tools().register({
      name: "book_flight",
      description: "Book",
      parameters: z.object({ flight_id: z.string() }),
      approval: { title: "Book {flight_id}?" },
      run: () => {
        runs += 1;
        return "booked";
      },
    });
    const server = await start({
      agents: {
        support: scripted([
          { match: "book", toolCalls: [{ tool: "book_flight", arguments: { flight_id: "LH400" } }] },
        ]),
      },
      tools,
    });
    const s = await session(server);
    s.on("approval", (request) => void s.decide(request.id, { allowed: false }));
    await s.responses.create("book LH400");
    const call = toolCall(s, "book_flight");
    expect(call?.status).toBe("declined");
    expect(call?.result?.content.text).toBe('The user declined the call of "book_flight"; it did not run.');
    expect(runs).toBe(0);
  });

  it("the table: a placeholder that names no argument is refused when the tool is registered", () => {
    expect(() =>
      new Tools().register({
        name: "book_flight",
        description: "Book",
        parameters: z.object({ flight_id: z.string() }),
        approval: { title: "Book {flight}?" },
        run: () => "booked",
      }),
    ).toThrow(/flight/);
  });
});

describe("docs/guides/capacity.md and docs/guides/dispatch-workers.md", () => {
  it("capacity must be a positive integer (invalid_capacity); run() with nothing to do is nothing_to_run; hosting after run() is already_running", async () => {
    const server = await start({ agents: { support: scripted([]) } });
    const options = { url: server.url, apiKey, secret, logger: false as const };
    expect(() => new Dispatch({ capacity: 0, ...options })).toThrow(
      expect.objectContaining({ code: "invalid_capacity" }),
    );
    const idle = new Dispatch({ capacity: 1, ...options });
    await expect(idle.run()).rejects.toMatchObject({ code: "nothing_to_run" });
    const client = backend(server);
    const worker = new Dispatch({ capacity: 1, ...options });
    worker.onMessage(() => {});
    const running = worker.run();
    cleanup.push(async () => {
      await worker.stop({ timeoutMs: 1_000 });
      await running;
    });
    let error: unknown;
    try {
      worker.host(client.agent("support"));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DispatchError);
    expect((error as DispatchError).code).toBe("already_running");
  });
});

describe("packages/tools/README.md", () => {
  const parameters = z.object({ seats: z.number().int().max(9, "at most 9 seats") });
  const rules = [{ match: "book", toolCalls: [{ tool: "book_flight", arguments: { seats: 12 } }] }];

  it("What the executor guarantees: a message the schema's author wrote is kept for a tool in the server process", async () => {
    const tools = new Tools().register({
      name: "book_flight",
      description: "Book",
      parameters,
      run: () => "booked",
    });
    const server = await start({ agents: { support: scripted(rules) }, tools });
    const s = await session(server);
    await s.responses.create("book");
    expect(toolCall(s, "book_flight")?.result?.content.text).toBe(
      'The arguments for "book_flight" do not fit its schema:\nseats: at most 9 seats',
    );
  });

  it("What the executor guarantees: a worker's (or page's) tool is checked by the server against its JSON Schema, in the standard wording", async () => {
    const server = await start({ agents: { support: scripted(rules) } });
    const client = backend(server);
    const agent = client.agent("support");
    let runs = 0;
    agent.tools.register({
      name: "book_flight",
      description: "Book",
      parameters,
      run: () => {
        runs += 1;
        return "booked";
      },
    });
    const dispatch = new Dispatch({ capacity: 1, url: server.url, apiKey, secret, logger: false });
    dispatch.host(agent);
    const running = dispatch.run();
    cleanup.push(async () => {
      await dispatch.stop({ timeoutMs: 1_000 });
      await running;
    });
    await new Promise((resolve) => dispatch.once("ready", resolve));
    const s = await agent.sessions.create({ userId: "u_claims" });
    await s.responses.create("book");
    expect(toolCall(s, "book_flight")?.result?.content.text).toBe(
      'The arguments for "book_flight" do not fit its schema:\nseats: Input should be less than or equal to 9',
    );
    expect(runs).toBe(0);
  });
});

describe("docs/guides/timeouts-and-concurrency.md", () => {
  it("Timeouts: a call past its timeoutMs ends timed_out, its signal aborts, and the model reads the documented sentence", async () => {
    let aborted = false;
    const tools = new Tools().register({
      name: "book_flight",
      description: "Book",
      parameters: z.object({}),
      timeoutMs: 300,
      run: (_args, signal) =>
        new Promise<string>(() => {
          signal.addEventListener("abort", () => {
            aborted = true;
          });
        }),
    });
    const server = await start({
      agents: { support: scripted([{ match: "book", toolCalls: [{ tool: "book_flight", arguments: {} }] }]) },
      tools,
    });
    const s = await session(server);
    await s.responses.create("book");
    const call = toolCall(s, "book_flight");
    expect(call?.status).toBe("timed_out");
    expect(call?.result?.content.text).toBe('The call of "book_flight" timed out after 300 ms.');
    expect(aborted).toBe(true);
  });

  it("Concurrency: up to 16 calls of a session run at once, and a tool's concurrency caps it lower", async () => {
    let running = 0;
    const peak = { lookup: 0, book: 0 };
    const counted = (key: keyof typeof peak) => async () => {
      running += 1;
      peak[key] = Math.max(peak[key], running);
      await new Promise((resolve) => setTimeout(resolve, 500));
      running -= 1;
      return "ok";
    };
    const tools = new Tools()
      .register({
        name: "lookup",
        description: "Look up",
        parameters: z.object({ n: z.number() }),
        run: counted("lookup"),
      })
      .register({
        name: "book",
        description: "Book",
        parameters: z.object({ n: z.number() }),
        concurrency: 1,
        run: counted("book"),
      });
    const calls = (tool: string, count: number) =>
      Array.from({ length: count }, (_, n) => ({ tool, arguments: { n } }));
    const server = await start({
      agents: {
        support: scripted([
          { match: "^look", toolCalls: calls("lookup", 20), reply: "looked" },
          { match: "^book", toolCalls: calls("book", 3), reply: "booked" },
        ]),
      },
      tools,
    });
    const s = await session(server);
    expect((await s.responses.create("look")).text).toBe("looked");
    expect(peak.lookup).toBe(16);
    expect((await s.responses.create("book")).text).toBe("booked");
    expect(peak.book).toBe(1);
  });
});

describe("docs/guides/progress-and-say.md", () => {
  it("Progress: a newer update replaces one not shown yet, and an update just before the result is not shown", async () => {
    const tools = new Tools().register({
      name: "export_report",
      description: "Export",
      parameters: z.object({}),
      run: async (_args, _signal, ctx) => {
        for (const step of ["one", "two", "three"]) ctx.update(step);
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        ctx.update("almost done");
        return "report.csv";
      },
    });
    const server = await start({
      agents: {
        support: scripted([{ match: "export", toolCalls: [{ tool: "export_report", arguments: {} }] }]),
      },
      tools,
    });
    const s = await session(server);
    const shown: string[] = [];
    s.on("progress", ({ text }) => shown.push(text));
    await s.responses.create("export");
    expect(shown).toEqual(["three"]);
    expect(toolCall(s, "export_report")?.result?.content.text).toBe("report.csv");
  });
});
