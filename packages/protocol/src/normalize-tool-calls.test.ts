import { describe, expect, it } from "vitest";
import toolCallVectors from "../vectors/tool-calls.json";
import { ProtocolError, ToolCallFormatError } from "./errors";
import {
  detectToolCallFormat,
  normalizeToolCall,
  normalizeToolCalls,
  parseToolArguments,
} from "./normalize-tool-calls";
import { NormalizedToolCallSchema } from "./tool-call";

function thrownBy(fn: () => unknown): ToolCallFormatError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ToolCallFormatError) return error;
    throw error;
  }
  throw new Error("expected a ToolCallFormatError");
}

describe("detectToolCallFormat", () => {
  it.each([
    [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }, "openai-chat"],
    [{ type: "function_call", call_id: "c", name: "f", arguments: "{}" }, "openai-responses"],
    [{ type: "tool_use", id: "t", name: "f", input: {} }, "anthropic"],
    [{ functionCall: { name: "f", args: {} } }, "gemini"],
    [{ id: "c", name: "f", arguments: {} }, "normalized"],
    [{ name: "f" }, "normalized"],
    [{ type: "text", text: "hi" }, null],
    [{ type: "thinking", thinking: "hm" }, null],
    [{ type: "reasoning", summary: [] }, null],
    [{ text: "hi" }, null],
    [{ inlineData: { mimeType: "image/png", data: "" } }, null],
    [{ thoughtSignature: "x" }, null],
    [{ params: {} }, "normalized"],
  ])("%j is %s", (entry, format) => {
    expect(detectToolCallFormat(entry)).toBe(format);
  });
});

describe("parseToolArguments", () => {
  it("parses a JSON object and keeps the text as written", () => {
    expect(parseToolArguments('{ "city": "Berlin" }')).toEqual({
      arguments: { city: "Berlin" },
      raw: '{ "city": "Berlin" }',
    });
  });

  it("keeps text that is not JSON, with the parser's reason", () => {
    const parsed = parseToolArguments('{"city": "Ber');
    expect(parsed.arguments).toEqual({});
    expect(parsed.raw).toBe('{"city": "Ber');
    expect(parsed.error).toMatch(/^arguments are not valid JSON: ./);
  });

  it.each([
    ["[1]", "an array"],
    ["null", "null"],
    ["3", "a number"],
    ['"x"', "a string"],
    ["true", "a boolean"],
  ])("refuses JSON %s that is not an object", (text, what) => {
    expect(parseToolArguments(text)).toEqual({
      arguments: {},
      raw: text,
      error: `arguments must be a JSON object, got ${what}`,
    });
  });

  it("takes an object as it is and writes its compact JSON", () => {
    expect(parseToolArguments({ a: 1, b: [true] })).toEqual({
      arguments: { a: 1, b: [true] },
      raw: '{"a":1,"b":[true]}',
    });
  });

  it("treats absent and empty arguments as no arguments", () => {
    expect(parseToolArguments(undefined)).toEqual({ arguments: {}, raw: "{}" });
    expect(parseToolArguments(null)).toEqual({ arguments: {}, raw: "{}" });
    expect(parseToolArguments("")).toEqual({ arguments: {}, raw: "" });
  });

  it("refuses a non-string, non-object value", () => {
    expect(parseToolArguments([1, 2])).toEqual({
      arguments: {},
      raw: "[1,2]",
      error: "arguments must be a JSON object, got an array",
    });
  });
});

