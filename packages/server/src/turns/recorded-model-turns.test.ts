// Whole turns against a model provider on 127.0.0.1 that replays recorded streams: a refusal is
// shown and recorded as one, and a thinking model's second round carries its signed thinking
// block, so the provider would accept it.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { trace } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { Tools } from "@patchbay/tools";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";

const STREAMS = fileURLToPath(new URL("../../../models/fixtures/streams/", import.meta.url));
const apiKey = "pk_rec";
const secret = "recorded-test-secret";
const backend = {
  "x-api-key": apiKey,
  authorization: `Bearer ${secret}`,
  "content-type": "application/json",
};

/** The payload lines of a recorded stream, framed as the provider sends them. */
function wire(file: string, framing: "anthropic" | "openai"): string {
  const lines = readFileSync(`${STREAMS}${file}`, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
  if (framing === "openai") return `${lines.map((line) => `data: ${line}\n\n`).join("")}data: [DONE]\n\n`;
  return lines
    .map((line) => `event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`)
    .join("");
}

const spans = new InMemorySpanExporter();
beforeAll(() => {
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
  );
});

let provider: Server;
let providerUrl: string;
let bodies: any[];
/** What the provider answers, in order; `null` sends the headers and then nothing. */
let replies: Array<string | null>;
let server: PatchbayServer;
let dir: string;

beforeEach(async () => {
  bodies = [];
  replies = [];
  spans.reset();
  provider = createHttpServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      bodies.push(JSON.parse(Buffer.concat(parts).toString("utf8")));
      const reply = replies.shift();
      if (reply === null) {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.flushHeaders();
        return;
      }
      if (reply === undefined) {
        response
          .writeHead(500, { "content-type": "application/json" })
          .end('{"error":{"message":"no reply"}}');
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream" }).end(reply);
    });
  });
  await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), "patchbay-recorded-"));
});
afterEach(async () => {
  await server.close();
  provider.closeAllConnections();
  await new Promise((resolve) => provider.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

async function start(model: Record<string, unknown>, tools?: Tools): Promise<void> {
  server = await createServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: dir,
    apiKey,
    secret,
    logger: silentLogger,
    // Its tool never ends: a shutdown waits this long for it (calls that survive interrupts get the grace).
    shutdownGraceMs: 200,
    env: { OPENAI_API_KEY: "test", ANTHROPIC_API_KEY: "test" },
    agents: { support: { model: model as never } },
    ...(tools ? { tools } : {}),
  });
}

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: backend,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return text ? JSON.parse(text) : undefined;
}

/** Claude with thinking and a server tool; the provider answers a thinking tool call, then text. */
async function startThinkingToolRound(): Promise<void> {
  const tools = new Tools().register({
    name: "checkSandboxErrors",
    description: "Lists sandbox errors.",
    run: () => "No errors.",
  });
  await start(
    {
      provider: "anthropic",
      model: "claude-sonnet-4-6",
      baseURL: providerUrl,
      maxTokens: 4096,
      thinking: { budget_tokens: 1024 },
    },
    tools,
  );
  replies.push(
    wire("anthropic-thinking-tool-call.derived.chunks.txt", "anthropic"),
    wire("anthropic-message-delta-input-tokens.chunks.txt", "anthropic"),
  );
}

