import type { ToolSpec } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModelMessage, ModelStreamEvent } from "./language-model";
import { ModelError } from "./model-error";
import { openai } from "./openai";
import { collect, splitEvery, sse, startWireServer, type WireServer } from "./wire-test-server";

let server: WireServer;
beforeEach(async () => {
  server = await startWireServer();
});
afterEach(async () => {
  await server.close();
});

const model = (extra: Partial<Parameters<typeof openai>[0]> = {}) =>
  openai({
    model: "gpt-4o-mini",
    baseURL: `${server.url}/v1`,
    apiKey: "sk-test",
    capabilities: { images: true },
    retry: { initialDelayMs: 5 },
    ...extra,
  });

const base = {
  id: "chatcmpl-123",
  object: "chat.completion.chunk",
  created: 1694268190,
  model: "gpt-4o-mini",
};
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  ...base,
  system_fingerprint: "fp_44709d6fcb",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
});
const usageChunk = (prompt: number, completion: number) => ({
  ...base,
  choices: [],
  usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
});

const textStream = sse([
  chunk({ role: "assistant", content: "", refusal: null }),
  chunk({ content: "Hello" }),
  chunk({ content: " there" }),
  chunk({}, "stop"),
  usageChunk(9, 12),
  "[DONE]",
]);

const weather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] } },
    required: ["city"],
  },
};
const time: ToolSpec = {
  name: "get_time",
  description: "Local time in a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

// Two parallel calls, their argument JSON cut mid-token ("Be" + "rlin", "{\"ci" + "ty\"").
const toolStream = sse([
  chunk({
    role: "assistant",
    content: null,
    tool_calls: [
      { index: 0, id: "call_w", type: "function", function: { name: "get_weather", arguments: "" } },
    ],
  }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty": "Be' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: 'rlin", "unit": "c"}' } }] }),
  chunk({
    tool_calls: [
      { index: 1, id: "call_t", type: "function", function: { name: "get_time", arguments: '{"city' } },
    ],
  }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: '": "Os' } }] }),
  chunk({ tool_calls: [{ index: 1, function: { arguments: 'lo"}' } }] }),
  chunk({}, "tool_calls"),
  usageChunk(80, 40),
  "[DONE]",
]);

