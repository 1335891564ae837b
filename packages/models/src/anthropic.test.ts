import type { ToolSpec } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { anthropic } from "./anthropic";
import type { ModelMessage, ModelStreamEvent } from "./language-model";
import { ModelError } from "./model-error";
import { collect, splitEvery, sse, startWireServer, type WireServer } from "./wire-test-server";

let server: WireServer;
beforeEach(async () => {
  server = await startWireServer();
});
afterEach(async () => {
  await server.close();
});

const model = (extra: Partial<Parameters<typeof anthropic>[0]> = {}) =>
  anthropic({
    model: "claude-sonnet-4-5",
    baseURL: server.url,
    apiKey: "sk-ant-test",
    retry: { initialDelayMs: 5 },
    ...extra,
  });

const messageStart = [
  "message_start",
  {
    type: "message_start",
    message: {
      id: "msg_01",
      type: "message",
      role: "assistant",
      content: [],
      model: "claude-sonnet-4-5",
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: 472,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 100,
        output_tokens: 2,
      },
    },
  },
] as const;
const textBlock = (index: number, ...texts: string[]) => [
  ["content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } }],
  ...texts.map((text) => [
    "content_block_delta",
    { type: "content_block_delta", index, delta: { type: "text_delta", text } },
  ]),
  ["content_block_stop", { type: "content_block_stop", index }],
];
const toolBlock = (index: number, id: string, name: string, partials: string[]) => [
  [
    "content_block_start",
    { type: "content_block_start", index, content_block: { type: "tool_use", id, name, input: {} } },
  ],
  ...partials.map((partial_json) => [
    "content_block_delta",
    { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json } },
  ]),
  ["content_block_stop", { type: "content_block_stop", index }],
];
const messageEnd = (stopReason: string, outputTokens: number) => [
  [
    "message_delta",
    {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    },
  ],
  ["message_stop", { type: "message_stop" }],
];

const weather: ToolSpec = {
  name: "get_weather",
  description: "Current weather for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const clock: ToolSpec = {
  name: "get_time",
  description: "The current time.",
  parameters: { type: "object", properties: {} },
};

const toolStream = sse([
  messageStart,
  ["ping", { type: "ping" }],
  ...textBlock(0, "Let me ", "check."),
  ...toolBlock(1, "toolu_01A", "get_weather", ["", '{"ci', 'ty": "San Fra', 'ncisco"}']),
  ...toolBlock(2, "toolu_01B", "get_time", []),
  ...messageEnd("tool_use", 89),
]);

