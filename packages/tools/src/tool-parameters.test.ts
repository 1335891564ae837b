import { describe, expect, it } from "vitest";
import { z } from "zod";
import * as zm from "zod/mini";
import { z as z3 } from "zod/v3";
import {
  compileParameters,
  isZod3Schema,
  isZod4Schema,
  useJsonSchemaValidator,
  useZodFallback,
} from "./tool-parameters";
import { validateArguments } from "./validate-arguments";
import { compileZodFallback } from "./zod-fallback";

// What the Node entry (index.ts) does; the browser entry leaves it out (tested at the end).
useZodFallback(compileZodFallback);
useJsonSchemaValidator(validateArguments);

async function issues(schema: unknown, args: Record<string, unknown>): Promise<string[]> {
  const result = await compileParameters(schema).parse(args);
  if (result.ok) throw new Error(`expected issues, got ${JSON.stringify(result.value)}`);
  return result.issues;
}

const book4 = z.object({
  flight_id: z.string().regex(/^[A-Z]{2}\d{1,4}$/),
  seats: z.number().int().min(1).max(9),
  cabin: z.enum(["economy", "business", "first"]).default("economy"),
});
const book3 = z3.object({
  flight_id: z3.string().regex(/^[A-Z]{2}\d{1,4}$/),
  seats: z3.number().int().min(1).max(9),
  cabin: z3.enum(["economy", "business", "first"]).default("economy"),
});

describe("schema detection", () => {
  it("tells zod 4 from zod 3 by structure, not by instanceof", () => {
    expect(isZod4Schema(book4)).toBe(true);
    expect(isZod3Schema(book4)).toBe(false);
    expect(isZod3Schema(book3)).toBe(true);
    expect(isZod4Schema(book3)).toBe(false);
    expect(isZod4Schema({ type: "object" })).toBe(false);
    expect(isZod3Schema({ _def: {} })).toBe(false);
    expect(compileParameters(book4).kind).toBe("zod4");
    expect(compileParameters(book3).kind).toBe("zod3");
    expect(compileParameters({ type: "object" }).kind).toBe("json-schema");
  });
});

describe.each([
  ["zod 4", book4],
  ["zod 3", book3],
])("%s arguments", (_label, schema) => {
  it("parses with the schema itself, so defaults apply", async () => {
    expect(await compileParameters(schema).parse({ flight_id: "LH400", seats: 2 })).toEqual({
      ok: true,
      value: { flight_id: "LH400", seats: 2, cabin: "economy" },
    });
  });

  it("words each problem like Pydantic, one line per problem", async () => {
    expect(await issues(schema, { flight_id: "lh400", seats: 12, cabin: "pony" })).toEqual([
      "flight_id: String should match pattern '^[A-Z]{2}\\d{1,4}$'",
      "seats: Input should be less than or equal to 9",
      "cabin: Input should be 'economy', 'business' or 'first'",
    ]);
    expect(await issues(schema, { seats: 0 })).toEqual([
      "flight_id: Field required",
      "seats: Input should be greater than or equal to 1",
    ]);
    expect(await issues(schema, { flight_id: "LH1", seats: 2.5 })).toEqual([
      "seats: Input should be a valid integer, got a number with a fractional part",
    ]);
    expect(await issues(schema, { flight_id: 7, seats: "2" })).toEqual([
      "flight_id: Input should be a valid string",
      "seats: Input should be a valid number",
    ]);
  });
});

describe("zod 4 wording", () => {
  it("covers nested paths with indices, lengths, unions, literals and extra keys", async () => {
    const schema = z
      .object({
        passengers: z.array(z.object({ name: z.string().min(2).max(5), age: z.int().positive() })).min(1),
        code: z.string().length(3),
        kind: z.union([z.string(), z.number()]),
        mode: z.literal("fast"),
        email: z.email(),
        step: z.number().multipleOf(5).lt(100),
        tags: z.array(z.string()).max(2),
        flag: z.boolean(),
        pick: z.discriminatedUnion("t", [z.object({ t: z.literal("a") }), z.object({ t: z.literal("b") })]),
        check: z.number().refine((n) => n > 10),
      })
      .strict();
    expect(
      await issues(schema, {
        passengers: [
          { name: "Ada", age: 30 },
          { name: "A", age: -1 },
          { name: "Abcdef", age: 2.5 },
        ],
        code: "ab",
        kind: true,
        mode: "slow",
        email: "nope",
        step: 101,
        tags: ["a", "b", "c"],
        flag: "yes",
        pick: { t: "c" },
        check: 3,
        extra: 1,
        other: 2,
      }),
    ).toEqual([
      "passengers.1.name: String should have at least 2 characters",
      "passengers.1.age: Input should be greater than 0",
      "passengers.2.name: String should have at most 5 characters",
      "passengers.2.age: Input should be a valid integer, got a number with a fractional part",
      "code: String should have exactly 3 characters",
      "kind: Input should be a valid string or a valid number",
      "mode: Input should be 'fast'",
      "email: Input should be a valid email address",
      "step: Input should be a multiple of 5",
      "step: Input should be less than 100",
      "tags: Array should have at most 2 items",
      "flag: Input should be a valid boolean",
      "pick.t: Input should be 'a' or 'b'",
      "check: Input is not valid",
      "extra: Extra inputs are not permitted",
      "other: Extra inputs are not permitted",
    ]);
    expect(await issues(z.object({ list: z.array(z.string()).min(1) }), { list: [] })).toEqual([
      "list: Array should have at least 1 item",
    ]);
  });

  it("parses zod/mini schemas, which have no methods", async () => {
    const schema = zm.object({
      seats: zm.number().check(zm.maximum(9)),
      cabin: zm._default(zm.string(), "economy"),
    });
    expect(compileParameters(schema).kind).toBe("zod4");
    expect(await compileParameters(schema).parse({ seats: 2 })).toEqual({
      ok: true,
      value: { seats: 2, cabin: "economy" },
    });
    expect(await issues(schema, { seats: 10 })).toEqual(["seats: Input should be less than or equal to 9"]);
  });

  it("keeps a message the schema's author wrote", async () => {
    const schema = z.object({ seats: z.number().max(9, "at most 9 seats per booking") });
    expect(await issues(schema, { seats: 10 })).toEqual(["seats: at most 9 seats per booking"]);
  });

  it("runs async refinements", async () => {
    const schema = z.object({ id: z.string().refine(async (id) => id.startsWith("A"), "unknown id") });
    expect(await issues(schema, { id: "B1" })).toEqual(["id: unknown id"]);
    expect(await compileParameters(schema).parse({ id: "A1" })).toEqual({ ok: true, value: { id: "A1" } });
  });
});

