import { describe, expect, it } from "vitest";
import { validateArguments } from "./validate-arguments";

const bookFlight = {
  type: "object",
  properties: {
    flight_id: { type: "string", pattern: "^[A-Z]{2}[0-9]{1,4}$", description: "e.g. LH400" },
    seats: { type: "integer", minimum: 1, maximum: 9 },
    cabin: { type: "string", enum: ["economy", "business", "first"], default: "economy" },
  },
  required: ["flight_id", "seats"],
};

function issues(schema: Record<string, unknown>, args: unknown): string[] {
  const result = validateArguments(schema, args);
  if (result.ok) throw new Error(`expected issues, got ${JSON.stringify(result.value)}`);
  return result.issues;
}

describe("validateArguments", () => {
  it("accepts fitting arguments, fills defaults and leaves the input alone", () => {
    const args = { flight_id: "LH400", seats: 2 };
    expect(validateArguments(bookFlight, args)).toEqual({
      ok: true,
      value: { flight_id: "LH400", seats: 2, cabin: "economy" },
    });
    expect(args).toEqual({ flight_id: "LH400", seats: 2 });
  });

  it("words each problem like the zod path does", () => {
    expect(issues(bookFlight, { flight_id: "lh400", seats: 12, cabin: "pony" })).toEqual([
      "flight_id: String should match pattern '^[A-Z]{2}[0-9]{1,4}$'",
      "seats: Input should be less than or equal to 9",
      "cabin: Input should be 'economy', 'business' or 'first'",
    ]);
    expect(issues(bookFlight, { seats: 0 })).toEqual([
      "flight_id: Field required",
      "seats: Input should be greater than or equal to 1",
    ]);
    expect(issues(bookFlight, { flight_id: "LH1", seats: 2.5 })).toEqual([
      "seats: Input should be a valid integer, got a number with a fractional part",
    ]);
    expect(issues(bookFlight, "not an object")).toEqual(["Input should be a valid object"]);
  });

  it("names nested paths with array indices, through $ref", () => {
    const schema = {
      type: "object",
      properties: {
        passengers: { type: "array", items: { $ref: "#/$defs/passenger" }, minItems: 1, maxItems: 3 },
      },
      $defs: {
        passenger: {
          type: "object",
          properties: {
            name: { type: "string", minLength: 2, maxLength: 5 },
            age: { type: "integer", exclusiveMinimum: 0 },
          },
          required: ["name"],
        },
      },
    };
    expect(
      issues(schema, { passengers: [{ name: "Ada" }, { name: "A", age: 0 }, {}, { name: "Abcdef" }] }),
    ).toEqual([
      "passengers: Array should have at most 3 items",
      "passengers.1.name: String should have at least 2 characters",
      "passengers.1.age: Input should be greater than 0",
      "passengers.2.name: Field required",
      "passengers.3.name: String should have at most 5 characters",
    ]);
    expect(issues(schema, { passengers: [] })).toEqual(["passengers: Array should have at least 1 item"]);
  });

  it("summarises a union on one line and reports extra keys by name", () => {
    const schema = {
      type: "object",
      properties: {
        note: { anyOf: [{ type: "string" }, { type: "null" }] },
        size: { type: ["integer", "string"] },
        mode: { const: "fast" },
        email: { type: "string", format: "email" },
        step: { type: "number", multipleOf: 5, exclusiveMaximum: 100 },
        tags: { type: "array", uniqueItems: true },
      },
      additionalProperties: false,
    };
    expect(
      issues(schema, { note: 3, size: true, mode: "slow", email: "nope", step: 101, tags: [1, 1], extra: 1 }),
    ).toEqual([
      "note: Input should be a valid string or null",
      "size: Input should be a valid integer or a valid string",
      "mode: Input should be 'fast'",
      "email: Input should be a valid email address",
      "step: Input should be less than 100",
      "step: Input should be a multiple of 5",
      "tags: Array items should be unique",
      "extra: Extra inputs are not permitted",
    ]);
  });

  it("reads draft-04 boolean exclusive bounds", () => {
    const schema = {
      $schema: "http://json-schema.org/draft-04/schema#",
      type: "object",
      properties: { n: { type: "number", maximum: 9, exclusiveMaximum: true } },
    };
    expect(issues(schema, { n: 9 })).toEqual(["n: Input should be less than 9"]);
  });

  it("keeps a __proto__ key as data", () => {
    const args = JSON.parse('{"__proto__": {"admin": true}, "seats": 1, "flight_id": "LH1"}');
    const result = validateArguments(bookFlight, args);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const value = result.value as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(value.admin).toBeUndefined();
    expect(Object.hasOwn(value, "__proto__")).toBe(true);
  });
});
