import { afterEach, describe, expect, it } from "vitest";
import { setPatternEngine } from "./pattern-engine";
import { validateArguments } from "./validate-arguments";

// An engine that records what it compiled and refuses lookaheads, the way RE2 does.
function recordingEngine() {
  const compiled: string[] = [];
  const tested: string[] = [];
  return {
    compiled,
    tested,
    engine: {
      compile(source: string) {
        if (source.includes("(?=")) throw new SyntaxError("lookahead not supported");
        compiled.push(source);
        const regex = new RegExp(source, "u");
        return {
          test: (input: string) => {
            tested.push(input);
            return regex.test(input);
          },
        };
      },
    },
  };
}

afterEach(() => setPatternEngine(undefined));

describe("setPatternEngine", () => {
  it("runs pattern keywords, nested and behind $ref, in the installed engine with the usual wording", () => {
    const { engine, compiled, tested } = recordingEngine();
    setPatternEngine(engine);
    const schema = {
      type: "object",
      $defs: { code: { type: "string", pattern: "^[A-Z]{3}$" } },
      properties: {
        from: { $ref: "#/$defs/code" },
        note: { type: "string", pattern: "^n", format: "email" },
        kind: { enum: [{ pattern: "not a keyword" }] },
      },
    };
    expect(validateArguments(schema, { from: "LHR", kind: { pattern: "not a keyword" } }).ok).toBe(true);
    expect(validateArguments(schema, { from: "lhr" })).toEqual({
      ok: false,
      issues: ["from: String should match pattern '^[A-Z]{3}$'"],
    });
    const both = validateArguments(schema, { note: "x@example.com" });
    expect(both).toEqual({ ok: false, issues: ["note: String should match pattern '^n'"] });
    expect(compiled.sort()).toEqual(["^[A-Z]{3}$", "^n"]);
    expect(tested).toContain("lhr");
  });

  it("leaves a pattern the engine cannot take to the JavaScript engine", () => {
    const { engine, compiled } = recordingEngine();
    setPatternEngine(engine);
    const schema = { type: "object", properties: { a: { type: "string", pattern: "^(?=x)x+$" } } };
    expect(validateArguments(schema, { a: "xx" }).ok).toBe(true);
    expect(validateArguments(schema, { a: "y" }).ok).toBe(false);
    expect(compiled).toEqual([]);
  });

  it("keeps validating correctly after more patterns than the registry holds", () => {
    const { engine } = recordingEngine();
    setPatternEngine(engine);
    const first = { type: "object", properties: { a: { type: "string", pattern: "^first$" } } };
    expect(validateArguments(first, { a: "nope" }).ok).toBe(false);
    for (let i = 0; i < 4_200; i++) {
      validateArguments(
        { type: "object", properties: { a: { type: "string", pattern: `^p${i}$` } } },
        { a: "x" },
      );
    }
    expect(validateArguments(first, { a: "nope" }).ok).toBe(false);
    expect(validateArguments(first, { a: "first" }).ok).toBe(true);
  });
});