describe("zod 3 wording", () => {
  it("covers nested paths, string checks, unions, literals and extra keys", async () => {
    const schema = z3
      .object({
        items: z3.array(
          z3.object({ sku: z3.string().regex(/^SKU-\d+$/), qty: z3.number().int().positive() }),
        ),
        code: z3.string().startsWith("ab").length(4),
        kind: z3.union([z3.string(), z3.number()]),
        mode: z3.literal("fast"),
        pick: z3.discriminatedUnion("t", [
          z3.object({ t: z3.literal("a") }),
          z3.object({ t: z3.literal("b") }),
        ]),
        nested: z3.object({ deep: z3.string().regex(/^x+$/).optional() }).default({}),
        check: z3.number().refine((n) => n > 10),
      })
      .strict();
    // zod 3's async parse settles union branches last, so the order is not the field order.
    const lines = await issues(schema, {
      items: [
        { sku: "SKU-1", qty: 1 },
        { sku: "sku", qty: 0 },
      ],
      code: "xyz",
      kind: false,
      mode: "slow",
      pick: { t: "c" },
      nested: { deep: "y" },
      check: 1,
      extra: true,
    });
    expect(lines.sort()).toEqual(
      [
        "items.1.sku: String should match pattern '^SKU-\\d+$'",
        "items.1.qty: Input should be greater than 0",
        "code: String should start with 'ab'",
        "code: String should have exactly 4 characters",
        "kind: Input should be a valid string or a valid number",
        "mode: Input should be 'fast'",
        "pick.t: Input should be 'a' or 'b'",
        "nested.deep: String should match pattern '^x+$'",
        "check: Input is not valid",
        "extra: Extra inputs are not permitted",
      ].sort(),
    );
  });

  it("keeps a message the schema's author wrote", async () => {
    expect(await issues(z3.object({ seats: z3.number().max(9, "too many seats") }), { seats: 10 })).toEqual([
      "seats: too many seats",
    ]);
  });
});

describe("without the zod fallback (the browser entry)", () => {
  it("reads zod 4 schemas through their own methods and JSON Schema as written", async () => {
    useZodFallback(undefined);
    try {
      const compiled = compileParameters(book4);
      expect(compiled.kind).toBe("zod4");
      expect(compiled.jsonSchema).toMatchObject({ type: "object", required: ["flight_id", "seats"] });
      expect(await compiled.parse({ flight_id: "LH12", seats: 2 })).toEqual({
        ok: true,
        value: { flight_id: "LH12", seats: 2, cabin: "economy" },
      });
      expect(await issues(book4, { flight_id: "LH12", seats: 10 })).toEqual([
        "seats: Input should be less than or equal to 9",
      ]);
    } finally {
      useZodFallback(compileZodFallback);
    }
  });

  it("imports the JSON Schema validator when a JSON Schema tool is compiled, and checks with it", async () => {
    useJsonSchemaValidator(undefined);
    try {
      const compiled = compileParameters({
        type: "object",
        properties: { seats: { type: "integer", maximum: 9 }, cabin: { type: "string", default: "economy" } },
        required: ["seats"],
      });
      expect(compiled.kind).toBe("json-schema");
      expect(await compiled.parse({ seats: 2 })).toEqual({ ok: true, value: { seats: 2, cabin: "economy" } });
      expect(await compiled.parse({ seats: 12 })).toEqual({
        ok: false,
        issues: ["seats: Input should be less than or equal to 9"],
      });
    } finally {
      useJsonSchemaValidator(validateArguments);
    }
  });

  it("refuses zod 3 and zod/mini schemas with a sentence saying what to use instead", () => {
    useZodFallback(undefined);
    try {
      expect(() => compileParameters(book3)).toThrow(/zod 3 schema.*Node entry.*zod 4\.2\+.*JSON Schema/);
      expect(() => compileParameters(zm.object({ a: zm.string() }))).toThrow(/zod\/mini.*Node entry/);
    } finally {
      useZodFallback(compileZodFallback);
    }
  });
});
