// The replay suite: provider streams recorded by public SDK repositories (fixtures/streams, with
// their provenance in manifest.json) served over HTTP on 127.0.0.1, whole, split at byte
// boundaries (inside UTF-8 characters too) and one byte at a time, through the real adapters.
import { readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anthropic } from "./anthropic";
import { gemini } from "./gemini";
import type { LanguageModel, ModelRequest } from "./language-model";
import { openai } from "./openai";
import { openaiResponses } from "./openai-responses";
import {
  ChatCompletionsRequest,
  GeminiChatCompletionsRequest,
  GenerateContentRequest,
  MessagesRequest,
  ResponsesRequest,
} from "./provider-request-shapes";
import {
  byteByByteFetch,
  DIR,
  type Framing,
  frame,
  manifest,
  type Outcome,
  run,
  splitBytes,
} from "./replay-harness";
import { startWireServer, type WireServer } from "./wire-test-server";

const fast = { maxRetries: 2, initialDelayMs: 1, maxDelayMs: 2 };
const weather = {
  name: "weather",
  description: "The weather at a place.",
  parameters: {
    type: "object" as const,
    properties: { location: { type: "string" } },
    required: ["location"],
  },
};
const request: ModelRequest = {
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "What is the weather in San Francisco?" },
  ],
  tools: [weather],
  maxOutputTokens: 2048,
};

type Factory = (baseURL: string, fetchImpl?: typeof fetch) => LanguageModel;
const viaOpenAI =
  (model: string): Factory =>
  (baseURL, fetchImpl) =>
    openai({
      model,
      baseURL: `${baseURL}/v1`,
      apiKey: "test-key",
      retry: fast,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });
const viaAnthropic =
  (model: string): Factory =>
  (baseURL, fetchImpl) =>
    anthropic({
      model,
      baseURL,
      apiKey: "test-key",
      retry: fast,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });

const viaGemini =
  (model: string): Factory =>
  (baseURL, fetchImpl) =>
    gemini({
      model,
      baseURL: `${baseURL}/v1beta`,
      apiKey: "test-key",
      retry: fast,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });

const viaResponses =
  (model: string): Factory =>
  (baseURL, fetchImpl) =>
    openaiResponses({
      model,
      baseURL: `${baseURL}/v1`,
      apiKey: "test-key",
      retry: fast,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });

interface Case {
  file: string;
  framing: Framing;
  model: Factory;
  requestShape:
    | typeof ChatCompletionsRequest
    | typeof GeminiChatCompletionsRequest
    | typeof MessagesRequest
    | typeof GenerateContentRequest
    | typeof ResponsesRequest;
  expected: Partial<Outcome>;
  /** How many HTTP requests the call makes (more than 1 only when it retries). Default 1. */
  requests?: number;
}

const SIG_CLEAR =
  "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB";
const SIG_TOOL =
  "Eq4CCpIBCBIYAipAM+SGYGx7V1aPBT2LXi5M54elabwLjKMzxMZ7dQBpCn7jCn2ZkTBMgSLasCPWFF+8WMNYFp1xjC6uGZVxY3r8QDIRY2xhdWRlLXNvbm5ldC00LTY4AEIIdGhpbmtpbmdaJDNiOTNhNWRkLTczMDItNDgzZi1hZWFlLTM2MjA3NTU0OGFlMagBh7jq1QYSDNydXz9zcJ0AqizKMBoMWF4MBXod7dF4HVu3IjAqraMrYlluR4bgmuEmWgWhCkVJwHulmGCJQdC/sp1159oNVg2LtQomhtAXeciPrnwqSQ/VQUpZzAJ/SwqeRixWF0cnac6CC/ndDGQq0zwI9Ru9WzH59xuEbule/yBisuGwiyR6WwsfKaMDaXb51Obn56qHuGLD2Np2mOgYAQ==";
const SIG_GEMINI =
  "EpEgCo4gAb4+9vvWwdN+NkNiCCwrqvFI8uf9IiD2A47Bm4Sga0kUTm4e/QuEnsZnNuSXJaINVVvcoApg6YCzMYcXrBNlwWW71iY4l9+z60D5qPsZeG8VFWJoWwXF";
const SF = { location: "San Francisco" };

