// Multi-round tool conversations replayed from recorded streams: round 2's request must carry what
// the provider requires from round 1 (Anthropic's signed thinking block first, Gemini's thought
// signature on its call), checked against the providers' published request shapes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anthropic } from "./anthropic";
import { gemini } from "./gemini";
import type { LanguageModel, ModelMessage, ModelRequest } from "./language-model";
import { openai } from "./openai";
import { openaiResponses } from "./openai-responses";
import {
  GeminiChatCompletionsRequest,
  GenerateContentRequest,
  MessagesRequest,
  messagesRuleProblems,
  ResponsesRequest,
} from "./provider-request-shapes";
import { frame, type Outcome, run } from "./replay-harness";
import { startWireServer, type WireServer } from "./wire-test-server";

let server: WireServer;
beforeAll(async () => {
  server = await startWireServer();
});
afterAll(async () => {
  await server.close();
});

const fast = { maxRetries: 0 };

/** Runs round 1 from `first`, answers every call, and runs round 2 from `second`. */
async function twoRounds(
  model: LanguageModel,
  base: ModelRequest,
  first: string,
  second: string,
): Promise<{ round1: Outcome; round2: Outcome; body: any }> {
  server.reply({ chunks: [first] }, { chunks: [second] });
  const before = server.requests.length;
  const round1 = await run(model, base);
  const messages: ModelMessage[] = [
    ...base.messages,
    {
      role: "assistant",
      content: round1.text,
      toolCalls: round1.calls.map((call, index) => ({
        id: call.id,
        index,
        name: call.name,
        arguments: call.arguments,
        rawArguments: JSON.stringify(call.arguments),
      })),
      reasoning: round1.parts,
    },
    ...round1.calls.map(
      (call): ModelMessage => ({
        role: "tool",
        toolCallId: call.id,
        toolName: call.name,
        content: { text: "No errors.", images: [] },
      }),
    ),
  ];
  const round2 = await run(model, { ...base, messages });
  expect(server.requests.length - before).toBe(2);
  return { round1, round2, body: server.requests.at(-1)!.body };
}

