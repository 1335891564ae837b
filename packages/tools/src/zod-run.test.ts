import { describe, expect, it } from "vitest";
import { z } from "zod";
import { compileParameters } from "./tool-parameters";
import { compileZodFallback } from "./zod-fallback";
import { zodParse } from "./zod-run";

// The Node entry's check of zod 4 schemas (through its zod compiler), against the plain one a
// page uses (`compileParameters` with no compiler installed: safeParseAsync).
describe("zodParse (the Node entry's zod 4 check)", () => {
  const node = (schema: z.ZodType) => compileZodFallback(schema)!;
  const both = async (schema: z.ZodType, args: Record<string, unknown>) => ({
    fast: await node(schema).parse(args),
    plain: await compileParameters(schema).parse(args),
  });

  it("is what the Node entry's compiler uses for zod 4.2+, with the schema's own JSON Schema", () => {
    const schema = z.object({ seats: z.number().max(9) });
    expect(node(schema).jsonSchema).toEqual(compileParameters(schema).jsonSchema);
    expect(node(schema).parse({ seats: 1 })).toEqual({ ok: true, value: { seats: 1 } });
  });

  it("parses without a promise unless a part of the schema is asynchronous, running each part once", async () => {
    const sync = node(z.object({ seats: z.number().max(9) }));
    expect(sync.parse({ seats: 2 })).toEqual({ ok: true, value: { seats: 2 } });
    expect(await sync.parse({ seats: 10 })).toEqual({
      ok: false,
      issues: ["seats: Input should be less than or equal to 9"],
    });
    let checks = 0;
    const asynchronous = node(
      z.object({
        id: z.string().refine(async (id) => {
          checks++;
          return id.startsWith("A");
        }),
      }),
    );
    const first = asynchronous.parse({ id: "A1" });
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toEqual({ ok: true, value: { id: "A1" } });
    expect(checks).toBe(1);
    expect(await asynchronous.parse({ id: "B2" })).toMatchObject({ ok: false });
    expect(checks).toBe(3); // the refusal parses once more for its wording
  });

  it("answers what the plain check answers: values with defaults and transforms, and the same wording", async () => {
    const schema = z.object({
      city: z.string().min(2),
      days: z.number().int().default(3),
      unit: z.enum(["c", "f"]).transform((u) => u.toUpperCase()),
      when: z.string().refine(async (w) => w !== "never", "not a day"),
    });
    for (const args of [
      { city: "Berlin", unit: "c", when: "today" },
      { city: "B", days: 1.5, unit: "k", when: "never" },
      { unit: "f", when: "never", extra: true },
      {},
    ]) {
      const { fast, plain } = await both(schema, args);
      expect(fast).toEqual(plain);
    }
    expect((await both(schema, { city: "Berlin", unit: "c", when: "today" })).fast).toEqual({
      ok: true,
      value: { city: "Berlin", days: 3, unit: "C", when: "today" },
    });
  });

  it("is not used for a schema without zod's run (it answers undefined)", () => {
    expect(zodParse({ _zod: {} }, async () => ({}))).toBeUndefined();
  });
});