const cases: Case[] = [
  {
    file: "openai-responses-tool-call.chunks.txt",
    framing: "responses",
    model: viaResponses("gpt-5.1"),
    requestShape: ResponsesRequest,
    expected: {
      text: "",
      calls: [{ id: "call_2FQdm3Br7Qb35YUBSkDR7kue", name: "get_weather", arguments: { city: "Beijing" } }],
      finish: { reason: "tool_calls", usage: { inputTokens: 45, outputTokens: 25 } },
    },
  },
  {
    file: "openai-responses-reasoning-text.derived.chunks.txt",
    framing: "responses",
    model: viaResponses("o4-mini"),
    requestShape: ResponsesRequest,
    expected: {
      text: "Order A1 ships tomorrow — café ☕.",
      reasoningText: "**Checking the order**",
      parts: [
        {
          type: "openai.reasoning",
          item: expect.objectContaining({
            type: "reasoning",
            id: "rs_68c2e1f1b2c48190a3e5",
            encrypted_content: expect.stringMatching(/^gAAAAA/),
          }),
        },
      ],
      calls: [],
      finish: { reason: "stop", usage: { inputTokens: 120, outputTokens: 210 } },
    },
  },
  {
    file: "google-text.chunks.txt",
    framing: "gemini",
    model: viaGemini("gemini-3-pro-preview"),
    requestShape: GenerateContentRequest,
    expected: {
      text: 'There are **3** "r"s in strawberry.\n\nst**r**awbe**rr**y',
      calls: [],
      finish: { reason: "stop", usage: { inputTokens: 9, outputTokens: 23 + 185 } },
    },
  },
  {
    file: "google-tool-call-gemini3.chunks.txt",
    framing: "gemini",
    model: viaGemini("gemini-3-pro-preview"),
    requestShape: GenerateContentRequest,
    expected: {
      text: "",
      parts: [
        {
          type: "google.thought_signature",
          toolCallId: expect.stringMatching(/^call_[0-9a-f]{16}$/),
          signature: expect.stringMatching(/^EpEgCo4gAb4\+9vvWwdN\+NkNiCC[A-Za-z0-9+/]+KivQw3YcJ1FX$/),
        },
      ],
      calls: [{ id: expect.stringMatching(/^call_[0-9a-f]{16}$/), name: "weather", arguments: SF }],
      finish: { reason: "tool_calls", usage: { inputTokens: 29, outputTokens: 15 + 804 } },
    },
  },
  {
    file: "anthropic-message-delta-input-tokens.chunks.txt",
    framing: "anthropic",
    model: viaAnthropic("claude-opus-4-5"),
    requestShape: MessagesRequest,
    expected: {
      text: "pong",
      calls: [],
      finish: { reason: "stop", usage: { inputTokens: 61, outputTokens: 2 } },
    },
  },
  {
    file: "anthropic-refusal.chunks.txt",
    framing: "anthropic",
    model: viaAnthropic("claude-fable-5"),
    requestShape: MessagesRequest,
    expected: { text: "", finish: { reason: "refusal", usage: { inputTokens: 18, outputTokens: 5 } } },
  },
  {
    file: "anthropic-clear-thinking.chunks.txt",
    framing: "anthropic",
    model: viaAnthropic("claude-sonnet-4-5"),
    requestShape: MessagesRequest,
    expected: {
      text: "925 ÷ 5 = 185",
      reasoningText: "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
      parts: [
        {
          type: "anthropic.thinking",
          thinking: "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
          signature: SIG_CLEAR,
        },
      ],
      finish: { reason: "stop", usage: { inputTokens: 69, outputTokens: 53 } },
    },
  },
  {
    file: "anthropic-tool-no-args.chunks.txt",
    framing: "anthropic",
    model: viaAnthropic("claude-sonnet-4-5"),
    requestShape: MessagesRequest,
    expected: {
      text: "I'll update the issue list for you.",
      calls: [{ id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", name: "updateIssueList", arguments: {} }],
      finish: { reason: "tool_calls", usage: { inputTokens: 565, outputTokens: 48 } },
    },
  },
  {
    file: "anthropic-thinking-tool-call.derived.chunks.txt",
    framing: "anthropic",
    model: viaAnthropic("claude-sonnet-4-6"),
    requestShape: MessagesRequest,
    expected: {
      text: "\n\n",
      parts: [
        {
          type: "anthropic.thinking",
          thinking: "The user wants me to call checkSandboxErrors immediately.",
          signature: SIG_TOOL,
        },
      ],
      calls: [{ id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", name: "checkSandboxErrors", arguments: {} }],
      finish: { reason: "tool_calls", usage: { inputTokens: 599, outputTokens: 59 } },
    },
  },
  {
    file: "azure-text.chunks.txt",
    framing: "openai",
    model: viaOpenAI("gpt-4"),
    requestShape: ChatCompletionsRequest,
    expected: {
      text: "Hello World",
      calls: [],
      finish: { reason: "stop", usage: { inputTokens: 15, outputTokens: 5 } },
    },
  },
  {
    file: "mistral-tool-call.chunks.txt",
    framing: "openai",
    model: viaOpenAI("mistral-small-latest"),
    requestShape: ChatCompletionsRequest,
    expected: {
      text: "",
      calls: [{ id: "gSIMJiOkT", name: "weather", arguments: SF }],
      finish: { reason: "tool_calls", usage: { inputTokens: 124, outputTokens: 22 } },
    },
  },
  {
    file: "deepseek-tool-call.chunks.txt",
    framing: "openai",
    model: viaOpenAI("deepseek-v4-flash"),
    requestShape: ChatCompletionsRequest,
    expected: {
      text: "",
      reasoningText: "The user asks about the weather in San Francisco. I should use the weather tool.",
      calls: [{ id: "call_00_IhCAliIHtM9gKpgfqbBV9873", name: "weather", arguments: SF }],
      finish: { reason: "tool_calls", usage: { inputTokens: 374, outputTokens: 61 } },
    },
  },
  {
    file: "deepseek-tool-calls-no-index.derived.chunks.txt",
    framing: "openai",
    model: viaOpenAI("deepseek-v4-flash"),
    requestShape: ChatCompletionsRequest,
    expected: {
      calls: [
        { id: "call_00_IhCAliIHtM9gKpgfqbBV9873", name: "weather", arguments: SF },
        { id: "call_01_Xq7mJ2oVb3nLr8sT5yWc1Ab9", name: "weather", arguments: { location: "Paris" } },
      ],
      finish: { reason: "tool_calls", usage: { inputTokens: 374, outputTokens: 61 } },
    },
  },
  {
    file: "openai-refusal.derived.chunks.txt",
    framing: "openai",
    model: viaOpenAI("gpt-4o"),
    requestShape: ChatCompletionsRequest,
    expected: {
      text: "",
      refusal: "I'm sorry, I can't assist with that request.",
      finish: { reason: "refusal", usage: { inputTokens: 17, outputTokens: 10 } },
    },
  },
  {
    file: "ollama-tool-call-stop.derived.chunks.txt",
    framing: "openai",
    model: viaOpenAI("qwen2.5-coder:7b-instruct-q8_0"),
    requestShape: ChatCompletionsRequest,
    expected: {
      text: "",
      calls: [{ id: "call_lbcjwr0u", name: "run_command", arguments: { command: "ls -a" } }],
      finish: { reason: "tool_calls", usage: { inputTokens: 204, outputTokens: 22 } },
    },
  },
  {
    file: "openrouter-error-after-length.derived.chunks.txt",
    framing: "openai",
    model: viaOpenAI("google/gemini-2.5-flash"),
    requestShape: ChatCompletionsRequest,
    expected: { text: "", error: { code: "bad_request", status: 400 } },
    requests: 1,
  },
  {
    file: "gemini-openai-tool-call-signature.derived.chunks.txt",
    framing: "openai",
    model: viaOpenAI("gemini-3-pro-preview"),
    requestShape: GeminiChatCompletionsRequest,
    expected: {
      parts: [
        {
          type: "google.thought_signature",
          toolCallId: "function-call-12402874931946010245",
          signature: SIG_GEMINI,
        },
      ],
      calls: [{ id: "function-call-12402874931946010245", name: "weather", arguments: SF }],
      finish: { reason: "tool_calls", usage: { inputTokens: 29, outputTokens: 15 } },
    },
  },
];

let server: WireServer;
beforeAll(async () => {
  server = await startWireServer();
});
afterAll(async () => {
  await server.close();
});

describe("the recorded streams", () => {
  it("are each listed in the manifest with their provenance, and each is replayed below", () => {
    const files = readdirSync(DIR).filter((name) => name.endsWith(".chunks.txt"));
    expect(new Set(manifest.streams.map((s) => s.file))).toEqual(new Set(files));
    for (const stream of manifest.streams) {
      const source = stream.kind === "recorded" ? stream.source : stream.derivedFrom;
      if (stream.kind === "recorded" || source) {
        expect(source, stream.file).toMatchObject({
          repository: expect.stringMatching(/^[\w.-]+\/[\w.-]+$/),
          path: expect.any(String),
          commit: expect.stringMatching(/^[0-9a-f]{40}$/),
          licence: expect.any(String),
        });
      }
      if (stream.kind === "derived") expect(stream.change, stream.file).toEqual(expect.any(String));
    }
    expect(new Set(cases.map((c) => c.file))).toEqual(new Set(files));
  });

  it("cover every provider docs/models.md claims", () => {
    const providers = new Set(manifest.streams.map((s) => s.provider));
    for (const claimed of [
      "openai-responses",
      "ollama",
      "openai",
      "azure",
      "anthropic",
      "mistral",
      "deepseek",
      "openrouter",
      "gemini-openai",
    ]) {
      expect(providers, claimed).toContain(claimed);
    }
  });
});

describe.each(cases)("$file", (c) => {
  const wire = () => frame(c.file, c.framing);

  it("replays whole over HTTP, sending a body of the provider's published request shape", async () => {
    const before = server.requests.length;
    const replies = Array.from({ length: c.requests ?? 1 }, () => ({ chunks: [wire()] }));
    server.reply(...replies);
    const outcome = await run(c.model(server.url), request);
    expect(outcome).toMatchObject(c.expected);
    const sent = server.requests.slice(before);
    expect(sent).toHaveLength(c.requests ?? 1);
    const parsed = c.requestShape.safeParse(sent[0]!.body);
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it("replays split at byte boundaries, inside UTF-8 characters too", async () => {
    const bytes = new TextEncoder().encode(wire());
    for (const seed of [1, 2]) {
      server.reply(
        ...Array.from({ length: c.requests ?? 1 }, () => ({ chunks: splitBytes(bytes, seed), pauseMs: 1 })),
      );
      expect(await run(c.model(server.url), request), `seed ${seed}`).toMatchObject(c.expected);
    }
  });

  it("replays one byte per read", async () => {
    const outcome = await run(c.model("http://127.0.0.1:9", byteByByteFetch(wire())), request);
    expect(outcome).toMatchObject(c.expected);
  });
});
