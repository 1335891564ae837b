// The quirk switches of the agent YAML's model block, as createModel reads them and as they reach
// the wire; and the idle and total timeouts of a model call against a real server that goes quiet.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModel, ModelConfigSchema } from "./create-model";
import { ModelError } from "./model-error";
import { frame, run } from "./replay-harness";
import { startWireServer, type WireServer } from "./wire-test-server";

let server: WireServer;
beforeEach(async () => {
  server = await startWireServer();
});
afterEach(async () => {
  await server.close();
});

const ask = { messages: [{ role: "user" as const, content: "Hi" }], tools: [], maxOutputTokens: 64 };
const weather = { name: "weather", description: "Weather.", parameters: { type: "object" as const } };

describe("the model switches of an agent's YAML", () => {
  it("include_usage: false leaves stream_options out; the default sends it", async () => {
    const wire = frame("azure-text.chunks.txt", "openai");
    server.reply({ chunks: [wire] }, { chunks: [wire] });
    const base = { provider: "openai" as const, model: "mistral-small-latest", baseURL: `${server.url}/v1` };
    await run(createModel({ ...base, include_usage: false }, {}), ask);
    await run(createModel(base, {}), ask);
    expect(server.requests[0]!.body).not.toHaveProperty("stream_options");
    expect(server.requests[1]!.body.stream_options).toEqual({ include_usage: true });
  });

  it("max_tokens_field and parallel_tool_calls pick the body fields", async () => {
    const wire = frame("mistral-tool-call.chunks.txt", "openai");
    server.reply({ chunks: [wire] });
    const model = createModel(
      {
        provider: "openai",
        model: "m",
        baseURL: `${server.url}/v1`,
        max_tokens_field: "max_completion_tokens",
        parallel_tool_calls: false,
      },
      {},
    );
    const outcome = await run(model, { ...ask, tools: [weather] });
    expect(outcome.calls.map((c) => c.name)).toEqual(["weather"]);
    expect(model.capabilities.parallelToolCalls).toBe(false);
    const body = server.requests[0]!.body;
    expect([body.max_completion_tokens, body.max_tokens, body.parallel_tool_calls]).toEqual([
      64,
      undefined,
      false,
    ]);
  });

  it("thinking.budget_tokens turns on Claude's extended thinking", async () => {
    server.reply({ chunks: [frame("anthropic-clear-thinking.chunks.txt", "anthropic")] });
    const model = createModel(
      {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        baseURL: server.url,
        maxTokens: 8000,
        thinking: { budget_tokens: 2048 },
      },
      { ANTHROPIC_API_KEY: "k" },
    );
    const outcome = await run(model, { messages: [{ role: "user", content: "925 / 5?" }], tools: [] });
    expect(outcome.parts).toHaveLength(1);
    expect(server.requests[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
  });

  it("refuses a switch given in both spellings, and a thinking budget that does not fit, naming the field", () => {
    const both = ModelConfigSchema.safeParse({
      provider: "openai",
      model: "m",
      parallelToolCalls: true,
      parallel_tool_calls: false,
    });
    expect(both.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["parallel_tool_calls", "give either parallelToolCalls or parallel_tool_calls, not both"],
    ]);
    expect(() =>
      createModel(
        { provider: "anthropic", model: "c", maxTokens: 2000, thinking: { budget_tokens: 4000 } },
        { ANTHROPIC_API_KEY: "k" },
      ),
    ).toThrow(/thinking\.budget_tokens \(4000\) must be below max_tokens \(2000\)/);
    // The default cap is named with the key YAML users write.
    expect(() =>
      createModel(
        { provider: "anthropic", model: "c", thinking: { budget_tokens: 4096 } },
        { ANTHROPIC_API_KEY: "k" },
      ),
    ).toThrow("thinking.budget_tokens (4096) must be below max_tokens (4096, the default)");
  });

  it("max_tokens caps OpenAI (in the field max_tokens_field names, max_output_tokens for responses) and Gemini", async () => {
    const chat = frame("azure-text.chunks.txt", "openai");
    const gemini = frame("google-text.chunks.txt", "gemini");
    server.reply({ chunks: [chat] }, { chunks: [chat] }, { chunks: [gemini] });
    const hi = { messages: [{ role: "user" as const, content: "Hi" }], tools: [] };
    const openai = { provider: "openai" as const, model: "m", baseURL: `${server.url}/v1`, maxTokens: 100 };
    await run(createModel({ ...openai, max_tokens_field: "max_completion_tokens" }, {}), hi);
    await run(createModel(openai, {}), hi);
    await run(
      createModel(
        { provider: "gemini", model: "gemini-2.5-flash", baseURL: `${server.url}/v1beta`, maxTokens: 100 },
        { GEMINI_API_KEY: "k" },
      ),
      hi,
    );
    const bodies = server.requests.map((r) => r.body);
    expect([bodies[0].max_completion_tokens, bodies[0].max_tokens]).toEqual([100, undefined]);
    expect([bodies[1].max_completion_tokens, bodies[1].max_tokens]).toEqual([undefined, 100]);
    expect(bodies[2].generationConfig).toEqual({ maxOutputTokens: 100 });
    expect(
      ModelConfigSchema.safeParse({ provider: "openai", model: "m", api: "responses", maxTokens: 100 })
        .success,
    ).toBe(true);
  });

  it("takes Gemini's thinking budgets -1 (the model decides) and 0 (off), nothing lower", () => {
    const budget = (budget_tokens: number) =>
      ModelConfigSchema.safeParse({ provider: "gemini", model: "g", thinking: { budget_tokens } }).success;
    expect([budget(-1), budget(0), budget(1024), budget(-2)]).toEqual([true, true, true, false]);
  });
});

describe("api: responses", () => {
  it("calls the Responses API with the reasoning switch, and refuses Chat Completions switches with it", async () => {
    server.reply({ chunks: [frame("openai-responses-tool-call.chunks.txt", "responses")] });
    const model = createModel(
      {
        provider: "openai",
        model: "o4-mini",
        baseURL: `${server.url}/v1`,
        api: "responses",
        reasoning: { effort: "low" },
      },
      {},
    );
    const outcome = await run(model, { ...ask, tools: [weather] });
    expect(outcome.calls.map((c) => c.name)).toEqual(["get_weather"]);
    expect(server.requests[0]!.path).toBe("/v1/responses");
    expect(server.requests[0]!.body).toMatchObject({
      reasoning: { effort: "low" },
      max_output_tokens: 64,
      store: false,
    });
    // max_tokens (maxTokens once the agent file's keys are read) when the request gives no cap.
    server.reply({ chunks: [frame("openai-responses-tool-call.chunks.txt", "responses")] });
    const capped = createModel(
      { provider: "openai", model: "o4-mini", baseURL: `${server.url}/v1`, api: "responses", maxTokens: 300 },
      {},
    );
    await run(capped, { messages: ask.messages, tools: [weather] });
    expect(server.requests[1]!.body.max_output_tokens).toBe(300);
    const wrong = ModelConfigSchema.safeParse({
      provider: "openai",
      model: "m",
      api: "responses",
      include_usage: false,
    });
    expect(wrong.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["include_usage", "applies to Chat Completions, not api: responses"],
    ]);
    const orphan = ModelConfigSchema.safeParse({
      provider: "openai",
      model: "m",
      reasoning: { effort: "low" },
    });
    expect(orphan.error?.issues.map((i) => [i.path.join("."), i.message])).toEqual([
      ["reasoning", "needs api: responses"],
    ]);
  });
});

