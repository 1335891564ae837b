import type { JsonSchemaObject } from "@patchbay/protocol";
import { safeParseAsync as coreSafeParseAsync, toJSONSchema } from "zod/v4/core";
import { zodToJsonSchema } from "zod-to-json-schema";
import { type ValidationResult, validateArguments } from "./validate-arguments";
import { type ZodIssueLike, zod3IssueMessage, zod4IssueMessage, zodIssueLines } from "./zod-issues";

/**
 * Any schema that states its output type the Standard Schema way, as zod 3.24+ and zod 4 do; it
 * is how a tool's argument type is inferred from its `parameters`.
 *
 * @example
 * ```ts
 * type Args = typeof schema extends TypedSchema<infer T> ? T : never;
 * ```
 */
export interface TypedSchema<TOutput> {
  readonly "~standard": { readonly types?: { readonly output: TOutput } | undefined };
}

/**
 * What a tool's `parameters` may be: a zod 3 or zod 4 object schema, or a plain JSON Schema
 * object (`{ type: "object", ... }`).
 *
 * @example
 * ```ts
 * const p: ToolParameters = z.object({ city: z.string() });
 * const q: ToolParameters = { type: "object", properties: { city: { type: "string" } } };
 * ```
 */
export type ToolParameters<TArgs = Record<string, unknown>> = TypedSchema<TArgs> | JsonSchemaObject;

type SafeParseResult =
  | { success: true; data: unknown }
  | { success: false; error: { issues: ZodIssueLike[] } };

interface Zod4Like {
  _zod: object;
  safeParseAsync?: (
    value: unknown,
    params?: { error?: (issue: ZodIssueLike) => string | undefined },
  ) => Promise<SafeParseResult>;
}

interface Zod3Like {
  _def: object;
  safeParseAsync: (
    value: unknown,
    params?: {
      errorMap?: (issue: ZodIssueLike, ctx: { data: unknown; defaultError: string }) => { message: string };
    },
  ) => Promise<SafeParseResult>;
}

/**
 * Whether a value is a zod 4 schema (it has `_zod`; zod 4 schemas also have `_def`, so this is
 * checked first).
 *
 * @example
 * ```ts
 * isZod4Schema(z.object({})); // true with `import { z } from "zod"` (v4)
 * ```
 */
export function isZod4Schema(value: unknown): value is Zod4Like {
  return (
    typeof value === "object" && value !== null && typeof (value as { _zod?: unknown })._zod === "object"
  );
}

/**
 * Whether a value is a zod 3 schema (`_def` without `_zod`).
 *
 * @example
 * ```ts
 * isZod3Schema(z3.object({})); // true with `import { z as z3 } from "zod/v3"`
 * ```
 */
export function isZod3Schema(value: unknown): value is Zod3Like {
  return (
    typeof value === "object" &&
    value !== null &&
    !isZod4Schema(value) &&
    typeof (value as { _def?: unknown })._def === "object" &&
    typeof (value as { safeParseAsync?: unknown }).safeParseAsync === "function"
  );
}

/** A tool's parameters made ready to run: the JSON Schema told to the model and a checker. */
export interface CompiledParameters {
  kind: "zod4" | "zod3" | "json-schema";
  jsonSchema: JsonSchemaObject;
  parse(args: Record<string, unknown>): Promise<ValidationResult<unknown>> | ValidationResult<unknown>;
}

function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

function fromIssues(result: SafeParseResult): ValidationResult<unknown> {
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, issues: zodIssueLines(result.error.issues) };
}

/**
 * Turns a tool's `parameters` into the JSON Schema told to the model (zod-to-json-schema for zod
 * 3, `toJSONSchema` for zod 4, a plain schema as written) and the function that checks arguments
 * (the zod schema itself, so defaults and transforms apply; `validateArguments` for a plain
 * schema). Throws an `Error` saying why when the parameters are not an object schema.
 *
 * @example
 * ```ts
 * const compiled = compileParameters(z.object({ city: z.string() }));
 * compiled.jsonSchema; // { type: "object", properties: { city: { type: "string" } }, required: ["city"], ... }
 * await compiled.parse({ city: 1 }); // { ok: false, issues: ["city: Input should be a valid string"] }
 * ```
 */
export function compileParameters(parameters: unknown): CompiledParameters {
  if (isZod4Schema(parameters)) {
    let generated: Record<string, unknown>;
    try {
      generated = toJSONSchema(parameters as never, { io: "input" }) as Record<string, unknown>;
    } catch (error) {
      throw new Error(`cannot be described as JSON Schema: ${(error as Error).message}`);
    }
    const jsonSchema = withoutDialect(generated);
    if (jsonSchema.type !== "object") throw new Error(notObject(jsonSchema));
    const params = { error: zod4IssueMessage };
    // The schema's own method keeps the user's copy of zod in charge; zod/mini schemas have
    // none, and the core function parses them.
    const own = parameters.safeParseAsync?.bind(parameters);
    const parse =
      own ??
      ((value: unknown, p: typeof params) => coreSafeParseAsync(parameters as never, value, p as never));
    return {
      kind: "zod4",
      jsonSchema: jsonSchema as JsonSchemaObject,
      parse: async (args) => fromIssues((await parse(args, params)) as SafeParseResult),
    };
  }
  if (isZod3Schema(parameters)) {
    const jsonSchema = withoutDialect(zodToJsonSchema(parameters as never) as Record<string, unknown>);
    if (jsonSchema.type !== "object") throw new Error(notObject(jsonSchema));
    const params = {
      errorMap: (issue: ZodIssueLike, ctx: { data: unknown; defaultError: string }) => ({
        message: zod3IssueMessage(issue, ctx.data, parameters) ?? ctx.defaultError,
      }),
    };
    return {
      kind: "zod3",
      jsonSchema: jsonSchema as JsonSchemaObject,
      parse: async (args) => fromIssues(await parameters.safeParseAsync(args, params)),
    };
  }
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
    throw new Error("must be a zod object schema or a JSON Schema object");
  }
  const jsonSchema = parameters as Record<string, unknown>;
  if (jsonSchema.type !== "object") throw new Error(notObject(jsonSchema));
  // Compile once now, so a schema the validator cannot read fails at registration.
  validateArguments(jsonSchema, {});
  return {
    kind: "json-schema",
    jsonSchema: jsonSchema as JsonSchemaObject,
    parse: (args) => validateArguments(jsonSchema, args),
  };
}

function notObject(schema: Record<string, unknown>): string {
  const type = schema.type === undefined ? "no type" : `type ${JSON.stringify(schema.type)}`;
  return `must describe an object (type "object"), got a schema with ${type}`;
}
