import { describe, expect, it } from "vitest";
import { z } from "zod";
import { closest, normalizeKeys, snakeCase } from "./config-keys";

describe("config keys", () => {
  it("spells keys in snake_case, acronyms included", () => {
    expect(["baseURL", "toolCalls", "apiKeyEnv", "max_tool_rounds", "delayMs"].map(snakeCase)).toEqual([
      "base_url",
      "tool_calls",
      "api_key_env",
      "max_tool_rounds",
      "delay_ms",
    ]);
  });

  it("suggests a close key and nothing for a far one", () => {
    expect(closest("max_tool_round", ["max_tool_rounds", "mode"])).toBe("max_tool_rounds");
    expect(closest("intructions", ["instructions", "model"])).toBe("instructions");
    expect(closest("colour", ["instructions", "model"])).toBeUndefined();
  });

  it("maps snake_case keys to the schema's names, leaves record keys alone and reports camelCase", () => {
    const schema = z.strictObject({
      fooBar: z.strictObject({ innerKey: z.number() }).optional(),
      headers: z.record(z.string(), z.string()).optional(),
      list: z.array(z.strictObject({ itemName: z.string() })).default([]),
    });
    const { value, report } = normalizeKeys(
      { foo_bar: { innerKey: 1 }, headers: { "X-Some_Header": "a" }, list: [{ item_name: "x" }], fooBaz: 1 },
      schema,
    );
    expect(value).toEqual({
      fooBar: { innerKey: 1 },
      headers: { "X-Some_Header": "a" },
      list: [{ itemName: "x" }],
      fooBaz: 1,
    });
    expect(report.deprecated).toEqual([
      { path: ["foo_bar", "innerKey"], written: "innerKey", preferred: "inner_key" },
    ]);
    expect(report.suggestions.get("fooBaz")).toBe("foo_bar");
  });
});
