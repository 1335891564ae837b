import type { ToolSpec } from "@patchbay/protocol";
import { validateArguments } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { DEFAULT_SERVER_LIMITS } from "../config/limits";
import { checkDeclaredTools, useLinearPatterns } from "./declared-tools";

const tool = (parameters: Record<string, unknown>): ToolSpec => ({
  name: "t",
  description: "d",
  parameters: { type: "object", ...parameters },
});

function refusal(tools: ToolSpec[], limits = DEFAULT_SERVER_LIMITS) {
  try {
    checkDeclaredTools(tools, limits);
    return undefined;
  } catch (error) {
    const e = error as { code: string; path: string; message: string };
    return { code: e.code, path: e.path, message: e.message };
  }
}

describe("checkDeclaredTools", () => {
  it("takes ordinary schemas, local $refs and patterns RE2 runs", () => {
    const spec = tool({
      $defs: { code: { type: "string", pattern: "^[A-Z]{3}$" } },
      properties: { from: { $ref: "#/$defs/code" }, to: { $ref: "#/$defs/code" }, n: { enum: [1, 2, 3] } },
    });
    expect(refusal([spec])).toBeUndefined();
  });

  it.each([
    [
      "an invalid pattern",
      { properties: { a: { type: "string", pattern: "([a-z" } } },
      "tools.0.parameters.properties.a.pattern",
      "missing",
    ],
    [
      "a backreference",
      { properties: { a: { type: "string", pattern: "(a)\\1" } } },
      "tools.0.parameters.properties.a.pattern",
      "RE2",
    ],
    [
      "patternProperties",
      { patternProperties: { "^(a|a)*$": { type: "string" } } },
      "tools.0.parameters.patternProperties",
      "patternProperties",
    ],
    [
      "$ref to the root",
      { properties: { a: { $ref: "#" } } },
      "tools.0.parameters.properties.a.$ref",
      "loops",
    ],
    [
      "a $ref loop",
      {
        $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } },
        properties: { x: { $ref: "#/$defs/a" } },
      },
      "$ref",
      "loops",
    ],
    [
      "a remote $ref",
      { properties: { a: { $ref: "https://example.com/s.json" } } },
      "tools.0.parameters.properties.a.$ref",
      "not local",
    ],
    [
      "a dangling $ref",
      { properties: { a: { $ref: "#/$defs/nothing" } } },
      "tools.0.parameters.properties.a.$ref",
      "points at nothing",
    ],
    [
      "a 200,000-value enum",
      { properties: { a: { enum: Array.from({ length: 200_000 }, (_, i) => i) } } },
      "tools.0.parameters.properties.a.enum",
      "maxEnumValues",
    ],
  ])("refuses %s with invalid_tool_spec and the path", (_what, parameters, path, words) => {
    const limits = { ...DEFAULT_SERVER_LIMITS, maxSchemaBytes: 10 * 1024 * 1024 };
    const refused = refusal([tool(parameters)], limits);
    expect(refused?.code).toBe("invalid_tool_spec");
    expect(refused?.path).toContain(path);
    expect(refused?.message).toContain(words);
  });

  it("refuses too many tools, too large and too deep schemas, naming the limit", () => {
    const many = Array.from({ length: 3 }, () => tool({}));
    expect(refusal(many, { ...DEFAULT_SERVER_LIMITS, maxToolsPerSession: 2 })?.message).toContain(
      "maxToolsPerSession",
    );
    expect(
      refusal([tool({ description: "x".repeat(200) })], { ...DEFAULT_SERVER_LIMITS, maxSchemaBytes: 100 })
        ?.path,
    ).toBe("tools.0.parameters");
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 40; i++) deep = { type: "object", properties: { a: deep } };
    expect(refusal([tool(deep)])?.message).toContain("maxSchemaDepth");
  });

  it("checks arguments against ^(a|a)*$ in linear time once RE2 is installed", () => {
    useLinearPatterns();
    const schema = { type: "object", properties: { code: { type: "string", pattern: "^(a|a)*$" } } };
    const started = performance.now();
    const result = validateArguments(schema, { code: `${"a".repeat(50_000)}!` });
    // Backtracking would not finish at all on 50,000 characters; RE2 takes a few ms. The bound is
    // wide because the suite runs on two busy cores, where a pause of a few hundred ms happens.
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(result).toEqual({ ok: false, issues: ["code: String should match pattern '^(a|a)*$'"] });
    expect(validateArguments(schema, { code: "aaaa" }).ok).toBe(true);
  });
});
