import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createModel, defaultModelFromEnv, describeModelFromEnv, ModelConfigSchema } from "./create-model";
import { ModelError } from "./model-error";
import { collect, sse, startWireServer, type WireServer } from "./wire-test-server";

let server: WireServer;
beforeEach(async () => {
  server = await startWireServer();
});
afterEach(async () => {
  await server.close();
});

const openaiText = sse([
  {
    id: "c",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }],
  },
  "[DONE]",
]);
const anthropicText = sse([
  [
    "message_start",
    { type: "message_start", message: { id: "msg_1", usage: { input_tokens: 3, output_tokens: 1 } } },
  ],
  [
    "content_block_start",
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  ],
  [
    "content_block_delta",
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } },
  ],
  ["content_block_stop", { type: "content_block_stop", index: 0 }],
  [
    "message_delta",
    { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 1 } },
  ],
  ["message_stop", { type: "message_stop" }],
]);

function errorOf(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("createModel", () => {
  it("builds an OpenAI model whose key comes from the given env", async () => {
    server.reply({ chunks: [openaiText] });
    const model = createModel(
      { provider: "openai", model: "gpt-4o-mini", baseURL: `${server.url}/v1`, apiKeyEnv: "MY_KEY" },
      { MY_KEY: "sk-from-env" },
    );
    expect([model.provider, model.modelId]).toEqual(["openai", "gpt-4o-mini"]);
    const events = await collect(model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(events[0]).toEqual({ type: "text-delta", delta: "ok" });
    expect(server.requests[0]!.headers.authorization).toBe("Bearer sk-from-env");
  });

  it("builds an Anthropic model with the key from ANTHROPIC_API_KEY", async () => {
    server.reply({ chunks: [anthropicText] });
    const model = createModel(
      { provider: "anthropic", model: "claude-sonnet-4-5", baseURL: server.url, maxTokens: 512 },
      { ANTHROPIC_API_KEY: "sk-ant-test" },
    );
    await collect(model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(server.requests[0]!.headers["x-api-key"]).toBe("sk-ant-test");
    expect(server.requests[0]!.body.max_tokens).toBe(512);
  });

  it("builds a Gemini model with the key from GEMINI_API_KEY, sent as x-goog-api-key", async () => {
    server.reply({
      chunks: ['data: {"candidates":[{"content":{"parts":[{"text":"ok"}]},"finishReason":"STOP"}]}\r\n\r\n'],
    });
    const model = createModel(
      {
        provider: "gemini",
        model: "gemini-2.5-flash",
        baseURL: `${server.url}/v1beta`,
        thinking: { budget_tokens: 512 },
      },
      { GEMINI_API_KEY: "g-key" },
    );
    const events = await collect(model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(events[0]).toEqual({ type: "text-delta", delta: "ok" });
    expect(server.requests[0]!.headers["x-goog-api-key"]).toBe("g-key");
    expect(server.requests[0]!.body.generationConfig).toEqual({ thinkingConfig: { thinkingBudget: 512 } });
    expect(() => createModel({ provider: "gemini", model: "gemini-2.5-flash" }, {})).toThrow(
      /GEMINI_API_KEY/,
    );
  });

  it("reports a missing key as authentication, naming the variable", () => {
    const cases: Array<[Parameters<typeof createModel>[0], string]> = [
      [{ provider: "openai", model: "gpt-4o-mini" }, "OPENAI_API_KEY"],
      [{ provider: "anthropic", model: "claude-sonnet-4-5" }, "ANTHROPIC_API_KEY"],
      [
        { provider: "openai", model: "m", baseURL: "http://127.0.0.1:1/v1", apiKeyEnv: "VLLM_KEY" },
        "VLLM_KEY",
      ],
      [
        {
          provider: "openai",
          model: "m",
          baseURL: "https://r.openai.azure.com/openai/deployments/d",
          azure: { apiVersion: "2024-10-21" },
        },
        "AZURE_OPENAI_API_KEY",
      ],
    ];
    for (const [config, variable] of cases) {
      const error = errorOf(() => createModel(config, { UNRELATED: "x" }));
      expect(error).toBeInstanceOf(ModelError);
      expect(error).toMatchObject({ code: "authentication" });
      expect((error as Error).message).toContain(variable);
    }
  });

  it("needs no key for an OpenAI-compatible server at a custom baseURL", async () => {
    server.reply({ chunks: [openaiText] });
    const model = createModel({ provider: "openai", model: "llama3.1", baseURL: `${server.url}/v1` }, {});
    await collect(model.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(server.requests[0]!.headers.authorization).toBeUndefined();
  });

  it("fills what the config leaves out from the environment, the config winning", async () => {
    server.reply({ chunks: [openaiText] }, { chunks: [openaiText] }, { chunks: [anthropicText] });
    const env = {
      OPENAI_BASE_URL: `${server.url}/v1`,
      OPENAI_MODEL: "llama3.1",
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_MODEL: "claude-from-env",
      ANTHROPIC_API_KEY: "sk-ant",
      PATCHBAY_MODEL_IMAGES: "true",
    };
    const fromEnv = createModel({ provider: "openai" }, env);
    expect([fromEnv.modelId, fromEnv.capabilities.images]).toEqual(["llama3.1", true]);
    await collect(fromEnv.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(server.requests[0]!.path).toBe("/v1/chat/completions");
    expect(server.requests[0]!.body.model).toBe("llama3.1");
    // The config wins over every variable.
    const own = createModel(
      { provider: "openai", model: "mine", baseURL: `${server.url}/own/v1`, capabilities: { images: false } },
      env,
    );
    expect([own.modelId, own.capabilities.images]).toEqual(["mine", false]);
    await collect(own.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(server.requests[1]!.path).toBe("/own/v1/chat/completions");
    const claude = createModel({ provider: "anthropic" }, env);
    expect(claude.modelId).toBe("claude-from-env");
    await collect(claude.stream({ messages: [{ role: "user", content: "hi" }], tools: [] }));
    expect(server.requests[2]!.path).toBe("/v1/messages");
    // No name anywhere: refused, naming the variable; a base URL that is not a URL too.
    expect(() => createModel({ provider: "openai" }, { OPENAI_API_KEY: "sk" })).toThrow(
      "no model name: set model in the config, or the environment variable OPENAI_MODEL",
    );
    expect(() =>
      createModel({ provider: "openai", model: "m" }, { OPENAI_BASE_URL: "localhost:11434" }),
    ).toThrow("OPENAI_BASE_URL must be an http(s) URL, got 'localhost:11434'");
  });

  it("builds the scripted model from plain config data", async () => {
    const model = createModel({ provider: "scripted", rules: [{ match: "^ping$", reply: "pong" }] }, {});
    expect(model.provider).toBe("scripted");
    const events = await collect(model.stream({ messages: [{ role: "user", content: "ping" }], tools: [] }));
    expect(events[0]).toEqual({ type: "text-delta", delta: "pong" });
  });

  it("rejects an invalid config as bad_request, naming every problem", () => {
    const error = errorOf(() =>
      createModel(
        { provider: "openai", model: "", baseURL: "not a url" } as Parameters<typeof createModel>[0],
        {},
      ),
    );
    expect(error).toMatchObject({ code: "bad_request" });
    expect((error as Error).message).toContain("model");
    expect((error as Error).message).toContain("baseURL");
    expect(ModelConfigSchema.safeParse({ provider: "cohere", model: "x" }).success).toBe(false);
    expect(
      ModelConfigSchema.safeParse({ provider: "anthropic", model: "x", strictTools: true }).success,
    ).toBe(false);
  });
});

describe("defaultModelFromEnv", () => {
  it("is scripted without keys, else OpenAI, else Anthropic", () => {
    expect(defaultModelFromEnv({}).provider).toBe("scripted");
    const openai = defaultModelFromEnv({
      OPENAI_API_KEY: "sk",
      OPENAI_MODEL: "gpt-4.1-mini",
      ANTHROPIC_API_KEY: "a",
    });
    expect([openai.provider, openai.modelId]).toEqual(["openai", "gpt-4.1-mini"]);
    const claude = defaultModelFromEnv({ ANTHROPIC_API_KEY: "sk-ant", OPENAI_API_KEY: " " });
    expect([claude.provider, claude.modelId]).toEqual(["anthropic", "claude-sonnet-4-5"]);
  });
});

describe("PATCHBAY_MODEL_IMAGES and the startup description", () => {
  const local = {
    OPENAI_API_KEY: "sk-local",
    OPENAI_BASE_URL: "http://127.0.0.1:11434/v1",
    OPENAI_MODEL: "llava",
  };

  it("turns images on for a custom base URL, or off for the official one", () => {
    expect(defaultModelFromEnv(local).capabilities.images).toBe(false);
    expect(defaultModelFromEnv({ ...local, PATCHBAY_MODEL_IMAGES: "true" }).capabilities.images).toBe(true);
    expect(
      defaultModelFromEnv({ OPENAI_API_KEY: "sk", PATCHBAY_MODEL_IMAGES: "0" }).capabilities.images,
    ).toBe(false);
    expect(() => defaultModelFromEnv({ ...local, PATCHBAY_MODEL_IMAGES: "yes" })).toThrow(
      "PATCHBAY_MODEL_IMAGES must be true or false, got 'yes'",
    );
  });

  it("names the provider, the model and the base URL", () => {
    expect(describeModelFromEnv({})).toBeUndefined();
    expect(describeModelFromEnv({ ...local, PATCHBAY_MODEL_IMAGES: "true" })).toBe(
      "openai llava at http://127.0.0.1:11434/v1 (images on)",
    );
    expect(describeModelFromEnv({ ANTHROPIC_API_KEY: "sk-ant" })).toBe(
      "anthropic claude-sonnet-4-5 at https://api.anthropic.com (images on)",
    );
  });
});