describe("openai", () => {
  it("streams text deltas and reads usage from the usage chunk, sending the documented body", async () => {
    server.reply({ chunks: splitEvery(textStream, 13) });
    const events = await collect(
      model().stream({
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "Hi" },
        ],
        tools: [],
        maxOutputTokens: 100,
        temperature: 0.2,
      }),
    );
    expect(events).toEqual([
      { type: "text-delta", delta: "Hello" },
      { type: "text-delta", delta: " there" },
      { type: "finish", reason: "stop", usage: { inputTokens: 9, outputTokens: 12 } },
    ]);
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.headers.authorization).toBe("Bearer sk-test");
    // A server at another baseURL gets `max_tokens`, the field compatible servers know.
    expect(request!.body).toEqual({
      model: "gpt-4o-mini",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 100,
      temperature: 0.2,
    });
  });

  it("assembles two parallel tool calls split mid-token and yields them in index order", async () => {
    server.reply({ chunks: splitEvery(toolStream, 7) });
    const events = await collect(
      model({ parallelToolCalls: true }).stream({
        messages: [{ role: "user", content: "Weather and time in Berlin and Oslo?" }],
        tools: [weather, time],
        toolChoice: "required",
      }),
    );
    expect(events).toEqual([
      {
        type: "tool-call",
        call: {
          id: "call_w",
          index: 0,
          name: "get_weather",
          arguments: { city: "Berlin", unit: "c" },
          rawArguments: '{"city": "Berlin", "unit": "c"}',
        },
      },
      {
        type: "tool-call",
        call: {
          id: "call_t",
          index: 1,
          name: "get_time",
          arguments: { city: "Oslo" },
          rawArguments: '{"city": "Oslo"}',
        },
      },
      { type: "finish", reason: "tool_calls", usage: { inputTokens: 80, outputTokens: 40 } },
    ]);
    expect(server.requests[0]!.body).toMatchObject({
      tools: [
        {
          type: "function",
          function: { name: "get_weather", description: weather.description, parameters: weather.parameters },
        },
        {
          type: "function",
          function: { name: "get_time", description: time.description, parameters: time.parameters },
        },
      ],
      tool_choice: "required",
      parallel_tool_calls: true,
    });
    expect(server.requests[0]!.body.tools[0].function).not.toHaveProperty("strict");
  });

  it("sends tool calls, tool results and images as Chat Completions messages", async () => {
    server.reply({ chunks: [textStream] });
    const png = { type: "image" as const, mimeType: "image/png" as const, data: "iVBORw0KGgo=" };
    const chart = { type: "image" as const, url: "https://example.com/chart.png" };
    const messages: ModelMessage[] = [
      { role: "user", content: "What is this?", images: [png] },
      {
        role: "assistant",
        content: "",
        toolCalls: [
          {
            id: "call_1",
            index: 0,
            name: "get_weather",
            arguments: { city: "Rome" },
            rawArguments: '{"city":"Rome"}',
          },
          { id: "call_2", index: 1, name: "chart", arguments: {}, rawArguments: "{}" },
        ],
      },
      { role: "tool", toolCallId: "call_1", toolName: "get_weather", content: { text: "21C", images: [] } },
      {
        role: "tool",
        toolCallId: "call_2",
        toolName: "chart",
        content: { text: "chart attached", images: [chart] },
        isError: false,
      },
      { role: "user", content: "Thanks" },
    ];
    await collect(model().stream({ messages, tools: [] }));
    expect(server.requests[0]!.body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        ],
      },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
          { id: "call_2", type: "function", function: { name: "chart", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_1", content: "21C" },
      { role: "tool", tool_call_id: "call_2", content: "chart attached" },
      {
        role: "user",
        content: [
          { type: "text", text: "Images returned by the tool call call_2 (chart):" },
          { type: "image_url", image_url: { url: "https://example.com/chart.png" } },
        ],
      },
      { role: "user", content: "Thanks" },
    ]);
  });

  it("sends strict tool schemas and gives the tool back the arguments its own schema describes", async () => {
    server.reply({
      chunks: [
        sse([
          chunk({
            tool_calls: [
              {
                index: 0,
                id: "call_s",
                type: "function",
                function: { name: "get_weather", arguments: '{"city":"Paris","unit":null}' },
              },
            ],
          }),
          chunk({}, "tool_calls"),
          "[DONE]",
        ]),
      ],
    });
    const events = await collect(
      model({ strictTools: true }).stream({ messages: [{ role: "user", content: "?" }], tools: [weather] }),
    );
    expect(server.requests[0]!.body.tools[0].function).toEqual({
      name: "get_weather",
      description: weather.description,
      strict: true,
      parameters: {
        type: "object",
        properties: { city: { type: "string" }, unit: { type: ["string", "null"], enum: ["c", "f", null] } },
        required: ["city", "unit"],
        additionalProperties: false,
      },
    });
    expect(events[0]).toMatchObject({
      type: "tool-call",
      call: { arguments: { city: "Paris" }, rawArguments: '{"city":"Paris","unit":null}' },
    });
    // No usage chunk (a server that ignores stream_options) reports zero usage rather than failing.
    expect(events[1]).toEqual({
      type: "finish",
      reason: "tool_calls",
      usage: { inputTokens: 0, outputTokens: 0 },
    });
  });

  it("retries a 429 after the retry-after the provider gave, then streams the reply", async () => {
    server.reply(
      {
        status: 429,
        headers: { "retry-after-ms": "150" },
        chunks: [
          JSON.stringify({
            error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" },
          }),
        ],
      },
      { chunks: [textStream] },
    );
    const events = await collect(model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [] }));
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "stop" });
    expect(server.requests).toHaveLength(2);
    const waited = server.requests[1]!.receivedAt - server.requests[0]!.receivedAt;
    expect(waited).toBeGreaterThanOrEqual(145);
    expect(waited).toBeLessThan(2_000);
    expect(server.requests[1]!.body).toEqual(server.requests[0]!.body);
  });

  it("retries a 500 with backoff and gives up after maxRetries with the last error", async () => {
    server.reply(
      { status: 500, chunks: ['{"error":{"message":"boom","type":"server_error"}}'] },
      { chunks: [textStream] },
    );
    const ok = await collect(model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [] }));
    expect(ok.at(-1)).toMatchObject({ type: "finish" });
    expect(server.requests).toHaveLength(2);

    const failing = { status: 503, chunks: ['{"error":{"message":"overloaded","type":"server_error"}}'] };
    server.reply(failing, failing, failing);
    const error = await collect(
      model({ retry: { maxRetries: 1, initialDelayMs: 5 } }).stream({
        messages: [{ role: "user", content: "Hi" }],
        tools: [],
      }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ code: "unavailable", status: 503, message: "openai: overloaded" });
    expect(server.requests).toHaveLength(4);
  });

  it("fails a 401 at once with code authentication and the provider's message", async () => {
    server.reply({
      status: 401,
      chunks: [
        JSON.stringify({
          error: {
            message: "Incorrect API key provided: sk-test.",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        }),
      ],
    });
    const error = await collect(
      model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [] }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: "authentication",
      status: 401,
      message: "openai: Incorrect API key provided: sk-test.",
    });
    expect(server.requests).toHaveLength(1);
  });

  it("reports a connection cut after text was yielded as unavailable and does not retry", async () => {
    const partial = sse([chunk({ content: "Hel" }), chunk({ content: "lo" })]);
    server.reply(
      { chunks: [partial, 'data: {"id":"chatcmpl-123","choi'], cut: true },
      { chunks: [textStream] },
    );
    const seen: ModelStreamEvent[] = [];
    const error = await (async () => {
      for await (const event of model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [] }))
        seen.push(event);
    })().catch((e: unknown) => e);
    expect(seen).toEqual([
      { type: "text-delta", delta: "Hel" },
      { type: "text-delta", delta: "lo" },
    ]);
    expect(error).toMatchObject({ code: "unavailable" });
    expect(server.requests).toHaveLength(1);
  });

  it("retries a connection cut before anything was yielded", async () => {
    server.reply(
      { chunks: [sse([chunk({ role: "assistant", content: "" })])], cut: true },
      { chunks: [textStream] },
    );
    const events = await collect(model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [] }));
    expect(events.map((e) => e.type)).toEqual(["text-delta", "text-delta", "finish"]);
    expect(server.requests).toHaveLength(2);
  });

  it("turns an error chunk mid-stream into a typed error", async () => {
    server.reply({
      chunks: [
        sse([
          chunk({ content: "Partial" }),
          {
            error: {
              message: "This model's maximum context length is 8192 tokens.",
              type: "invalid_request_error",
              code: "context_length_exceeded",
            },
          },
        ]),
      ],
    });
    const error = await collect(
      model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [] }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "context_too_long", providerCode: "context_length_exceeded" });
    expect(server.requests).toHaveLength(1);
  });

  it("ends with aborted when the signal aborts mid-stream", async () => {
    server.reply({ chunks: [sse([chunk({ content: "Hello" })])], hang: true });
    const controller = new AbortController();
    const seen: string[] = [];
    const error = await (async () => {
      for await (const event of model().stream({
        messages: [{ role: "user", content: "Hi" }],
        tools: [],
        signal: controller.signal,
      })) {
        if (event.type === "text-delta") seen.push(event.delta);
        controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual(["Hello"]);
    expect(error).toMatchObject({ code: "aborted" });
  });

  it("ends with aborted at once when the signal aborts during the backoff wait", async () => {
    server.reply({
      status: 429,
      headers: { "retry-after": "5" },
      chunks: ['{"error":{"message":"slow down"}}'],
    });
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 100);
    const error = await collect(
      model().stream({ messages: [{ role: "user", content: "Hi" }], tools: [], signal: controller.signal }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "aborted" });
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(server.requests).toHaveLength(1);
  });

  it("speaks Azure OpenAI: api-key header, api-version query, deployment path", async () => {
    server.reply({ chunks: [textStream] });
    const azure = openai({
      model: "gpt-4o",
      baseURL: `${server.url}/openai/deployments/chat-prod`,
      azure: { apiVersion: "2024-10-21" },
      apiKey: "azure-key",
    });
    expect(azure.capabilities.images).toBe(true);
    await collect(
      azure.stream({ messages: [{ role: "user", content: "Hi" }], tools: [], maxOutputTokens: 50 }),
    );
    const [request] = server.requests;
    expect(request!.path).toBe("/openai/deployments/chat-prod/chat/completions?api-version=2024-10-21");
    expect(request!.headers["api-key"]).toBe("azure-key");
    expect(request!.headers.authorization).toBeUndefined();
    expect(request!.body.max_completion_tokens).toBe(50);
  });

  it("calls a local server without a key, and replaces images for a text-only model", async () => {
    server.reply({
      chunks: [
        sse([
          chunk({
            tool_calls: [
              {
                index: 0,
                id: "call_o",
                type: "function",
                function: { name: "get_time", arguments: '{"city":"Oslo"}' },
              },
            ],
          }),
          // Ollama reports "stop" even for a reply that called tools.
          chunk({}, "stop"),
          "[DONE]",
        ]),
      ],
    });
    const local = openai({ model: "llama3.1", baseURL: `${server.url}/v1`, env: {} });
    expect(local.capabilities.images).toBe(false);
    const events = await collect(
      local.stream({
        messages: [
          { role: "user", content: "Look", images: [{ type: "image", url: "https://example.com/a.png" }] },
        ],
        tools: [time],
      }),
    );
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "tool_calls" });
    const [request] = server.requests;
    expect(request!.headers.authorization).toBeUndefined();
    expect(request!.body.messages).toEqual([
      { role: "user", content: "Look\n[image omitted: this model reads text only]" },
    ]);
  });

  it("refuses to start against OpenAI without a key, naming the variable", () => {
    expect(() => openai({ model: "gpt-4o-mini", env: {} })).toThrow(/OPENAI_API_KEY/);
  });
});
