import { ToolSpecSchema } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { z as z3 } from "zod/v3";
import { ToolDefinitionError } from "./errors";
import { toolSpecOf } from "./tool-definition";
import { useJsonSchemaValidator, useZodFallback } from "./tool-parameters";
import { Tools } from "./tools";
import { validateArguments } from "./validate-arguments";
import { compileZodFallback } from "./zod-fallback";

// What the Node entry (index.ts) does, so zod 3 schemas are read here too.
useZodFallback(compileZodFallback);
useJsonSchemaValidator(validateArguments);

const run = () => "ok";

function registrationError(fn: () => unknown): ToolDefinitionError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ToolDefinitionError);
    return error as ToolDefinitionError;
  }
  throw new Error("expected a ToolDefinitionError");
}

describe("Tools", () => {
  it("registers in a chain and lists protocol specs with generated JSON Schema", () => {
    const tools = new Tools()
      .register({
        name: "book_flight",
        description: "Book a flight for the caller",
        parameters: z.object({
          flight_id: z.string().regex(/^[A-Z]{2}\d{1,4}$/),
          seats: z.number().int().min(1).max(9),
          cabin: z.enum(["economy", "business", "first"]).default("economy"),
        }),
        approval: { title: "Book flight {flight_id}?" },
        interruptible: true,
        timeoutMs: 60_000,
        concurrency: 2,
        run,
      })
      .register({
        name: "ping",
        description: "Answers pong",
        displayTitle: "Pinging",
        idleTimeoutMs: 500,
        run,
      });

    expect(tools.size).toBe(2);
    expect(tools.has("ping")).toBe(true);
    expect(tools.has("pong")).toBe(false);
    expect(tools.names()).toEqual(["book_flight", "ping"]);
    const [book, ping] = tools.list();
    expect(ToolSpecSchema.parse(book)).toEqual(book);
    expect(book).toMatchObject({
      name: "book_flight",
      approval: { title: "Book flight {flight_id}?" },
      interruptible: true,
      timeoutMs: 60_000,
    });
    expect(book?.parameters).toMatchObject({
      type: "object",
      properties: {
        flight_id: { type: "string", pattern: "^[A-Z]{2}\\d{1,4}$" },
        seats: { type: "integer", minimum: 1, maximum: 9 },
        cabin: { type: "string", enum: ["economy", "business", "first"], default: "economy" },
      },
      required: ["flight_id", "seats"],
    });
    expect(book?.parameters).not.toHaveProperty("$schema");
    expect(ping).toEqual({
      name: "ping",
      description: "Answers pong",
      parameters: { type: "object", properties: {} },
      displayTitle: "Pinging",
      idleTimeoutMs: 500,
    });
  });

  it("generates the same schema from a zod 3 object", () => {
    const spec = toolSpecOf({
      name: "get_weather",
      description: "Current weather in a city",
      parameters: z3.object({ city: z3.string().describe("City name"), days: z3.number().int().default(1) }),
      run,
    });
    expect(spec.parameters).toMatchObject({
      type: "object",
      properties: {
        city: { type: "string", description: "City name" },
        days: { type: "integer", default: 1 },
      },
      required: ["city"],
    });
    expect(spec.parameters).not.toHaveProperty("$schema");
  });

  it("keeps a plain JSON Schema as written", () => {
    const parameters = {
      type: "object" as const,
      properties: { order_id: { type: "string", description: "the order number" } },
      required: ["order_id"],
    };
    const tools = new Tools().register<{ order_id: string }>({
      name: "lookup_order",
      description: "Look up an order by its number",
      parameters,
      run: ({ order_id }) => order_id,
    });
    expect(tools.list()[0]?.parameters).toEqual(parameters);
    expect(tools.get("lookup_order")?.parameters).toBe(parameters);
  });

  it("refuses a duplicate name", () => {
    const tools = new Tools().register({ name: "ping", description: "x", run });
    const error = registrationError(() => tools.register({ name: "ping", description: "y", run }));
    expect(error.code).toBe("invalid_tool_definition");
    expect(error.field).toBe("name");
    expect(error.message).toContain("already registered");
    expect(tools.size).toBe(1);
  });

  it.each([
    ["", "is required"],
    ["has space", "must be 1 to 64 letters"],
    ["x".repeat(65), "must be 1 to 64 letters"],
  ])("refuses the name %j", (name, message) => {
    const error = registrationError(() => new Tools().register({ name, description: "d", run }));
    expect(error.field).toBe("name");
    expect(error.message).toContain(message);
  });

  it("refuses a missing or blank description", () => {
    expect(registrationError(() => new Tools().register({ name: "a", run } as never)).message).toBe(
      'tool "a": description: is required',
    );
    expect(registrationError(() => new Tools().register({ name: "a", description: "  ", run })).field).toBe(
      "description",
    );
  });

  it("refuses parameters that are not an object schema", () => {
    const fromZod = registrationError(() =>
      new Tools().register({ name: "a", description: "d", parameters: z.string() as never, run }),
    );
    expect(fromZod.field).toBe("parameters");
    expect(fromZod.message).toContain(
      'must describe an object (type "object"), got a schema with type "string"',
    );
    const fromZod3 = registrationError(() =>
      new Tools().register({ name: "a", description: "d", parameters: z3.array(z3.string()) as never, run }),
    );
    expect(fromZod3.message).toContain('type "array"');
    const fromJson = registrationError(() =>
      new Tools().register({ name: "a", description: "d", parameters: { properties: {} } as never, run }),
    );
    expect(fromJson.message).toContain("no type");
    const notSchema = registrationError(() =>
      new Tools().register({ name: "a", description: "d", parameters: "object" as never, run }),
    );
    expect(notSchema.message).toContain("must be a zod object schema or a JSON Schema object");
  });

  it("refuses a zod schema that has no JSON Schema form", () => {
    const error = registrationError(() =>
      new Tools().register({ name: "a", description: "d", parameters: z.object({ when: z.date() }), run }),
    );
    expect(error.message).toContain("cannot be described as JSON Schema");
  });

  it("refuses a run that is not a function and bad limits", () => {
    expect(
      registrationError(() => new Tools().register({ name: "a", description: "d" } as never)).field,
    ).toBe("run");
    const timeout = registrationError(() =>
      new Tools().register({ name: "a", description: "d", timeoutMs: 0, run }),
    );
    expect(timeout.message).toBe('tool "a": timeoutMs: must be a positive integer, got 0');
    expect(
      registrationError(() => new Tools().register({ name: "a", description: "d", concurrency: 1.5, run }))
        .field,
    ).toBe("concurrency");
  });

  it("checks approval placeholders and the reason argument against the arguments", () => {
    const parameters = z.object({ flight_id: z.string(), reason: z.string() });
    const placeholder = registrationError(() =>
      new Tools().register({
        name: "a",
        description: "d",
        parameters,
        approval: { title: "Book {flight}?" },
        run,
      }),
    );
    expect(placeholder.field).toBe("approval.title");
    expect(placeholder.message).toContain("{flight} is not one of the tool's arguments");
    const reason = registrationError(() =>
      new Tools().register({
        name: "a",
        description: "d",
        parameters,
        approval: { title: "Book {flight_id}?", reasonArgument: "why" },
        run,
      }),
    );
    expect(reason.field).toBe("approval.reasonArgument");
    const empty = registrationError(() =>
      new Tools().register({ name: "a", description: "d", parameters, approval: { title: "" }, run }),
    );
    expect(empty.field).toBe("approval.title");
  });

  it("unregisters", () => {
    const tools = new Tools([{ name: "ping", description: "d", run }]);
    expect(tools.unregister("ping")).toBe(true);
    expect(tools.unregister("ping")).toBe(false);
    expect(tools.size).toBe(0);
    expect(tools.get("ping")).toBeUndefined();
  });

  it("infers argument types from a zod schema", () => {
    new Tools().register({
      name: "typed",
      description: "d",
      parameters: z.object({ seats: z.number() }),
      run: (args) => {
        const seats: number = args.seats;
        // @ts-expect-error seats is a number, not a string
        const wrong: string = args.seats;
        return [seats, wrong];
      },
    });
  });
});