/** Sends a message and waits (bounded) for the turn's end event. */
async function turn(text: string): Promise<{ id: string; events: any[]; end: any }> {
  const { id } = await call("POST", "/v1/agents/support/sessions", { userId: "u_1" });
  await call("POST", `/v1/sessions/${id}/messages`, { commandId: "c_1", text });
  for (let i = 0; i < 200; i++) {
    const { events } = await call("GET", `/v1/sessions/${id}/events?after=0&limit=1000`);
    const end = events.find(
      (e: { type: string }) => e.type === "response.completed" || e.type === "response.failed",
    );
    if (end) return { id, events, end };
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the turn did not end");
}

describe("a turn against recorded provider streams", () => {
  it("shows an OpenAI refusal to the user and records the turn as a refusal", async () => {
    await start({ provider: "openai", model: "gpt-4o", baseURL: `${providerUrl}/v1` });
    replies.push(wire("openai-refusal.derived.chunks.txt", "openai"));
    const { id, events, end } = await turn("Help me with something bad.");
    expect(end).toMatchObject({ type: "response.completed", reason: "refusal" });
    expect(end.text).toBe("I'm sorry, I can't assist with that request.");
    const deltas = events
      .filter((e: { type: string }) => e.type === "text.delta")
      .map((e: { delta: string }) => e.delta);
    expect(deltas.join("")).toBe(end.text);
    const { conversation } = await call("GET", `/v1/sessions/${id}`);
    expect(conversation.at(-1)).toMatchObject({ role: "assistant", text: end.text, status: "completed" });
  });

  it("sends Claude's signed thinking block back in the round that carries the tool result", async () => {
    await startThinkingToolRound();
    const { id, events, end } = await turn("Check the sandbox for errors now.");
    expect(end).toMatchObject({ type: "response.completed", reason: "stop", text: "pong" });
    // The thinking and its signature go back to the provider only, never to clients.
    const { conversation } = await call("GET", `/v1/sessions/${id}`);
    for (const seen of [JSON.stringify(events), JSON.stringify(conversation)]) {
      expect(seen).not.toContain("checkSandboxErrors immediately");
      expect(seen).not.toContain("Eq4CCpIBCBIYAipA");
    }
    expect(bodies).toHaveLength(2);
    const assistant = bodies[1].messages.find((m: { role: string }) => m.role === "assistant");
    expect(assistant.content.map((b: { type: string }) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(assistant.content[0].signature).toMatch(/^Eq4CCpIBCBIYAipA/);
    expect(assistant.content[0].thinking).toBe("The user wants me to call checkSandboxErrors immediately.");
    expect(bodies[1].messages.at(-1).content[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9",
    });
  });

  it("keeps the signed thinking block of a round cut off by a restart and sends it in the next turn", async () => {
    // The tool never finishes on its own: the server goes down while it runs.
    const tools = new Tools().register({
      name: "checkSandboxErrors",
      description: "Lists sandbox errors.",
      run: (_args, signal) =>
        new Promise((_resolve, reject) =>
          signal.addEventListener("abort", () => reject(new Error("stopped"))),
        ),
    });
    const model = {
      provider: "anthropic",
      model: "claude-sonnet-4-6",
      baseURL: providerUrl,
      maxTokens: 4096,
      thinking: { budget_tokens: 1024 },
    };
    await start(model, tools);
    replies.push(wire("anthropic-thinking-tool-call.derived.chunks.txt", "anthropic"));
    const { id } = await call("POST", "/v1/agents/support/sessions", { userId: "u_1" });
    await call("POST", `/v1/sessions/${id}/messages`, {
      commandId: "c_1",
      text: "Check the sandbox for errors now.",
    });
    let running = false;
    for (let i = 0; i < 200 && !running; i++) {
      const { events } = await call("GET", `/v1/sessions/${id}/events?after=0&limit=1000`);
      running = events.some(
        (e: any) =>
          e.type === "conversation.updated" && e.item.type === "tool_call" && e.item.status === "running",
      );
      if (!running) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(running).toBe(true);
    await server.close();

    // A new server on the same data directory: the session resumes from SQLite.
    await start(model, tools);
    replies.push(wire("anthropic-message-delta-input-tokens.chunks.txt", "anthropic"));
    await call("POST", `/v1/sessions/${id}/messages`, { commandId: "c_2", text: "Any news?" });
    let events: any[] = [];
    for (let i = 0; i < 200; i++) {
      ({ events } = await call("GET", `/v1/sessions/${id}/events?after=0&limit=1000`));
      // The first turn's start and end, then the second's: wait for the second turn to end.
      if (
        events.filter((e: any) => e.type.startsWith("response.") && e.type !== "response.created").length >= 4
      )
        break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(events.at(-1)).toMatchObject({ type: "response.completed", text: "pong" });
    expect(bodies).toHaveLength(2);
    const assistant = bodies[1].messages.find((m: { role: string }) => m.role === "assistant");
    expect(assistant.content.map((b: { type: string }) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(assistant.content[0].signature).toMatch(/^Eq4CCpIBCBIYAipA/);
    expect(assistant.content[0].thinking).toBe("The user wants me to call checkSandboxErrors immediately.");
    expect(assistant.content[1].id).toBe("toolu_017R7ACrx7NF7sLDDtvdQ1u9");
    // Stored, yet still never shown: not in the events (live or replayed) nor the conversation.
    const { conversation } = await call("GET", `/v1/sessions/${id}`);
    for (const seen of [JSON.stringify(events), JSON.stringify(conversation)]) {
      expect(seen).not.toContain("checkSandboxErrors immediately");
      expect(seen).not.toContain("Eq4CCpIBCBIYAipA");
    }
  });

  it("ends the turn with a typed timeout when the provider goes quiet; the user sees a neutral sentence", async () => {
    await start({ provider: "openai", model: "gpt-4o", baseURL: `${providerUrl}/v1`, idle_timeout_ms: 200 });
    replies.push(null);
    const { end } = await turn("Hello?");
    // The provider and its silence ("openai: the provider sent nothing for 0.2s (idle timeout)")
    // are the developer's, in the server log (models' call-timeouts tests pin that text); the
    // end user gets the code and a sentence with a reference to grep for.
    expect(end).toMatchObject({ type: "response.failed", error: { code: "timeout" } });
    const message = (end as { error: { message: string } }).error.message;
    expect(message).toMatch(
      /^The assistant could not answer this time\. Please try again\. \(reference err_[0-9a-f]{10}\)$/,
    );
    expect(message).not.toContain("openai");
    expect(bodies).toHaveLength(1);
  });

  it("traces the turn, each model call and each tool call with the GenAI attributes", async () => {
    await startThinkingToolRound();
    const { id, end } = await turn("Check the sandbox for errors now.");
    expect(end.reason).toBe("stop");
    const finished = spans.getFinishedSpans();
    const turnSpan = finished.find((s) => s.name === "patchbay.turn")!;
    expect(turnSpan.attributes).toMatchObject({
      "patchbay.session.id": id,
      "patchbay.agent": "support",
      "patchbay.turn.outcome": "completed",
      "patchbay.turn.reason": "stop",
      "gen_ai.usage.input_tokens": 599 + 61,
      "gen_ai.usage.output_tokens": 59 + 2,
    });
    const chats = finished.filter((s) => s.name === "chat claude-sonnet-4-6");
    expect(chats.map((s) => s.attributes)).toEqual([
      {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.response.finish_reasons": ["tool_calls"],
        "gen_ai.usage.input_tokens": 599,
        "gen_ai.usage.output_tokens": 59,
      },
      {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-sonnet-4-6",
        "gen_ai.response.finish_reasons": ["stop"],
        "gen_ai.usage.input_tokens": 61,
        "gen_ai.usage.output_tokens": 2,
      },
    ]);
    const tool = finished.find((s) => s.name === "execute_tool checkSandboxErrors")!;
    expect(tool.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "checkSandboxErrors",
      "patchbay.tool.location": "server",
      "patchbay.tool.outcome": "completed",
      "patchbay.tool.attempt": 1,
    });
    for (const child of [...chats, tool]) {
      expect(child.parentSpanContext?.spanId).toBe(turnSpan.spanContext().spanId);
      expect(child.spanContext().traceId).toBe(turnSpan.spanContext().traceId);
    }
  });

  it("marks a failed model call and its turn as errors with the error code", async () => {
    await start({
      provider: "openai",
      model: "gpt-4o",
      baseURL: `${providerUrl}/v1`,
      retry: { maxRetries: 0 },
    });
    const { end } = await turn("Hello?");
    expect(end.type).toBe("response.failed");
    const finished = spans.getFinishedSpans();
    const chat = finished.find((s) => s.name === "chat gpt-4o")!;
    expect([chat.status.code, chat.attributes["error.type"]]).toEqual([2, "unavailable"]);
    const turnSpan = finished.find((s) => s.name === "patchbay.turn")!;
    expect([turnSpan.status.code, turnSpan.attributes["patchbay.turn.outcome"]]).toEqual([2, "failed"]);
  });
});
