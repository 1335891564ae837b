import type { JsonSchemaObject } from "@patchbay/protocol";
import { safeParseAsync as coreSafeParseAsync, toJSONSchema } from "zod/v4/core";
import { zodToJsonSchema } from "zod-to-json-schema";
import {
  type CompiledParameters,
  isZod3Schema,
  isZod4Schema,
  notObject,
  withoutDialect,
} from "./tool-parameters";
import { fromIssues, type SafeParseResult, type ZodIssueLike, zod4IssueMessage } from "./zod-issues";
import { zodParse } from "./zod-run";
import { zod3IssueMessage } from "./zod3-issues";

/**
 * Compiles zod schemas for the Node entry, which asks it before anything else: zod 4.2+ through
 * their own methods (`~standard.jsonSchema`, and `_zod.run` as zod-run.ts runs it, or
 * `safeParseAsync`), so the user's copy of zod does the work; zod 4 schemas without their own
 * JSON Schema, such as zod/mini ones (`toJSONSchema` and `safeParseAsync` of `zod/v4/core`); and
 * zod 3 schemas (zod-to-json-schema). Only the Node entry installs it, so a browser page loads
 * none of these libraries. `undefined` for anything else.
 */
export function compileZodFallback(parameters: unknown): CompiledParameters | undefined {
  if (isZod4Schema(parameters)) {
    const converter = parameters["~standard"]?.jsonSchema;
    let generated: Record<string, unknown>;
    try {
      generated = converter
        ? converter.input({ target: "draft-2020-12" })
        : (toJSONSchema(parameters as never, { io: "input" }) as Record<string, unknown>);
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
      parse:
        (converter && own && zodParse(parameters, own)) ||
        (async (args) => fromIssues((await parse(args, params)) as SafeParseResult)),
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
  return undefined;
}
