import type { JsonSchemaObject } from "@patchbay/protocol";
import type { ValidationResult, validateArguments } from "./validate-arguments";
import type { SafeParseResult, ZodIssueLike } from "./zod-issues";

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

interface Zod4Like {
  _zod: object;
  "~standard"?: { jsonSchema?: { input(options: { target: string }): Record<string, unknown> } };
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

/** Drops `$schema` from a generated schema: the model is told the bare object schema. */
export function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/**
 * The Node entry's compiler of zod schemas (`zod-fallback.ts`), tried before anything else:
 * zod 3 (needs zod-to-json-schema), zod/mini and zod 4 before 4.2 (need `zod/v4/core`), and zod
 * 4.2+ read through their own methods but checked without a promise where zod can (zod-run.ts).
 * The browser entry installs none, so a page loads neither library. `undefined` for a schema it
 * leaves to `compileParameters`.
 */
export type ZodFallback = (parameters: unknown) => CompiledParameters | undefined;

let zodFallback: ZodFallback | undefined;

/** Installs the compiler of zod schemas (the Node entry does, once); `undefined` removes it. */
export function useZodFallback(fallback: ZodFallback | undefined): void {
  zodFallback = fallback;
}

type JsonSchemaValidator = typeof validateArguments;

// JSON Schema parameters are checked by validate-arguments.ts (@cfworker/json-schema, the
// largest part of a page's bundle). The Node entry installs it up front, so registration checks
// the schema at once; the browser entry leaves it out, and a JSON Schema tool imports it when
// registered (a chunk of its own in a page's bundle), so a page without one never loads it.
let jsonSchemaValidator: JsonSchemaValidator | undefined;

/** Installs the JSON Schema validator to use synchronously (the Node entry does, once). */
export function useJsonSchemaValidator(validator: JsonSchemaValidator | undefined): void {
  jsonSchemaValidator = validator;
}

/**
 * Turns a tool's `parameters` into the JSON Schema told to the model and the function that
 * checks arguments. A zod 4 schema is read through its own methods (`~standard.jsonSchema` and
 * `safeParseAsync`), so the user's copy of zod does the work and no other copy is loaded; defaults
 * and transforms apply. A plain schema is checked by `validateArguments` (loaded on first use
 * where the entry did not install it: then an unreadable schema fails at the first call, not at
 * registration). The installed {@link ZodFallback} is asked first (the Node entry's reads zod 3
 * and zod/mini schemas too). Throws an `Error` saying why when the
 * parameters are not an object schema, or cannot be read here.
 */
export function compileParameters(parameters: unknown): CompiledParameters {
  // The Node entry's compiler comes first: it reads every zod schema (zod-fallback.ts).
  const compiled = zodFallback?.(parameters);
  if (compiled) return compiled;
  const converter = isZod4Schema(parameters) ? parameters["~standard"]?.jsonSchema : undefined;
  if (isZod4Schema(parameters) && converter && parameters.safeParseAsync) {
    let generated: Record<string, unknown>;
    try {
      generated = converter.input({ target: "draft-2020-12" });
    } catch (error) {
      throw new Error(`cannot be described as JSON Schema: ${(error as Error).message}`);
    }
    const jsonSchema = withoutDialect(generated);
    if (jsonSchema.type !== "object") throw new Error(notObject(jsonSchema));
    const parse = parameters.safeParseAsync.bind(parameters);
    return {
      kind: "zod4",
      jsonSchema: jsonSchema as JsonSchemaObject,
      parse: async (args) => {
        const result = await parse(args);
        if (result.success) return { ok: true, value: result.data };
        // Only a refused call needs the wording (zod-issues.ts, a chunk of its own in a page's
        // bundle): it parses once more with the error map, which sees each issue's input.
        const { fromIssues, zod4IssueMessage } = await import("./zod-issues");
        return fromIssues(await parse(args, { error: zod4IssueMessage }));
      },
    };
  }
  if (isZod4Schema(parameters) || isZod3Schema(parameters)) {
    const what = isZod3Schema(parameters) ? "a zod 3 schema" : "zod/mini or zod before 4.2";
    throw new Error(`is ${what}, read by the Node entry only; in a browser use zod 4.2+ or JSON Schema`);
  }
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
    throw new Error("must be a zod object schema or a JSON Schema object");
  }
  const jsonSchema = parameters as Record<string, unknown>;
  if (jsonSchema.type !== "object") throw new Error(notObject(jsonSchema));
  const validator = jsonSchemaValidator;
  if (validator) {
    // Compile once now, so a schema the validator cannot read fails at registration.
    validator(jsonSchema, {});
    return {
      kind: "json-schema",
      jsonSchema: jsonSchema as JsonSchemaObject,
      parse: (args) => validator(jsonSchema, args),
    };
  }
  // Starts loading now, so the validator is there by the time the model calls the tool.
  const loading = import("./validate-arguments");
  loading.catch(() => {});
  return {
    kind: "json-schema",
    jsonSchema: jsonSchema as JsonSchemaObject,
    parse: async (args) => (await loading).validateArguments(jsonSchema, args),
  };
}

/** The reason a schema that does not describe an object is refused. */
export function notObject(schema: Record<string, unknown>): string {
  const type = schema.type === undefined ? "no type" : `type ${JSON.stringify(schema.type)}`;
  return `must describe an object (type "object"), got a schema with ${type}`;
}