describe("the timeouts of a model call", () => {
  it("idle_timeout_ms ends a call whose provider goes silent, naming the provider and the silence, without retrying", async () => {
    const wire = frame("azure-text.chunks.txt", "openai");
    // The first two events, then nothing with the connection open.
    server.reply({ chunks: [`${wire.split("\n\n").slice(0, 3).join("\n\n")}\n\n`], hang: true });
    const model = createModel(
      {
        provider: "openai",
        model: "gpt-4",
        baseURL: `${server.url}/v1`,
        idle_timeout_ms: 200,
        retry: { maxRetries: 2 },
      },
      {},
    );
    const outcome = await run(model, ask);
    expect(outcome.text).toBe("Hello");
    expect(outcome.error).toEqual({ code: "timeout", status: undefined });
    expect(server.requests).toHaveLength(1);
    let error: unknown;
    server.reply({ chunks: [], hang: true });
    try {
      for await (const _ of model.stream(ask)) break;
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).message).toBe("openai: the provider sent nothing for 0.2s (idle timeout)");
    expect((error as ModelError).retryable).toBe(false);
  });

  it("total_timeout_ms ends a call that keeps trickling bytes", async () => {
    const wire = frame("anthropic-clear-thinking.chunks.txt", "anthropic");
    // A ping comment every 40 ms keeps the connection busy but never ends the reply.
    server.reply({
      chunks: [`${wire.split("\n\n").slice(0, 4).join("\n\n")}\n\n`, ...Array(200).fill(": ping\n\n")],
      pauseMs: 40,
    });
    const model = createModel(
      {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        baseURL: server.url,
        idle_timeout_ms: 150,
        total_timeout_ms: 400,
      },
      { ANTHROPIC_API_KEY: "k" },
    );
    let error: unknown;
    try {
      for await (const _ of model.stream(ask));
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).code).toBe("timeout");
    expect((error as ModelError).message).toBe(
      "anthropic: the model call took longer than its total timeout of 0.4s",
    );
  });

  it("does not count the time the caller holds an event as silence", async () => {
    server.reply({ chunks: [frame("azure-text.chunks.txt", "openai")] });
    const model = createModel(
      { provider: "openai", model: "gpt-4", baseURL: `${server.url}/v1`, idle_timeout_ms: 100 },
      {},
    );
    let text = "";
    for await (const event of model.stream(ask)) {
      if (event.type === "text-delta") {
        text += event.delta;
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    }
    expect(text).toBe("Hello World");
  });
});
