import { describe, expect, it } from "vitest";
import { stripStrictNulls, toStrictJsonSchema } from "./openai-strict-schema";

const booking = {
  type: "object",
  properties: {
    flight: { type: "string", description: "Flight number" },
    seats: { type: "integer" },
    passenger: {
      type: "object",
      properties: { name: { type: "string" }, meal: { type: "string", enum: ["veg", "fish"] } },
      required: ["name"],
    },
    extras: { type: "array", items: { type: "object", properties: { code: { type: "string" } } } },
    note: { anyOf: [{ type: "string" }, { type: "number" }] },
    remark: { type: ["string", "null"] },
  },
  required: ["flight"],
};

describe("toStrictJsonSchema", () => {
  it("requires every property, makes the optional ones nullable and closes every object", () => {
    expect(toStrictJsonSchema(booking)).toEqual({
      type: "object",
      properties: {
        flight: { type: "string", description: "Flight number" },
        seats: { type: ["integer", "null"] },
        passenger: {
          anyOf: [
            {
              type: "object",
              properties: {
                name: { type: "string" },
                meal: { type: ["string", "null"], enum: ["veg", "fish", null] },
              },
              required: ["name", "meal"],
              additionalProperties: false,
            },
            { type: "null" },
          ],
        },
        extras: {
          anyOf: [
            {
              type: "array",
              items: {
                type: "object",
                properties: { code: { type: ["string", "null"] } },
                required: ["code"],
                additionalProperties: false,
              },
            },
            { type: "null" },
          ],
        },
        note: { anyOf: [{ type: "string" }, { type: "number" }, { type: "null" }] },
        remark: { type: ["string", "null"] },
      },
      required: ["flight", "seats", "passenger", "extras", "note", "remark"],
      additionalProperties: false,
    });
    // The tool's own schema is left as it was.
    expect(booking.required).toEqual(["flight"]);
  });

  it("gives up on what strict mode cannot express", () => {
    expect(toStrictJsonSchema({ type: "object", properties: { meta: { type: "object" } } })).toBeUndefined();
    expect(
      toStrictJsonSchema({ type: "object", properties: {}, additionalProperties: { type: "string" } }),
    ).toBeUndefined();
    expect(
      toStrictJsonSchema({ type: "object", properties: { a: { allOf: [{ type: "string" }] } } }),
    ).toBeUndefined();
  });
});

describe("stripStrictNulls", () => {
  it("drops the nulls strict mode forced for optional properties, keeping nulls the schema allows", () => {
    expect(
      stripStrictNulls(
        {
          flight: "LH400",
          seats: null,
          passenger: { name: "Ada", meal: null },
          extras: [{ code: null }, { code: "BAG" }],
          note: null,
          remark: null,
        },
        booking,
      ),
    ).toEqual({ flight: "LH400", passenger: { name: "Ada" }, extras: [{}, { code: "BAG" }], remark: null });
  });
});