describe("normalizeToolCalls", () => {
  it("normalizes each provider's calls to the same shape", () => {
    const expected = { id: "k", index: 0, name: "get_weather", arguments: { city: "Oslo" } };
    const inputs = [
      [{ id: "k", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }],
      [
        {
          type: "function_call",
          id: "fc_1",
          call_id: "k",
          name: "get_weather",
          arguments: '{"city":"Oslo"}',
        },
      ],
      [{ type: "tool_use", id: "k", name: "get_weather", input: { city: "Oslo" } }],
      [{ functionCall: { id: "k", name: "get_weather", args: { city: "Oslo" } } }],
      [
        {
          id: "k",
          index: 0,
          name: "get_weather",
          arguments: { city: "Oslo" },
          rawArguments: '{"city":"Oslo"}',
        },
      ],
    ];
    for (const input of inputs) {
      const [call] = normalizeToolCalls(input);
      expect(call).toMatchObject(expected);
      expect(JSON.parse(call!.rawArguments)).toEqual({ city: "Oslo" });
    }
  });

  it("gives stable ids from the position among calls", () => {
    const input = [
      { type: "text", text: "first" },
      { type: "tool_use", name: "a", input: {} },
      { type: "tool_use", name: "b", input: {} },
    ];
    const first = normalizeToolCalls(input);
    expect(first.map((c) => [c.id, c.index])).toEqual([
      ["call_0", 0],
      ["call_1", 1],
    ]);
    expect(normalizeToolCalls(input)).toEqual(first);
  });

  it("is idempotent on every vector's output", () => {
    for (const vector of toolCallVectors.vectors) {
      if (!("output" in vector) || !vector.output) continue;
      const once = normalizeToolCalls(vector.input);
      expect(normalizeToolCalls(once), vector.name).toEqual(once);
    }
  });

  it("produces calls that fit NormalizedToolCallSchema", () => {
    for (const vector of toolCallVectors.vectors) {
      if (!("output" in vector) || !vector.output) continue;
      for (const call of normalizeToolCalls(vector.input)) {
        expect(NormalizedToolCallSchema.safeParse(call).success, vector.name).toBe(true);
      }
    }
  });

  it("keeps invalid JSON arguments with the error so the model can be told", () => {
    const [call] = normalizeToolCalls([
      { id: "c", type: "function", function: { name: "book", arguments: '{"seats": 2,' } },
    ]);
    expect(call).toMatchObject({ id: "c", name: "book", arguments: {}, rawArguments: '{"seats": 2,' });
    expect(call!.argumentsError).toMatch(/^arguments are not valid JSON/);
  });

  it("accepts whole messages, null, and messages without calls", () => {
    expect(normalizeToolCalls(undefined)).toEqual([]);
    expect(normalizeToolCalls(null)).toEqual([]);
    expect(normalizeToolCalls({ role: "assistant", content: "Hi" })).toEqual([]);
    expect(normalizeToolCalls({ role: "model", parts: [{ text: "Hi" }] })).toEqual([]);
    expect(
      normalizeToolCalls({
        role: "assistant",
        tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: "{}" } }],
      }).map((c) => c.id),
    ).toEqual(["a"]);
  });

  it("rejects a non-object entry with its position, not dropping it", () => {
    const error = thrownBy(() =>
      normalizeToolCalls([
        { type: "tool_use", id: "t", name: "a", input: {} },
        { type: "text", text: "x" },
        7,
      ]),
    );
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error.code).toBe("invalid_tool_call");
    expect(error.index).toBe(2);
    expect(error.path).toBe("2");
    expect(error.message).toBe("tool call at position 2 is a number, expected an object");
  });

  it.each([
    [[null], "tool call at position 0 is null, expected an object"],
    [[[]], "tool call at position 0 is an array, expected an object"],
    ["get_weather", "tool call at position 0 is a string, expected an object"],
    [[{ type: "tool_use", id: "t", input: {} }], "tool call at position 0 (anthropic) has no tool name"],
    [[{ functionCall: { args: {} } }], "tool call at position 0 (gemini) has no tool name"],
    [[{ foo: 1 }], "tool call at position 0 (normalized) has no tool name"],
  ])("rejects %j", (input, message) => {
    expect(thrownBy(() => normalizeToolCalls(input)).message).toBe(message);
  });
});

describe("normalizeToolCall", () => {
  it("normalizes one call at a given index", () => {
    expect(normalizeToolCall({ type: "tool_use", name: "f", input: { a: 1 } }, 3)).toEqual({
      id: "call_3",
      index: 3,
      name: "f",
      arguments: { a: 1 },
      rawArguments: '{"a":1}',
    });
  });

  it("reports the position in the input, which may differ from the index", () => {
    expect(thrownBy(() => normalizeToolCall("x", 0, 4)).index).toBe(4);
  });
});