describe("anthropic", () => {
  it("streams text, assembles tool_use input deltas split mid-token, and reads usage", async () => {
    server.reply({ chunks: splitEvery(toolStream, 11) });
    const events = await collect(
      model().stream({
        messages: [
          { role: "system", content: "You are terse." },
          { role: "user", content: "Weather in SF, and the time?" },
        ],
        tools: [weather, clock],
        toolChoice: "auto",
      }),
    );
    expect(events).toEqual([
      { type: "text-delta", delta: "Let me " },
      { type: "text-delta", delta: "check." },
      {
        type: "tool-call",
        call: {
          id: "toolu_01A",
          index: 0,
          name: "get_weather",
          arguments: { city: "San Francisco" },
          rawArguments: '{"city": "San Francisco"}',
        },
      },
      {
        type: "tool-call",
        call: { id: "toolu_01B", index: 1, name: "get_time", arguments: {}, rawArguments: "{}" },
      },
      { type: "finish", reason: "tool_calls", usage: { inputTokens: 572, outputTokens: 89 } },
    ]);
    const [request] = server.requests;
    expect(request!.path).toBe("/v1/messages");
    expect(request!.headers["x-api-key"]).toBe("sk-ant-test");
    expect(request!.headers["anthropic-version"]).toBe("2023-06-01");
    expect(request!.body).toEqual({
      model: "claude-sonnet-4-5",
      max_tokens: 4096,
      system: "You are terse.",
      messages: [{ role: "user", content: [{ type: "text", text: "Weather in SF, and the time?" }] }],
      stream: true,
      tools: [
        { name: "get_weather", description: weather.description, input_schema: weather.parameters },
        { name: "get_time", description: clock.description, input_schema: clock.parameters },
      ],
      tool_choice: { type: "auto" },
    });
  });

  it("sends tool results as tool_result blocks merged into one user message, with is_error and images", async () => {
    server.reply({ chunks: [sse([messageStart, ...textBlock(0, "Done."), ...messageEnd("end_turn", 3)])] });
    const png = { type: "image" as const, mimeType: "image/png" as const, data: "iVBORw0KGgo=" };
    const url = { type: "image" as const, url: "https://example.com/map.png" };
    const messages: ModelMessage[] = [
      { role: "user", content: "Compare these", images: [png, url] },
      {
        role: "assistant",
        content: "Looking.",
        toolCalls: [
          {
            id: "toolu_1",
            index: 0,
            name: "get_weather",
            arguments: { city: "Rome" },
            rawArguments: '{"city":"Rome"}',
          },
          { id: "toolu_2", index: 1, name: "seat_map", arguments: {}, rawArguments: "{}" },
        ],
      },
      {
        role: "tool",
        toolCallId: "toolu_1",
        toolName: "get_weather",
        content: { text: "weather service timed out", images: [] },
        isError: true,
      },
      {
        role: "tool",
        toolCallId: "toolu_2",
        toolName: "seat_map",
        content: { text: "Seat map", images: [png] },
      },
      { role: "user", content: "And?" },
    ];
    const events = await collect(
      model({ maxTokens: 1000 }).stream({ messages, tools: [weather], toolChoice: { tool: "get_weather" } }),
    );
    expect(events.at(-1)).toEqual({
      type: "finish",
      reason: "stop",
      usage: { inputTokens: 572, outputTokens: 3 },
    });
    const body = server.requests[0]!.body;
    expect(body.system).toBeUndefined();
    expect(body.max_tokens).toBe(1000);
    expect(body.tool_choice).toEqual({ type: "tool", name: "get_weather" });
    const pngSource = { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" };
    expect(body.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "image", source: pngSource },
          { type: "image", source: { type: "url", url: "https://example.com/map.png" } },
          { type: "text", text: "Compare these" },
        ],
      },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Looking." },
          { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Rome" } },
          { type: "tool_use", id: "toolu_2", name: "seat_map", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          {
            type: "tool_result",
            tool_use_id: "toolu_1",
            content: [{ type: "text", text: "weather service timed out" }],
            is_error: true,
          },
          {
            type: "tool_result",
            tool_use_id: "toolu_2",
            content: [
              { type: "text", text: "Seat map" },
              { type: "image", source: pngSource },
            ],
          },
          { type: "text", text: "And?" },
        ],
      },
    ]);
  });

  it("maps tool choices and disables parallel tool use when told to", async () => {
    const reply = { chunks: [sse([messageStart, ...textBlock(0, "ok"), ...messageEnd("end_turn", 1)])] };
    server.reply(reply, reply, reply);
    const request = { messages: [{ role: "user" as const, content: "hi" }], tools: [weather] };
    await collect(model().stream({ ...request, toolChoice: "required" }));
    await collect(model().stream({ ...request, toolChoice: "none" }));
    const serial = model({ parallelToolCalls: false });
    expect(serial.capabilities.parallelToolCalls).toBe(false);
    await collect(serial.stream(request));
    expect(server.requests.map((r) => r.body.tool_choice)).toEqual([
      { type: "any" },
      { type: "none" },
      { type: "auto", disable_parallel_tool_use: true },
    ]);
  });

  it("turns an error event after text into a typed error and does not retry", async () => {
    server.reply({
      chunks: [
        sse([
          messageStart,
          ...textBlock(0, "Partial"),
          ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
        ]),
      ],
    });
    const seen: ModelStreamEvent[] = [];
    const error = await (async () => {
      for await (const event of model().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }))
        seen.push(event);
    })().catch((e: unknown) => e);
    expect(seen).toEqual([{ type: "text-delta", delta: "Partial" }]);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({
      code: "unavailable",
      providerCode: "overloaded_error",
      message: "anthropic: Overloaded",
    });
    expect(server.requests).toHaveLength(1);
  });

  it("retries an error event that came before anything was yielded", async () => {
    server.reply(
      {
        chunks: [
          sse([
            messageStart,
            ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
          ]),
        ],
      },
      { chunks: [sse([messageStart, ...textBlock(0, "fine"), ...messageEnd("end_turn", 1)])] },
    );
    const events = await collect(model().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(events[0]).toEqual({ type: "text-delta", delta: "fine" });
    expect(server.requests).toHaveLength(2);
  });

  it("waits out a 429's retry-after in seconds, then streams the reply", async () => {
    server.reply(
      {
        status: 429,
        headers: { "retry-after": "1" },
        chunks: [
          JSON.stringify({
            type: "error",
            error: { type: "rate_limit_error", message: "Number of requests has exceeded your rate limit" },
          }),
        ],
      },
      { chunks: [sse([messageStart, ...textBlock(0, "ok"), ...messageEnd("max_tokens", 1)])] },
    );
    const events = await collect(model().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(events.at(-1)).toMatchObject({ type: "finish", reason: "length" });
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]!.receivedAt - server.requests[0]!.receivedAt).toBeGreaterThanOrEqual(990);
  });

  it("ends with rate_limited and its retry-after once the retries are spent", async () => {
    const limited = {
      status: 429,
      headers: { "retry-after": "0" },
      chunks: ['{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}'],
    };
    server.reply(limited, limited);
    const error = await collect(
      model({ retry: { maxRetries: 1 } }).stream({ messages: [{ role: "user", content: "hi" }], tools: [] }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: "rate_limited",
      status: 429,
      retryAfterMs: 0,
      providerCode: "rate_limit_error",
    });
    expect(server.requests).toHaveLength(2);
  });

  it("fails a 401 at once with code authentication", async () => {
    server.reply({
      status: 401,
      headers: { "request-id": "req_011CSHoEeqs5C35K2UUqR7Fy" },
      chunks: ['{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'],
    });
    const error = await collect(
      model().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: "authentication",
      status: 401,
      message: "anthropic: invalid x-api-key",
      requestId: "req_011CSHoEeqs5C35K2UUqR7Fy",
    });
    expect(server.requests).toHaveLength(1);
  });

  it("reports a stream that stops before message_stop as unavailable", async () => {
    server.reply({
      chunks: [sse([messageStart, ...textBlock(0, "Hal")]), 'event: content_block_delta\ndata: {"ty'],
      cut: true,
    });
    const seen: ModelStreamEvent[] = [];
    const error = await (async () => {
      for await (const event of model().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }))
        seen.push(event);
    })().catch((e: unknown) => e);
    expect(seen).toEqual([{ type: "text-delta", delta: "Hal" }]);
    expect(error).toMatchObject({ code: "unavailable" });
    expect(server.requests).toHaveLength(1);
  });

  it("maps a too-long prompt to context_too_long and does not retry it", async () => {
    server.reply({
      status: 400,
      chunks: [
        '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}',
      ],
    });
    const error = await collect(
      model().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }),
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "context_too_long", status: 400 });
    expect(server.requests).toHaveLength(1);
  });

  it("refuses to start without a key, naming the variable", () => {
    expect(() => anthropic({ model: "claude-sonnet-4-5", env: {} })).toThrow(/ANTHROPIC_API_KEY/);
  });
});