describe("a tool round with thinking enabled", () => {
  it("sends Claude's signed thinking block back first, without the whitespace-only text, and the API's rules hold", async () => {
    const model = anthropic({
      model: "claude-sonnet-4-6",
      baseURL: server.url,
      apiKey: "test-key",
      retry: fast,
      thinking: { budgetTokens: 1024 },
    });
    const base: ModelRequest = {
      messages: [{ role: "user", content: "Check the sandbox for errors now." }],
      tools: [
        { name: "checkSandboxErrors", description: "Lists sandbox errors.", parameters: { type: "object" } },
      ],
      maxOutputTokens: 4096,
    };
    const { round1, round2, body } = await twoRounds(
      model,
      base,
      frame("anthropic-thinking-tool-call.derived.chunks.txt", "anthropic"),
      frame("anthropic-message-delta-input-tokens.chunks.txt", "anthropic"),
    );
    expect(round1.calls.map((c) => c.name)).toEqual(["checkSandboxErrors"]);
    expect(round2.text).toBe("pong");

    const parsed = MessagesRequest.safeParse(body);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(messagesRuleProblems(parsed.data!)).toEqual([]);
    expect(body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    expect(body.messages[1]).toEqual({
      role: "assistant",
      content: [
        {
          type: "thinking",
          thinking: "The user wants me to call checkSandboxErrors immediately.",
          signature: (round1.parts[0] as { signature: string }).signature,
        },
        { type: "tool_use", id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9", name: "checkSandboxErrors", input: {} },
      ],
    });
    expect(body.messages[2].content[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "toolu_017R7ACrx7NF7sLDDtvdQ1u9",
    });
  });

  it("sends Gemini's thought signature back on the call it came with (OpenAI-compatible endpoint)", async () => {
    const model = openai({
      model: "gemini-3-pro-preview",
      baseURL: `${server.url}/v1beta/openai`,
      apiKey: "test-key",
      retry: fast,
    });
    const base: ModelRequest = {
      messages: [{ role: "user", content: "Weather in San Francisco?" }],
      tools: [{ name: "weather", description: "Weather.", parameters: { type: "object" } }],
    };
    const { round1, body } = await twoRounds(
      model,
      base,
      frame("gemini-openai-tool-call-signature.derived.chunks.txt", "openai"),
      frame("azure-text.chunks.txt", "openai"),
    );
    const signature = round1.parts[0];
    expect(signature).toMatchObject({ type: "google.thought_signature" });
    const parsed = GeminiChatCompletionsRequest.safeParse(body);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(body.messages[1].tool_calls).toEqual([
      {
        id: "function-call-12402874931946010245",
        type: "function",
        function: { name: "weather", arguments: '{"location":"San Francisco"}' },
        extra_content: { google: { thought_signature: (signature as { signature: string }).signature } },
      },
    ]);
    expect(body.messages[2]).toEqual({
      role: "tool",
      tool_call_id: "function-call-12402874931946010245",
      content: "No errors.",
    });
  });
});

describe("a Gemini 3 tool round (native API)", () => {
  it("sends the thought signature back on the functionCall part, with the functionResponse after it", async () => {
    const model = gemini({
      model: "gemini-3-pro-preview",
      baseURL: `${server.url}/v1beta`,
      apiKey: "k",
      retry: fast,
    });
    const base: ModelRequest = {
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in San Francisco?" },
      ],
      tools: [{ name: "weather", description: "Weather.", parameters: { type: "object" } }],
    };
    const { round1, round2, body } = await twoRounds(
      model,
      base,
      frame("google-tool-call-gemini3.chunks.txt", "gemini"),
      frame("google-text.chunks.txt", "gemini"),
    );
    expect(round2.text).toMatch(/^There are \*\*3\*\*/);
    const signature = (round1.parts[0] as { signature: string }).signature;
    expect(signature).toHaveLength(5488);
    const parsed = GenerateContentRequest.safeParse(body);
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(server.requests.at(-1)!.path).toBe(
      "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse",
    );
    expect(body.systemInstruction).toEqual({ parts: [{ text: "Be brief." }] });
    expect(body.contents).toEqual([
      { role: "user", parts: [{ text: "Weather in San Francisco?" }] },
      {
        role: "model",
        parts: [
          {
            functionCall: { name: "weather", args: { location: "San Francisco" } },
            thoughtSignature: signature,
          },
        ],
      },
      {
        role: "user",
        parts: [{ functionResponse: { name: "weather", response: { result: "No errors." } } }],
      },
    ]);
  });
});

describe("a tool round on OpenAI's Responses API (stateless)", () => {
  it("sends the reasoning item back unchanged before the function_call, then its output", async () => {
    const model = openaiResponses({
      model: "o4-mini",
      baseURL: `${server.url}/v1`,
      apiKey: "k",
      retry: fast,
    });
    const base: ModelRequest = {
      messages: [{ role: "user", content: "Weather in Beijing?" }],
      tools: [{ name: "get_weather", description: "Get weather", parameters: { type: "object" } }],
    };
    // The reasoning item of a recorded reasoning reply, then a recorded function call.
    server.reply({ chunks: [frame("openai-responses-reasoning-text.derived.chunks.txt", "responses")] });
    const thought = await run(model, base);
    const { round1, body } = await twoRounds(
      model,
      base,
      frame("openai-responses-tool-call.chunks.txt", "responses"),
      frame("openai-responses-reasoning-text.derived.chunks.txt", "responses"),
    );
    round1.parts.unshift(...thought.parts);
    const withReasoning = await (async () => {
      server.reply({ chunks: [frame("openai-responses-reasoning-text.derived.chunks.txt", "responses")] });
      const call = round1.calls[0]!;
      await run(model, {
        ...base,
        messages: [
          ...base.messages,
          {
            role: "assistant",
            content: "",
            toolCalls: [{ ...call, index: 0, rawArguments: JSON.stringify(call.arguments) }],
            reasoning: round1.parts,
          },
          { role: "tool", toolCallId: call.id, toolName: call.name, content: { text: "Sunny", images: [] } },
        ],
      });
      return server.requests.at(-1)!.body;
    })();
    for (const sent of [body, withReasoning]) {
      const parsed = ResponsesRequest.safeParse(sent);
      expect(parsed.error?.issues ?? []).toEqual([]);
      expect(sent).toMatchObject({ store: false, include: ["reasoning.encrypted_content"] });
    }
    expect(body.input.slice(1)).toEqual([
      {
        type: "function_call",
        call_id: "call_2FQdm3Br7Qb35YUBSkDR7kue",
        name: "get_weather",
        arguments: '{"city":"Beijing"}',
      },
      { type: "function_call_output", call_id: "call_2FQdm3Br7Qb35YUBSkDR7kue", output: "No errors." },
    ]);
    expect(
      withReasoning.input.map((item: { type?: string; role?: string }) => item.type ?? item.role),
    ).toEqual(["user", "reasoning", "function_call", "function_call_output"]);
    expect(withReasoning.input[1]).toEqual((thought.parts[0] as { item: unknown }).item);
  });
});

describe("an Anthropic stream whose last event has no trailing blank line", () => {
  it("still finishes the reply it already streamed", async () => {
    const model = anthropic({
      model: "claude-sonnet-4-5",
      baseURL: server.url,
      apiKey: "test-key",
      retry: fast,
    });
    server.reply({
      chunks: [frame("anthropic-tool-no-args.chunks.txt", "anthropic", { noTrailingBlankLine: true })],
    });
    const outcome = await run(model, { messages: [{ role: "user", content: "Update." }], tools: [] });
    expect(outcome.error).toBeUndefined();
    expect(outcome.calls.map((c) => c.name)).toEqual(["updateIssueList"]);
    expect(outcome.finish).toEqual({ reason: "tool_calls", usage: { inputTokens: 565, outputTokens: 48 } });
  });
});
