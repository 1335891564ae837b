import { describe, expect, it } from "vitest";
import { validateArguments } from "./validate-arguments";
import { compileFastCheck, validateArgumentsFast } from "./validate-arguments-fast";

const flat = {
  type: "object",
  description: "Book a seat",
  properties: {
    flight_id: { type: "string", minLength: 3, maxLength: 6, description: "e.g. LH400" },
    seats: { type: "integer", minimum: 1, maximum: 9 },
    cabin: { type: "string", enum: ["economy", "business"], default: "economy" },
    note: { type: ["string", "null"] },
    price: { type: "number", maximum: 1000 },
    urgent: { type: "boolean", const: true },
  },
  required: ["flight_id", "seats"],
  additionalProperties: false,
};

const open = {
  type: "object",
  properties: { order_id: { type: "string" } },
  required: ["order_id"],
};

// Values around every edge the quick check knows, and some it leaves to the full validator.
const samples: unknown[] = [
  { flight_id: "LH400", seats: 2 },
  { flight_id: "LH400", seats: 2, cabin: "business", note: null, price: 99.5, urgent: true },
  { flight_id: "LH", seats: 2 },
  { flight_id: "LH4000X", seats: 2 },
  { flight_id: "😀😀😀", seats: 2 },
  { flight_id: "😀😀😀😀", seats: 2 },
  { flight_id: "LH400", seats: 0 },
  { flight_id: "LH400", seats: 10 },
  { flight_id: "LH400", seats: 2.5 },
  { flight_id: "LH400", seats: "2" },
  { flight_id: "LH400", seats: Number.NaN },
  { flight_id: "LH400", seats: Number.POSITIVE_INFINITY },
  { flight_id: "LH400", seats: 2, cabin: "first" },
  { flight_id: "LH400", seats: 2, note: 3 },
  { flight_id: "LH400", seats: 2, price: 1000.5 },
  { flight_id: "LH400", seats: 2, urgent: false },
  { flight_id: "LH400", seats: 2, extra: 1 },
  { flight_id: "LH400", seats: 2, cabin: { nested: true } },
  { flight_id: "LH400" },
  {},
  { order_id: "A1001" },
  { order_id: "A1001", extra: { deep: [1, 2] } },
  { order_id: 1001 },
  JSON.parse('{"order_id":"A1","__proto__":{"x":1}}'),
  [],
  null,
  "text",
];

describe("validateArgumentsFast", () => {
  it("answers exactly what validateArguments answers", () => {
    for (const schema of [flat, open]) {
      for (const args of samples) {
        validateArgumentsFast(schema, {}); // the first call compiles the quick check
        expect(validateArgumentsFast(schema, args), JSON.stringify(args)).toEqual(
          validateArguments(schema, args),
        );
      }
    }
  });

  it("copies the arguments and fills defaults, leaving the input alone", () => {
    const args = { flight_id: "LH400", seats: 2 };
    validateArgumentsFast(flat, args);
    const result = validateArgumentsFast(flat, args);
    expect(result).toEqual({ ok: true, value: { flight_id: "LH400", seats: 2, cabin: "economy" } });
    expect(result.ok && result.value).not.toBe(args);
    expect(args).toEqual({ flight_id: "LH400", seats: 2 });
  });

  it("takes the quick way for flat schemas only", () => {
    expect(compileFastCheck(flat)).toBeTypeOf("function");
    expect(compileFastCheck(open)).toBeTypeOf("function");
    for (const schema of [
      { type: "object", properties: { id: { type: "string", pattern: "^A" } } },
      { type: "object", properties: { id: { type: "string", format: "email" } } },
      { type: "object", properties: { tags: { type: "array", items: { type: "string" } } } },
      { type: "object", properties: { id: { $ref: "#/$defs/id" } }, $defs: { id: { type: "string" } } },
      { type: "object", properties: { id: { anyOf: [{ type: "string" }, { type: "number" }] } } },
      { type: "object", properties: { n: { type: "number", exclusiveMinimum: 0 } } },
      { type: "object", properties: { n: { type: "number", default: [1] } } },
      { type: "object", properties: {}, patternProperties: { "^x": { type: "string" } } },
      { type: "object", additionalProperties: { type: "string" } },
    ]) {
      expect(compileFastCheck(schema), JSON.stringify(schema)).toBeUndefined();
    }
  });

  it("still refuses a schema the full validator cannot read, on its first call", () => {
    const unreadable = { type: "object", properties: { id: { $ref: "#/nowhere" } } };
    expect(() => validateArgumentsFast(unreadable, { id: "x" })).toThrow();
  });
});
