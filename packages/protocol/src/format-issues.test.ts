import { describe, expect, it } from "vitest";
import { z } from "zod";
import { flattenZodIssues, formatZodIssues, issuePath } from "./format-issues";

describe("issuePath", () => {
  it("dots keys and indices", () => {
    expect(issuePath(["tools", 0, "name"])).toBe("tools.0.name");
    expect(issuePath([])).toBe("");
  });
});

describe("formatZodIssues", () => {
  it("writes one line per problem, path first, none for the root", () => {
    const schema = z.object({ a: z.string(), b: z.array(z.number()) });
    const input = { a: 1, b: [1, "x"] };
    const lines = formatZodIssues(schema.safeParse(input).error!, input);
    expect(lines).toEqual([
      "a: Invalid input: expected string, received number",
      "b.1: Invalid input: expected number, received string",
    ]);
    expect(formatZodIssues(z.string().safeParse(5).error!)).toEqual([
      "Invalid input: expected string, received number",
    ]);
  });
});

describe("flattenZodIssues", () => {
  const Shape = z.union([
    z.object({ kind: z.literal("circle"), radius: z.number().positive() }),
    z.object({ kind: z.literal("rect"), width: z.number(), height: z.number() }),
  ]);
  const Doc = z.object({ shapes: z.array(Shape) });

  it("reports the branch whose fields the value has", () => {
    const input = { shapes: [{ kind: "circle", radius: -1 }] };
    const issues = flattenZodIssues(Doc.safeParse(input).error!.issues, input);
    expect(issues.map((i) => issuePath(i.path))).toEqual(["shapes.0.radius"]);
  });

  it("prefers the branch with a wrong value over one with missing fields", () => {
    const input = { shapes: [{ kind: "rect", width: "wide", height: 2 }] };
    const issues = flattenZodIssues(Doc.safeParse(input).error!.issues, input);
    expect(issues.map((i) => issuePath(i.path))).toEqual(["shapes.0.width"]);
  });

  it("falls back to the message when the input is not given", () => {
    const input = { shapes: [{ kind: "circle", radius: "big" }] };
    const issues = flattenZodIssues(Doc.safeParse(input).error!.issues);
    expect(issues.map((i) => issuePath(i.path))).toEqual(["shapes.0.radius"]);
  });

  it("leaves other issues alone", () => {
    const input = { shapes: "none" };
    const issues = flattenZodIssues(Doc.safeParse(input).error!.issues, input);
    expect(issues).toHaveLength(1);
    expect(issues[0]!.code).toBe("invalid_type");
  });
});
