import { describe, expect, it } from "vitest";
import { toGeminiSchema } from "./gemini-schema";
import { GeminiSchema } from "./provider-request-shapes";

// What an MCP server's `tools/list` gives for a tool (zod-to-json-schema output).
const mcpTool = {
  $schema: "http://json-schema.org/draft-07/schema#",
  type: "object",
  properties: {
    query: { type: "string", description: "What to look for", minLength: 1 },
    limit: { type: ["integer", "null"], minimum: 1, maximum: 50, default: 10 },
    mode: { const: "exact" },
    tags: { type: "array", items: { type: "string", format: "uri" }, maxItems: 5 },
    filter: { $ref: "#/$defs/Filter", description: "Narrows the search" },
    when: { anyOf: [{ type: "string", format: "date-time" }, { type: "null" }] },
  },
  required: ["query", "missing"],
  additionalProperties: false,
  $defs: {
    Filter: {
      $id: "Filter",
      type: "object",
      properties: { owner: { type: "string" }, nested: { $ref: "#/$defs/Filter" } },
      additionalProperties: false,
    },
  },
};

describe("toGeminiSchema", () => {
  it("keeps only the keys Gemini's Schema knows, recursively, resolving local $refs", () => {
    const converted = toGeminiSchema(mcpTool);
    expect(GeminiSchema.safeParse(converted).success).toBe(true);
    expect(JSON.stringify(converted)).not.toMatch(/\$schema|additionalProperties|\$defs|\$ref|\$id|default/);
    expect(converted).toMatchObject({
      type: "object",
      required: ["query"],
      properties: {
        query: { type: "string", description: "What to look for", minLength: 1 },
        limit: { type: "integer", nullable: true, minimum: 1, maximum: 50 },
        mode: { type: "string", enum: ["exact"] },
        tags: { type: "array", items: { type: "string" }, maxItems: 5 },
        filter: {
          type: "object",
          description: "Narrows the search",
          properties: { owner: { type: "string" }, nested: { type: "object" } },
        },
        when: { type: "string", format: "date-time", nullable: true },
      },
    });
    // A recursive $ref is cut (as any object) instead of looping.
    expect((converted as any).properties.filter.properties.nested).toEqual({ type: "object" });
    const tree = {
      type: "object",
      properties: { root: { $ref: "#/definitions/Node" } },
      definitions: {
        Node: {
          type: "object",
          properties: { left: { $ref: "#/definitions/Node" }, right: { $ref: "#/definitions/Node" } },
        },
      },
    };
    expect(toGeminiSchema(tree)).toEqual({
      type: "object",
      properties: {
        root: { type: "object", properties: { left: { type: "object" }, right: { type: "object" } } },
      },
    });
  });

  it("turns type lists, oneOf, allOf and non-string enums into what Gemini takes", () => {
    const converted = toGeminiSchema({
      type: "object",
      properties: {
        id: { type: ["string", "integer"] },
        pick: { oneOf: [{ type: "string" }, { type: "number" }] },
        both: {
          allOf: [
            { properties: { a: { type: "string" } } },
            { properties: { b: { type: "number" } }, required: ["b"] },
          ],
        },
        level: { type: "integer", enum: [1, 2, 3], description: "Level" },
        maybe: { enum: ["a", null] },
        pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }] },
      },
    });
    expect(GeminiSchema.safeParse(converted).success).toBe(true);
    expect(converted?.properties).toEqual({
      id: { anyOf: [{ type: "string" }, { type: "integer" }] },
      pick: { anyOf: [{ type: "string" }, { type: "number" }] },
      both: { type: "object", properties: { a: { type: "string" }, b: { type: "number" } }, required: ["b"] },
      level: { type: "integer", description: "Level (one of: 1, 2, 3)" },
      maybe: { type: "string", enum: ["a"], nullable: true },
      pair: { type: "array", items: { anyOf: [{ type: "string" }, { type: "number" }] } },
    });
  });

  it("declares a function without parameters when its schema has no properties", () => {
    expect(toGeminiSchema({ type: "object", properties: {}, additionalProperties: false })).toBeUndefined();
    expect(toGeminiSchema({ type: "object" })).toBeUndefined();
    expect(toGeminiSchema(undefined)).toBeUndefined();
  });
});
