import { describe, expect, it } from "vitest";
import { knownTypes } from "./decode-frame";
import { frameJsonSchema, JSON_SCHEMA_DIALECT, toWireJsonSchema } from "./json-schema";
import { ToolResultSchema } from "./tool-call";

describe("frameJsonSchema", () => {
  it("is a oneOf over the channel's frame types, in draft 2020-12", () => {
    const schema = frameJsonSchema("server-to-worker");
    expect(schema.$schema).toBe(JSON_SCHEMA_DIALECT);
    const types = (schema.oneOf as { properties: { type: { const: string } } }[]).map(
      (option) => option.properties.type.const,
    );
    expect(new Set(types)).toEqual(knownTypes("server-to-worker"));
  });

  it("describes what a sender may send: fields with a default are optional", () => {
    const hello = frameJsonSchema("worker-to-server", "worker.hello");
    expect(hello.required).toEqual(["type", "protocol", "apiKey", "workerId", "capacity", "handles"]);
    expect((hello.properties as Record<string, { default?: unknown }>).hosts?.default).toEqual([]);
  });

  it("leaves objects open, so unknown fields stay allowed", () => {
    expect(JSON.stringify(frameJsonSchema("client-to-server"))).not.toContain('"additionalProperties":false');
  });

  it("refuses a type the channel does not have", () => {
    expect(() => frameJsonSchema("client-to-server", "welcome")).toThrow(
      "unknown frame type 'welcome' on client-to-server",
    );
  });
});

describe("toWireJsonSchema", () => {
  it("converts shared types the same way", () => {
    const result = toWireJsonSchema(ToolResultSchema);
    expect(result.required).toEqual(["outcome", "content"]);
  });
});
