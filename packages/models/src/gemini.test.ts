import type { ToolSpec } from "@patchbay/protocol";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { gemini } from "./gemini";
import type { ModelStreamEvent } from "./language-model";
import { ModelError } from "./model-error";
import { GenerateContentRequest } from "./provider-request-shapes";
import { collect, sse, startWireServer, type WireServer } from "./wire-test-server";

let server: WireServer;
beforeEach(async () => {
  server = await startWireServer();
});
afterEach(async () => {
  await server.close();
});

const model = (extra: Partial<Parameters<typeof gemini>[0]> = {}) =>
  gemini({
    model: "gemini-2.5-flash",
    baseURL: `${server.url}/v1beta`,
    apiKey: "g-key",
    retry: { initialDelayMs: 1 },
    ...extra,
  });
const hi = { messages: [{ role: "user" as const, content: "hi" }], tools: [] };
const text = sse([
  { candidates: [{ content: { parts: [{ text: "ok" }], role: "model" }, finishReason: "STOP" }] },
]);

async function failure(run: AsyncIterable<ModelStreamEvent>): Promise<ModelError> {
  try {
    await collect(run);
  } catch (error) {
    if (error instanceof ModelError) return error;
    throw error;
  }
  throw new Error("the call did not fail");
}

// A tool of an MCP connector, as its server lists it (zod-to-json-schema output).
const mcpSearch: ToolSpec = {
  name: "search_issues",
  description: "Searches the tracker.",
  parameters: {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: {
      query: { type: "string" },
      state: { type: ["string", "null"], enum: ["open", "closed", null] },
    },
    required: ["query"],
    additionalProperties: false,
  },
};

describe("gemini", () => {
  it("sends an MCP tool's JSON Schema as the Schema subset Gemini accepts", async () => {
    server.reply({ chunks: [text] });
    await collect(model().stream({ ...hi, tools: [mcpSearch] }));
    const body = server.requests[0]!.body;
    const parsed = GenerateContentRequest.safeParse(body);
    expect(parsed.error?.issues).toBeUndefined();
    expect(body.tools[0].functionDeclarations[0].parameters).toEqual({
      type: "object",
      properties: {
        query: { type: "string" },
        state: { type: "string", enum: ["open", "closed"], nullable: true },
      },
      required: ["query"],
    });
  });

  it("reads a bad key (400 API_KEY_INVALID) as authentication, keeping the reason", async () => {
    server.reply({
      status: 400,
      chunks: [
        JSON.stringify({
          error: {
            code: 400,
            message: "API key not valid. Please pass a valid API key.",
            status: "INVALID_ARGUMENT",
            details: [
              {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                reason: "API_KEY_INVALID",
                domain: "googleapis.com",
                metadata: { service: "generativelanguage.googleapis.com" },
              },
            ],
          },
        }),
      ],
    });
    const error = await failure(model().stream(hi));
    expect(error).toMatchObject({ code: "authentication", status: 400, providerCode: "API_KEY_INVALID" });
    expect(error.retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
  });

  it("reads an input over the model's token limit as context_too_long", async () => {
    server.reply({
      status: 400,
      chunks: [
        JSON.stringify({
          error: {
            code: 400,
            message:
              "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            status: "INVALID_ARGUMENT",
          },
        }),
      ],
    });
    const error = await failure(model().stream(hi));
    expect(error).toMatchObject({ code: "context_too_long", providerCode: "INVALID_ARGUMENT" });
  });

  it("caps the reply with maxTokens as generationConfig.maxOutputTokens, and takes a dynamic thinking budget", async () => {
    server.reply({ chunks: [text] }, { chunks: [text] });
    await collect(model({ maxTokens: 100, thinking: { budgetTokens: -1 } }).stream(hi));
    expect(server.requests[0]!.body.generationConfig).toEqual({
      maxOutputTokens: 100,
      thinkingConfig: { thinkingBudget: -1 },
    });
    // The request's own cap wins.
    await collect(model({ maxTokens: 100 }).stream({ ...hi, maxOutputTokens: 20 }));
    expect(server.requests[1]!.body.generationConfig).toEqual({ maxOutputTokens: 20 });
  });

  it("finishes a cut reply as length and a blocked prompt as content_filter", async () => {
    server.reply(
      {
        chunks: [
          sse([
            { candidates: [{ content: { parts: [{ text: "Once upon" }] }, finishReason: "MAX_TOKENS" }] },
          ]),
        ],
      },
      {
        chunks: [
          sse([{ promptFeedback: { blockReason: "SAFETY" }, usageMetadata: { promptTokenCount: 7 } }]),
        ],
      },
    );
    const cut = await collect(model().stream(hi));
    expect(cut.at(-1)).toMatchObject({ type: "finish", reason: "length" });
    const blocked = await collect(model().stream(hi));
    expect(blocked).toEqual([
      { type: "finish", reason: "content_filter", usage: { inputTokens: 7, outputTokens: 0 } },
    ]);
  });
});
